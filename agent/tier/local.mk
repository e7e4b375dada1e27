# agent/tier: the node's storage tiers (RAM arena, SSD files).

# limits.c is in the library: the probe sizes its RAM pools by the memory limit
agent_libnopfs_agent_la_SOURCES += \
	agent/tier/limits.c \
	agent/tier/limits.h
nopfs_agent_SOURCES += \
	agent/tier/tier.c \
	agent/tier/tier.h
