# lib/report: the job report: nodes' reports checked and merged, printed and
# written (nopfs-report, node 0's agent, the plugin's summary).

noinst_LTLIBRARIES += lib/report/libnopfs_report.la
lib_report_libnopfs_report_la_SOURCES = \
	lib/report/report.h \
	lib/report/report_internal.h \
	lib/report/report_keys.c \
	lib/report/report_merge.c \
	lib/report/report_print.c \
	lib/report/report_write.c
lib_report_libnopfs_report_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
lib_report_libnopfs_report_la_LIBADD = $(JANSSON_LIBS)
