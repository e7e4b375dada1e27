# tools/report: nopfs-report, which checks, merges and prints job reports.

bin_PROGRAMS += nopfs-report
nopfs_report_SOURCES = \
	tools/report/main.c \
	tools/report/tool.h \
	tools/report/compare.c \
	tools/report/plot.c \
	tools/report/live.c \
	tools/ask.c \
	tools/ask.h \
	lib/task/channel.c \
	lib/task/channel.h
nopfs_report_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
nopfs_report_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
nopfs_report_LDADD = lib/report/libnopfs_report.la lib/libnopfs_core.la $(JANSSON_LIBS)
