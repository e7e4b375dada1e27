# spank/: spank_nopfs.so, the SPANK plugin (loaded by srun, sbatch, salloc,
# slurmstepd and slurmd). It compiles the few lib files it needs itself and
# exports only Slurm's symbols.

spankdir = $(SPANK_PLUGIN_DIR)
spank_LTLIBRARIES = spank/spank_nopfs.la
spank_spank_nopfs_la_SOURCES = \
	spank/spank_nopfs.c \
	spank/plugin.h \
	spank/config.c \
	spank/user_options.c \
	spank/launch.c \
	spank/launch.h \
	spank/companion.c \
	spank/companion.h \
	spank/tasks.c \
	spank/agents.c \
	spank/report_wait.c \
	spank/prolog.c \
	spank/epilog.c \
	spank/cache_limits.c \
	spank/cache_limits.h \
	spank/remove_tree.c \
	spank/remove_tree.h \
	lib/plan/layout.c \
	lib/plan/layout.h \
	lib/plan/tierspec.c \
	lib/plan/tierspec.h \
	lib/common/units.c \
	lib/common/units.h \
	lib/common/log.c \
	lib/common/log.h \
	lib/common/status.c \
	lib/common/status.h \
	lib/common/fdio.c \
	lib/common/fdio.h \
	lib/common/atomic_file.c \
	lib/common/clock.h \
	lib/common/atomic_file.h \
	lib/common/private.c \
	lib/common/private.h \
	lib/common/token.c \
	lib/common/token.h
spank_spank_nopfs_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DNOPFS_BINDIR='"$(bindir)"' \
	-DNOPFS_PRELOAD='"$(libdir)/libnopfs_preload.so"'
spank_spank_nopfs_la_LDFLAGS = $(AM_LDFLAGS) \
	-module \
	-avoid-version \
	-shared \
	-Wl,--version-script=$(srcdir)/spank/spank_nopfs.map \
	-Wl,--no-undefined-version
EXTRA_DIST += spank/spank_nopfs.map
