# tests/memcheck: the unit tests again, under valgrind's memcheck.

MEMCHECK_TESTS = \
	tests/lib/common/check_units \
	tests/lib/common/check_fdio \
	tests/lib/common/check_atomic_file \
	tests/lib/common/check_dirs \
	tests/lib/common/check_private \
	tests/lib/common/check_log \
	tests/lib/common/check_optable \
	tests/lib/plan/check_layout \
	tests/lib/plan/check_model \
	tests/lib/plan/check_placement \
	tests/lib/plan/check_sampler \
	tests/lib/catalog/check_catalog \
	tests/lib/catalog/check_catalog_cache \
	tests/lib/task/check_wire \
	tests/lib/task/check_wire_io \
	tests/lib/task/check_runtime \
	tests/lib/task/check_client \
	tests/lib/report/check_report \
	tests/agent/check_options \
	tests/agent/check_job_report \
	tests/agent/tier/check_limits \
	tests/agent/probe/check_probe \
	tests/agent/peer/check_peer \
	tests/spank/check_spank_config \
	tests/benchmarks/check_sim

AM_TESTS_ENVIRONMENT += \
	NOPFS_MEMCHECK_TESTS='$(MEMCHECK_TESTS)'; export NOPFS_MEMCHECK_TESTS;

TESTS += tests/memcheck/check_memcheck.sh
EXTRA_DIST += \
	tests/memcheck/check_memcheck.sh \
	tests/memcheck/valgrind.supp
