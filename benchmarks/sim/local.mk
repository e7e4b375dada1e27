# benchmarks/sim: nopfs-sim, the NoPFS paper's I/O policy simulator (its
# section 6) on lib's model and placements, and what-if runs.

NOPFS_SIM_CORE = \
	benchmarks/sim/sim.h \
	benchmarks/sim/sim_cache.c \
	benchmarks/sim/sim_checks.c \
	benchmarks/sim/sim_commands.h \
	benchmarks/sim/sim_config.c \
	benchmarks/sim/sim_config.h \
	benchmarks/sim/sim_dataset.c \
	benchmarks/sim/sim_engine.c \
	benchmarks/sim/sim_engine.h \
	benchmarks/sim/sim_frequency.c \
	benchmarks/sim/sim_frequency.h \
	benchmarks/sim/sim_metadata.c \
	benchmarks/sim/sim_output.c \
	benchmarks/sim/sim_output.h \
	benchmarks/sim/sim_paper.c \
	benchmarks/sim/sim_pfs.c \
	benchmarks/sim/sim_plot.c \
	benchmarks/sim/sim_policy_basic.c \
	benchmarks/sim/sim_policy_deepio.c \
	benchmarks/sim/sim_policy_lbann.c \
	benchmarks/sim/sim_policy_locality.c \
	benchmarks/sim/sim_policy_nopfs.c \
	benchmarks/sim/sim_policy_sharding.c \
	benchmarks/sim/sim_ring.c \
	benchmarks/sim/sim_run.c \
	benchmarks/sim/sim_scenarios.c \
	benchmarks/sim/sim_scenarios.h \
	benchmarks/sim/sim_whatif.c

bin_PROGRAMS += nopfs-sim
nopfs_sim_SOURCES = \
	$(NOPFS_SIM_CORE) \
	benchmarks/sim/sim_main.c
nopfs_sim_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/benchmarks/sim
nopfs_sim_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
nopfs_sim_LDADD = lib/libnopfs_core.la $(JANSSON_LIBS) -lm

dist_noinst_SCRIPTS += benchmarks/sim/run-paper.sh
EXTRA_DIST += benchmarks/sim/README.md
# the what-if inputs, installed as examples (nopfs-sim(1))
simexampledir = $(docdir)/examples/sim
dist_simexample_DATA = \
	benchmarks/sim/examples/imagenet-1k-16-nodes.json \
	benchmarks/sim/examples/imagenet-22k-lassen.json \
	benchmarks/sim/examples/small-cluster-no-ssd.json
