# debian/: the Debian packages nopfs and nopfs-dev (dpkg-buildpackage -b),
# built by tests/packaging/test_deb.sh.

EXTRA_DIST += \
	debian/changelog \
	debian/control \
	debian/copyright \
	debian/nopfs.install \
	debian/nopfs-dev.install \
	debian/not-installed \
	debian/rules \
	debian/source/format
