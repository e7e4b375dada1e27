# Sourced first by every cluster test: one at a time. make -j runs tests in
# parallel, and another cluster test could restart or stop the cluster under
# this one. The test runs again under flock(1), which holds the lock for it
# and keeps it from the processes the test starts (-o): the cluster's daemons
# outlive the test.
# shellcheck shell=bash
if [[ -z ${NOPFS_CLUSTER_TEST_LOCKED:-} ]]; then
	export NOPFS_CLUSTER_TEST_LOCKED=1
	exec flock -o "${BASH_SOURCE[0]}" "$0" "$@"
fi
