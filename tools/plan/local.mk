# tools/plan: nopfs-plan, the planner command.

bin_PROGRAMS += nopfs-plan
nopfs_plan_SOURCES = \
	tools/plan/plan.h \
	tools/plan/main.c \
	tools/plan/print.c
nopfs_plan_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
nopfs_plan_LDADD = lib/libnopfs_core.la $(JANSSON_LIBS)
