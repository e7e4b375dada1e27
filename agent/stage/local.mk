# agent/stage: each local rank's next samples staged ahead of it, the
# prefetchers that fill the tiers, and the diagnosis of ranks' streams.

nopfs_agent_SOURCES += \
	agent/stage/prefetch.c \
	agent/stage/prefetch.h \
	agent/stage/stage.c \
	agent/stage/stage.h \
	agent/stage/stage_copy.c \
	agent/stage/stage_internal.h \
	agent/stage/stage_ring.c \
	agent/stage/stage_ring.h \
	agent/stage/stream_diag.c \
	agent/stage/stream_diag.h \
	agent/stage/stream_sync.c \
	agent/stage/stream_sync.h
