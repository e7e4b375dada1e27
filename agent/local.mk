# agent/: nopfs-agent, one per node per job. The top folder holds the
# daemon's life (options, job, phases, plans, reports, the PMIx bootstrap
# and the team of a job's agents) and where samples' bytes come from (source:
# tiers, peers, the PFS); each subfolder a part of it. The probe and
# the data plane form libnopfs_agent, which their tests also link.

noinst_LTLIBRARIES += agent/libnopfs_agent.la
agent_libnopfs_agent_la_SOURCES =
agent_libnopfs_agent_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
agent_libnopfs_agent_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(UCX_CFLAGS) $(CRYPTO_CFLAGS)
agent_libnopfs_agent_la_LIBADD = lib/libnopfs_core.la $(JANSSON_LIBS) $(UCX_LIBS) $(CRYPTO_LIBS) -lm

bin_PROGRAMS += nopfs-agent
nopfs_agent_SOURCES = \
	agent/agent.h \
	agent/bootstrap.c \
	agent/bootstrap.h \
	agent/epochs.c \
	agent/epochs.h \
	agent/job.c \
	agent/job.h \
	agent/job_report.c \
	agent/keep.c \
	agent/keep.h \
	agent/lock.c \
	agent/lock.h \
	agent/main.c \
	agent/node_report.c \
	agent/notices.c \
	agent/notices.h \
	agent/options.c \
	agent/options.h \
	agent/pfs.c \
	agent/pfs.h \
	agent/replan.c \
	agent/service.c \
	agent/source.c \
	agent/source.h \
	agent/stats.h \
	agent/team.c \
	agent/team.h \
	agent/val.c \
	agent/val.h
nopfs_agent_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
nopfs_agent_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PMIX_CFLAGS) $(UCX_CFLAGS) $(IBVERBS_CFLAGS)
nopfs_agent_LDADD = \
	agent/libnopfs_agent.la \
	lib/report/libnopfs_report.la \
	lib/libnopfs_core.la \
	$(JANSSON_LIBS) \
	$(PMIX_LIBS) \
	$(UCX_LIBS) \
	$(IBVERBS_LIBS) \
	-lm
