# lib/common: status codes, the log, CRC32C, units, clocks, command-line option
# tables, directories, whole-file reads, whole-buffer reads and writes,
# atomic file replacement, fork-join, pacing work against a shared server,
# private places in shared directories, the job's token.

lib_libnopfs_core_la_SOURCES += \
	lib/common/status.c \
	lib/common/status.h \
	lib/common/log.c \
	lib/common/log.h \
	lib/common/readall.c \
	lib/common/readall.h \
	lib/common/fdio.c \
	lib/common/fdio.h \
	lib/common/atomic_file.c \
	lib/common/cancel.c \
	lib/common/cancel.h \
	lib/common/atomic_file.h \
	lib/common/clock.h \
	lib/common/crc32c.c \
	lib/common/crc32c.h \
	lib/common/dirs.c \
	lib/common/dirs.h \
	lib/common/optable.c \
	lib/common/optable.h \
	lib/common/parallel.c \
	lib/common/parallel.h \
	lib/common/pace.c \
	lib/common/pace.h \
	lib/common/private.c \
	lib/common/private.h \
	lib/common/token.c \
	lib/common/token.h \
	lib/common/units.c \
	lib/common/units.h
