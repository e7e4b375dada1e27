# agent/tier: the node's storage tiers (RAM arena, SSD files).

nopfs_agent_SOURCES += \
	agent/tier/limits.c \
	agent/tier/limits.h \
	agent/tier/tier.c \
	agent/tier/tier.h
