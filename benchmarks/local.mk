# benchmarks/: figures printed by `make bench` (planner scale, planner vs a
# PFS, the cost of --verify, data-path delivery, agent start-up) and the
# data plane's bench_peer.

noinst_PROGRAMS += \
	benchmarks/bench_delivery \
	benchmarks/bench_peer \
	benchmarks/bench_plan_pfs \
	benchmarks/bench_plan_scale \
	benchmarks/bench_verify
benchmarks_bench_verify_SOURCES = benchmarks/bench_verify.c
benchmarks_bench_verify_LDADD = lib/libnopfs_core.la
benchmarks_bench_delivery_SOURCES = benchmarks/bench_delivery.c
benchmarks_bench_delivery_LDADD = lib/libnopfs.la lib/libnopfs_core.la
benchmarks_bench_plan_pfs_SOURCES = benchmarks/bench_plan_pfs.c
benchmarks_bench_plan_pfs_LDADD = lib/libnopfs_core.la -lm
benchmarks_bench_plan_scale_SOURCES = benchmarks/bench_plan_scale.c
benchmarks_bench_plan_scale_LDADD = lib/libnopfs_core.la
benchmarks_bench_peer_SOURCES = benchmarks/bench_peer.c
benchmarks_bench_peer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
benchmarks_bench_peer_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS)
benchmarks_bench_peer_LDADD = agent/libnopfs_agent.la lib/libnopfs_core.la $(UCX_LIBS)

bench: all
	benchmarks/bench_plan_scale
	benchmarks/bench_plan_pfs
	benchmarks/bench_verify
	top_srcdir=$(top_srcdir) top_builddir=$(top_builddir) NOPFS_PYTHON=$(NOPFS_PYTHON) \
		$(top_srcdir)/benchmarks/bench_delivery.sh
	top_srcdir=$(top_srcdir) top_builddir=$(top_builddir) NOPFS_PYTHON=$(NOPFS_PYTHON) \
		$(top_srcdir)/benchmarks/bench_startup.sh
.PHONY: bench
EXTRA_DIST += benchmarks/bench_delivery.sh benchmarks/bench_startup.sh \
	benchmarks/bench_metadata.sh benchmarks/first_batch.py
