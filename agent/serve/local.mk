# agent/serve: serving the node's tasks: the socket server and the watch of
# their opens of staged copies.

nopfs_agent_SOURCES += \
	agent/serve/server.c \
	agent/serve/server.h \
	agent/serve/watch.c \
	agent/serve/watch.h
