# agent/peer: the data plane between a job's agents (UCX): records, one-sided
# reads of RAM tiers, requests and answers, notices, their authentication.

agent_libnopfs_agent_la_SOURCES += \
	agent/peer/peer.c \
	agent/peer/peer.h \
	agent/peer/peer_auth.c \
	agent/peer/peer_fetch.c \
	agent/peer/peer_get.c \
	agent/peer/peer_internal.h \
	agent/peer/peer_node.c \
	agent/peer/peer_notice.c \
	agent/peer/peer_op.c \
	agent/peer/peer_pending.c \
	agent/peer/peer_record.c \
	agent/peer/peer_regions.c \
	agent/peer/peer_pipe.c \
	agent/peer/peer_pipe.h \
	agent/peer/peer_serve.c \
	agent/peer/peer_stream.c
