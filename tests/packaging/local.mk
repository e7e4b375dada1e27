# tests/packaging: make install and uninstall, the Debian packages and the
# RPM build from the source distribution.

TESTS += tests/packaging/test_install.sh
EXTRA_DIST += tests/packaging/test_install.sh
