# lib/: the libraries. libnopfs_core (not installed) is what the agent, the
# plugin's helpers and the tools share: lib/common, lib/catalog, lib/plan and
# the task contract's wire and runtime files. libnopfs (the C API) and
# libnopfs_preload (the interposer) are loaded into training processes; their
# sources are in lib/task/local.mk.

noinst_LTLIBRARIES += lib/libnopfs_core.la
lib_libnopfs_core_la_SOURCES =
lib_libnopfs_core_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
lib_libnopfs_core_la_LIBADD = $(JANSSON_LIBS) -lm
