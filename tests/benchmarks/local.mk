# tests/benchmarks: the simulator's unit tests and the end-to-end
# benchmark's training emulations checked against the data.

check_PROGRAMS += tests/benchmarks/check_sim
tests_benchmarks_check_sim_SOURCES = \
	$(NOPFS_SIM_CORE) \
	tests/benchmarks/check_sim.c
tests_benchmarks_check_sim_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/benchmarks/sim
tests_benchmarks_check_sim_CFLAGS = $(UNIT_TEST_FLAGS) $(JANSSON_CFLAGS)
tests_benchmarks_check_sim_LDADD = $(UNIT_TEST_LIBS) $(JANSSON_LIBS) -lm
TESTS += \
	tests/benchmarks/check_sim \
	tests/benchmarks/check_e2e.sh
if HAVE_MPI
TESTS += tests/benchmarks/check_train_mpi.sh
endif
EXTRA_DIST += \
	tests/benchmarks/check_e2e.sh \
	tests/benchmarks/e2e_check.py \
	tests/benchmarks/check_train_mpi.sh
