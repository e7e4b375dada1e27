# tests/cluster: the real thing on the test cluster (contrib/cluster), one
# test at a time: srun, sbatch, PMIx, several nodes, clean-up, validation
# sets' task environment, the kept caches' prolog and limits, faults of the
# PFS, the quick end-to-end benchmark, the examples of contrib/examples.

check_PROGRAMS += tests/cluster/pmix_probe
tests_cluster_pmix_probe_SOURCES = \
	tests/cluster/pmix_probe.c \
	agent/bootstrap.c \
	agent/bootstrap.h
tests_cluster_pmix_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_cluster_pmix_probe_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS)
tests_cluster_pmix_probe_LDADD = lib/libnopfs_core.la $(PMIX_LIBS)
CLUSTER_TESTS = \
	tests/cluster/test_cluster_smoke.sh \
	tests/cluster/test_pmix_bootstrap.sh \
	tests/cluster/test_multinode.sh \
	tests/cluster/test_multinode_broken_peer.sh \
	tests/cluster/test_spank_bad_input.sh \
	tests/cluster/test_spank_val.sh \
	tests/cluster/test_spank_srun.sh \
	tests/cluster/test_spank_sbatch.sh \
	tests/cluster/test_spank_replan.sh \
	tests/cluster/test_spank_cleanup.sh \
	tests/cluster/test_spank_keep.sh \
	tests/cluster/test_keep_jobs.sh \
	tests/cluster/test_val_job.sh \
	tests/cluster/test_security.sh \
	tests/cluster/test_faults.sh \
	tests/cluster/test_pfs_spikes.sh \
	tests/cluster/test_spank_early.sh \
	tests/cluster/test_stop_phases.sh \
	tests/cluster/test_node_faults.sh \
	tests/cluster/test_two_jobs.sh \
	tests/cluster/test_step_restart.sh \
	tests/cluster/test_e2e_quick.sh \
	tests/cluster/test_examples.sh \
	tests/cluster/test_installed.sh \
	tests/cluster/test_live.sh \
	tests/cluster/test_container.sh \
	tests/cluster/test_soak.sh
TESTS += $(CLUSTER_TESTS)
EXTRA_DIST += \
	$(CLUSTER_TESTS) \
	tests/cluster/cluster_lock.sh \
	tests/cluster/cluster_test_lib.sh \
	tests/cluster/plugin_test_lib.sh \
	tests/cluster/container_task.sh \
	tests/cluster/check_job.py \
	tests/cluster/pfs_watch.py
# One cluster at a time: cluster tests run one after another.
tests/cluster/test_pmix_bootstrap.log: tests/cluster/test_cluster_smoke.log
tests/cluster/test_multinode.log: tests/cluster/test_pmix_bootstrap.log
tests/cluster/test_multinode_broken_peer.log: tests/cluster/test_multinode.log
tests/cluster/test_spank_bad_input.log: tests/cluster/test_multinode_broken_peer.log
tests/cluster/test_spank_val.log: tests/cluster/test_spank_bad_input.log
tests/cluster/test_spank_srun.log: tests/cluster/test_spank_val.log
tests/cluster/test_spank_sbatch.log: tests/cluster/test_spank_srun.log
tests/cluster/test_spank_cleanup.log: tests/cluster/test_spank_sbatch.log
tests/cluster/test_spank_keep.log: tests/cluster/test_spank_cleanup.log
tests/cluster/test_keep_jobs.log: tests/cluster/test_spank_keep.log
tests/cluster/test_val_job.log: tests/cluster/test_keep_jobs.log
tests/cluster/test_security.log: tests/cluster/test_val_job.log
tests/cluster/test_faults.log: tests/cluster/test_security.log
tests/cluster/test_pfs_spikes.log: tests/cluster/test_faults.log
tests/cluster/test_spank_early.log: tests/cluster/test_pfs_spikes.log
tests/cluster/test_stop_phases.log: tests/cluster/test_spank_early.log
tests/cluster/test_node_faults.log: tests/cluster/test_stop_phases.log
tests/cluster/test_two_jobs.log: tests/cluster/test_node_faults.log
tests/cluster/test_step_restart.log: tests/cluster/test_two_jobs.log
tests/cluster/test_e2e_quick.log: tests/cluster/test_step_restart.log
tests/cluster/test_examples.log: tests/cluster/test_e2e_quick.log
tests/cluster/test_installed.log: tests/cluster/test_examples.log
tests/cluster/test_live.log: tests/cluster/test_installed.log
tests/cluster/test_container.log: tests/cluster/test_live.log
tests/cluster/test_soak.log: tests/cluster/test_container.log
