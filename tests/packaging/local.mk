# tests/packaging: make install and uninstall, the Debian packages
# (dpkg-buildpackage, lintian) and the RPMs (rpmbuild) from the source
# distribution. The two package builds take about a minute each: one after
# the other.

PACKAGING_TESTS = \
	tests/packaging/test_install.sh \
	tests/packaging/test_deb.sh \
	tests/packaging/test_rpm.sh
TESTS += $(PACKAGING_TESTS)
EXTRA_DIST += $(PACKAGING_TESTS)
tests/packaging/test_rpm.log: tests/packaging/test_deb.log
