# agent/probe: the agent's measurement of its node's tiers and of the PFS
# (cached between jobs), and the RDMA devices it reports.

agent_libnopfs_agent_la_SOURCES += \
	agent/probe/probe.c \
	agent/probe/probe.h \
	agent/probe/probe_cache.c \
	agent/probe/probe_closer.c \
	agent/probe/probe_internal.h \
	agent/probe/probe_json.c \
	agent/probe/probe_pfs.c \
	agent/probe/probe_ram.c \
	agent/probe/probe_ssd.c \
	agent/probe/probe_workers.c
nopfs_agent_SOURCES += \
	agent/probe/rdma.c \
	agent/probe/rdma.h
