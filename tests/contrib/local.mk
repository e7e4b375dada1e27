# tests/contrib: the emulated PFS (nopfs-pfs) mounted and measured.

TESTS += tests/contrib/check_pfs_emulator.sh
EXTRA_DIST += tests/contrib/check_pfs_emulator.sh
