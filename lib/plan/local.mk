# lib/plan: who reads what when (sampler, layout, access), the performance
# model, tier specifications and the placement.

lib_libnopfs_core_la_SOURCES += \
	lib/plan/mt19937.c \
	lib/plan/mt19937.h \
	lib/plan/sampler.c \
	lib/plan/sampler.h \
	lib/plan/access.c \
	lib/plan/access.h \
	lib/plan/layout.c \
	lib/plan/layout.h \
	lib/plan/model.c \
	lib/plan/model.h \
	lib/plan/placement.c \
	lib/plan/placement.h \
	lib/plan/placement_candidates.c \
	lib/plan/placement_greedy.c \
	lib/plan/placement_internal.h \
	lib/plan/placement_owner.c \
	lib/plan/placement_room.c \
	lib/plan/synthetic.c \
	lib/plan/synthetic.h \
	lib/plan/tierspec.c \
	lib/plan/tierspec.h
