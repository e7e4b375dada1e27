# tools/stage: nopfs-stage, the command of a step that fills the nodes' caches ahead.

bin_PROGRAMS += nopfs-stage
nopfs_stage_SOURCES = \
	tools/stage/main.c \
	tools/ask.c \
	tools/ask.h \
	lib/task/channel.c \
	lib/task/channel.h
nopfs_stage_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
nopfs_stage_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
nopfs_stage_LDADD = lib/libnopfs_core.la $(JANSSON_LIBS)
