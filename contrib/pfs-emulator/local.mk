# contrib/pfs-emulator: nopfs-pfs, an emulated, contended parallel
# filesystem (FUSE) for the test cluster and the benchmarks. It compiles in
# the few lib/common files it uses.

noinst_PROGRAMS += contrib/pfs-emulator/nopfs-pfs
contrib_pfs_emulator_nopfs_pfs_SOURCES = \
	contrib/pfs-emulator/clients.c \
	contrib/pfs-emulator/files.c \
	contrib/pfs-emulator/main.c \
	contrib/pfs-emulator/mount.c \
	contrib/pfs-emulator/paths.c \
	contrib/pfs-emulator/pfs.h \
	contrib/pfs-emulator/tree.c \
	lib/common/atomic_file.c \
	lib/common/clock.h \
	lib/common/atomic_file.h \
	lib/common/fdio.c \
	lib/common/fdio.h \
	lib/common/status.c \
	lib/common/status.h
contrib_pfs_emulator_nopfs_pfs_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
contrib_pfs_emulator_nopfs_pfs_LDADD = $(FUSE3_LIBS) -lm
