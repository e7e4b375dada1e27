# Sourced first by every cluster test: one at a time. make -j runs tests in
# parallel, and another cluster test could restart or stop the cluster under
# this one. The test runs again under flock(1), which holds the lock for it
# and keeps it from the processes the test starts (-o): the cluster's daemons
# outlive the test.
# shellcheck shell=bash
# A sanitizer build (make distcheck's): srun and slurmstepd, not instrumented,
# cannot load the instrumented plugin, nor the tasks the interposer.
if [[ -n ${NOPFS_SANITIZER_RUNTIME:-} ]]; then
	echo "skipped: a sanitizer build; Slurm's daemons cannot load its plugin" >&2
	exit 77
fi
if [[ -z ${NOPFS_CLUSTER_TEST_LOCKED:-} ]]; then
	export NOPFS_CLUSTER_TEST_LOCKED=1
	exec flock -o "${BASH_SOURCE[0]}" "$0" "$@"
fi
