# lib/task: everything loaded into a training process: the task contract
# (runtime), the wire protocol and its channel, the C API (libnopfs, with
# its zero-copy ring) and the interposer (libnopfs_preload, LD_PRELOAD).

lib_libnopfs_core_la_SOURCES += \
	lib/task/wire.c \
	lib/task/wire.h \
	lib/task/runtime.c \
	lib/task/runtime.h

lib_LTLIBRARIES += \
	lib/libnopfs.la \
	lib/libnopfs_preload.la
lib_libnopfs_la_SOURCES = \
	lib/task/client.c \
	lib/task/client_ring.c \
	lib/task/client_ring.h \
	lib/task/ring.h \
	lib/task/nopfs.h \
	lib/task/channel.c \
	lib/task/channel.h \
	lib/task/stage_dir.c \
	lib/task/stage_dir.h \
	lib/task/stage_index.c \
	lib/task/stage_index.h \
	lib/task/wire.c \
	lib/task/wire.h \
	lib/task/runtime.c \
	lib/task/runtime.h \
	lib/common/status.c \
	lib/common/status.h \
	lib/common/private.c \
	lib/common/private.h \
	lib/common/log.c \
	lib/common/log.h
lib_libnopfs_la_LDFLAGS = $(AM_LDFLAGS) \
	-version-info 0:0:0 \
	-export-symbols-regex '^(nopfs_client_.*|nopfs_status_string)$$'
lib_libnopfs_preload_la_SOURCES = \
	lib/task/preload.c \
	lib/task/preload.h \
	lib/task/preload_real.c \
	lib/task/preload_real.h \
	lib/task/preload_serve.c \
	lib/task/preload_meta.c \
	lib/catalog/meta.c \
	lib/catalog/meta.h \
	lib/task/stage_dir.c \
	lib/task/stage_dir.h \
	lib/task/channel.c \
	lib/task/channel.h \
	lib/task/wire.c \
	lib/task/wire.h \
	lib/task/runtime.c \
	lib/task/runtime.h \
	lib/common/private.c \
	lib/common/private.h \
	lib/common/status.c \
	lib/common/status.h
# open(NULL) must fail with EFAULT as the real one does, whatever glibc's
# nonnull declarations let the compiler assume; stat(NULL) and the others
# likewise check their arguments before looking at them.
lib_libnopfs_preload_la_CFLAGS = $(AM_CFLAGS) -fno-delete-null-pointer-checks -Wno-nonnull-compare
lib_libnopfs_preload_la_LDFLAGS = $(AM_LDFLAGS) \
	-module \
	-avoid-version \
	-export-symbols-regex '^(open|open64|openat|openat64|__open_2|__open64_2|__openat_2|__openat64_2|fopen|fopen64|freopen|freopen64|opendir|fdopendir|readdir|readdir64|readdir_r|readdir64_r|rewinddir|seekdir|telldir|dirfd|closedir|scandir|scandir64|stat|stat64|lstat|lstat64|fstatat|fstatat64|statx|access|faccessat|realpath|readlink|readlinkat)$$'
nopfsincludedir = $(includedir)/nopfs
nopfsinclude_HEADERS = \
	lib/task/nopfs.h \
	lib/common/status.h

# pkg-config --cflags --libs nopfs: the C API
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = nopfs.pc
EXTRA_DIST += nopfs.pc.in
