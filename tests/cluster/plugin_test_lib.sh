# Shared by the plugin's cluster tests (sourced instead of cluster_test_lib.sh):
# the cluster runs spank_nopfs.so from this build, with nopfs installed on
# the PFS (bindir, preload) where every node and the submit host see it; or
# an installed nopfs (NOPFS_INSTALLED_PREFIX, or PLUGIN_INSTALLED=1: see below).
# Sets PYTHON, PLUGIN_BIN (that bindir) besides what cluster_test_lib.sh
# sets, and UCX_TLS=tcp: the nodes' namespaces do not isolate shared memory.
# Defines job_dataset, run_batch, wait_report, report_job, wait_read,
# wait_gone, wait_agents, nothing_left and
# node_agent.
# shellcheck shell=bash disable=SC2034 # the variables are for the sourcing test

PYTHON=${NOPFS_PYTHON:-/usr/bin/python3}
# A test that runs the PyTorch script sets PLUGIN_NEEDS_TORCH=1 first.
if [[ ${PLUGIN_NEEDS_TORCH:-0} == 1 ]] && ! "$PYTHON" -c 'import torch, torchvision' 2>/dev/null; then
	[[ ${NOPFS_REQUIRE_TORCH:-0} == 1 ]] && { echo "torch required"; exit 1; }
	echo "SKIP: no torch"
	exit 77
fi

PLUGIN_STATE=${NOPFS_CLUSTER_STATE:-/tmp/nopfs-cluster}
PLUGIN_PREFIX=$PLUGIN_STATE/pfs/nopfs
PLUGIN_ARGS="ready_timeout=60 report_wait=20 ${PLUGIN_EXTRA_ARGS:-}"
# Where nopfs comes from: this build (the plugin from spank/.libs, the agent,
# report tool and interposer copied onto the PFS by install-nopfs); an
# installed tree (NOPFS_INSTALLED_PREFIX, read by nopfs-cluster up); or, when
# the test sets PLUGIN_INSTALLED=1, this build's "make install DESTDIR=" onto
# the PFS (PLUGIN_DESTDIR, in WORK), then run as installed.
if [[ -n ${NOPFS_INSTALLED_PREFIX:-} || ${PLUGIN_INSTALLED:-0} == 1 ]]; then
	export NOPFS_SPANK_ARGS=$PLUGIN_ARGS
else
	export NOPFS_SPANK_PLUGIN=${top_builddir:-$(dirname "$0")/../..}/spank/.libs/spank_nopfs.so
	export NOPFS_SPANK_ARGS="bindir=$PLUGIN_PREFIX/bin preload=$PLUGIN_PREFIX/lib/libnopfs_preload.so $PLUGIN_ARGS"
	NOPFS_SPANK_PLUGIN=$(cd "$(dirname "$NOPFS_SPANK_PLUGIN")" && pwd)/spank_nopfs.so
fi

# what the test asks for: cluster_test_lib.sh sets the running cluster's
PLUGIN_PFS_EMULATE=${NOPFS_CLUSTER_PFS_EMULATE:-}
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster_test_lib.sh"
if [[ ${PLUGIN_INSTALLED:-0} == 1 && -z ${NOPFS_INSTALLED_PREFIX:-} ]]; then
	PLUGIN_DESTDIR=$WORK/installed # removed at exit with WORK
	(umask 022 && make -s -C "$BUILDDIR" install DESTDIR="$PLUGIN_DESTDIR") >"$WORK/install.log" 2>&1 ||
		{ cat "$WORK/install.log"; echo "not ok - make install DESTDIR=$PLUGIN_DESTDIR failed"; exit 1; }
	NOPFS_INSTALLED_PREFIX=$PLUGIN_DESTDIR$(sed -n 's/^prefix = //p' "$BUILDDIR/Makefile")
	export NOPFS_INSTALLED_PREFIX
fi
# up again: a no-op when the cluster already runs this plugin and arguments
"$NC" up --nodes 3 >/dev/null
# A test that sets NOPFS_CLUSTER_PFS_EMULATE runs the cluster on the emulated
# PFS: it is taken down at the end, whoever started it. A cluster that was
# already up on a plain PFS is not this test's.
if [[ -n $PLUGIN_PFS_EMULATE ]]; then
	CLUSTER_STARTED=1 # read by cluster_cleanup (cluster_test_lib.sh)
	if [[ -z ${NOPFS_CLUSTER_PFS_STATS:-} ]]; then
		echo "not ok - the cluster's PFS is not emulated: take down the cluster that runs"
		exit 1
	fi
fi

if [[ -n ${NOPFS_INSTALLED_PREFIX:-} ]]; then
	PLUGIN_BIN=$NOPFS_INSTALLED_PREFIX/bin
else
	PLUGIN_BIN=$PLUGIN_PREFIX/bin
	"$SRCDIR/contrib/cluster/install-nopfs" "$BUILDDIR" "$PLUGIN_PREFIX"
fi
export UCX_TLS=tcp

# wait_gone JOB: until JOB has left the queue (120 s at most)
wait_gone() {
	for _ in $(seq 1 600); do
		"$NC" run squeue -h -j "$1" 2>/dev/null | grep -q . || return 0
		sleep 0.2
	done
	return 1
}

# wait_reading NAME [SECONDS]: until each of the 6 ranks writing
# $WORK/NAME-RANK.txt has written a line (its first batch read); false after
# SECONDS (60)
wait_reading() {
	local rank reading
	for _ in $(seq 1 $((${2:-60} * 5))); do
		reading=0
		for rank in 0 1 2 3 4 5; do
			[[ -s $WORK/$1-$rank.txt ]] && reading=$((reading + 1))
		done
		((reading == 6)) && return 0
		sleep 0.2
	done
	return 1
}

# own_pfs_reads FILE: the reads a job's tasks left to the PFS themselves, as
# their interposer said in FILE (its output, with NOPFS_DEBUG=1)
own_pfs_reads() {
	grep -cE '^nopfs-preload\[[0-9]+\]: reading .* from the PFS$' "$1" || true
}

# wait_agents JOB: until every node's agent of JOB is ready (its ready file in
# /tmp/nopfs-JOB.TOKEN; 60 s at most);
# if they never are, shows what each node has of the job (the launch log
# /tmp/nopfs-JOB.srun carries the agents' errors) and the job's steps
wait_agents() {
	local ready node
	for _ in $(seq 1 300); do
		ready=0
		for node in n1 n2 n3; do
			# shellcheck disable=SC2016 # expanded by the node's shell
			"$NC" exec-node "$node" sh -c 'ls /tmp/nopfs-$0.*/ready' "$1" >/dev/null 2>&1 &&
				ready=$((ready + 1))
		done
		((ready == 3)) && return 0
		sleep 0.2
	done
	for node in n1 n2 n3; do
		echo "# $node: $("$NC" exec-node "$node" sh -c "ls -d /tmp/nopfs-$1* 2>/dev/null" | tr '\n' ' ')"
		"$NC" exec-node "$node" sh -c "tail -n 40 /tmp/nopfs-$1.srun 2>/dev/null" | sed 's/^/#   /'
	done
	"$NC" run squeue -h -s -j "$1" | sed 's/^/# step: /'
	return 1
}

# cache_base_setup DIR: plugstack cache_base DIR made anew on every node (root's,
# 0755, in the node's own /tmp), removed with everything in it at exit
cache_base_setup() {
	local node
	CACHE_BASE_DIR=$1
	for node in n1 n2 n3; do
		"$NC" exec-node "$node" sh -c "rm -rf $1 && mkdir -m 0755 $1"
	done
	# shellcheck disable=SC2064 # DIR now, not at exit
	trap "rc=\$?; cache_base_remove; (exit \$rc); cluster_cleanup" EXIT
}
# shellcheck disable=SC2317 # runs from the trap
cache_base_remove() {
	local node
	for node in n1 n2 n3; do "$NC" exec-node "$node" rm -rf "$CACHE_BASE_DIR" || true; done
}

# nothing_left JOB: no agent, file or shared memory of JOB on any node (after
# wait_gone: the epilog is the backstop)
nothing_left() {
	local node rc=0
	for node in n1 n2 n3; do
		if "$NC" exec-node "$node" sh -c "ls -d /tmp/nopfs-$1* /dev/shm/nopfs-$1* 2>/dev/null" | grep .; then
			echo "not ok - node $node keeps files of job $1"
			rc=1
		fi
		if "$NC" exec-node "$node" pgrep -f "nopfs-agent --job-id $1 " >/dev/null; then
			echo "not ok - node $node still runs an agent of job $1"
			rc=1
		fi
	done
	return "$rc"
}


# job_dataset SAMPLES CLASSES: $WORK/data (~100 KB samples) and $WORK/train.py,
# readable by the test user
job_dataset() {
	cp "$SRCDIR/tests/agent/system/train_script.py" "$WORK/train.py"
	"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/data" --samples "$1" --classes "$2" \
		--mean 100K --sd 20K >/dev/null
	chmod -R a+rX "$WORK"
}

# run_batch SECONDS: sbatch --wait $WORK/job.sh as the test user, at most
# SECONDS; shows its output ($WORK/job.out), waits (10 s at most) for its job
# report $WORK/nopfs-JOB.json and sets job to its id
run_batch() {
	chmod 755 "$WORK/job.sh"
	job=$(cd "$WORK" && timeout -k 5 "$1" "${RUNU[@]}" sbatch --parsable --wait \
		-o "$WORK/job.out" "$WORK/job.sh") || true
	job=${job%%;*}
	cat "$WORK/job.out"
	wait_report "$WORK/nopfs-$job.json" 10 || true
}

# wait_report FILE [SECONDS]: until the job report FILE is there (SECONDS, 20
# if not given); fails if it is not by then
wait_report() {
	for _ in $(seq 1 $((${2:-20} * 10))); do
		[[ -s $1 ]] && return 0
		sleep 0.1
	done
	return 1
}

# report_job FILE [SECONDS]: the job id in the job report FILE, waited for as
# wait_report does; nothing when there is none
report_job() {
	wait_report "$@" || true
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["job_id"])' "$1" \
		2>/dev/null || true
}

# wait_read NAME RANKS N: until ranks 0 .. RANKS-1 of the training script
# have each written N samples to $WORK/NAME-RANK.txt (60 s at most)
wait_read() {
	local rank read
	for _ in $(seq 1 300); do
		read=0
		for ((rank = 0; rank < $2; rank++)); do
			[[ -e $WORK/$1-$rank.txt && $(wc -l <"$WORK/$1-$rank.txt") -ge $3 ]] && read=$((read + 1))
		done
		((read == $2)) && return 0
		sleep 0.2
	done
	return 1
}

# node_agent NODE JOB: the PID of JOB's agent on NODE (the nodes of the test
# cluster share one PID namespace: the node's is the one in its mount namespace)
node_agent() {
	# shellcheck disable=SC2016 # expanded by the node's shell
	"$NC" exec-node "$1" sh -c 'for p in $(pgrep -f "^[^ ]*/nopfs-agent --job-id $0 "); do
		if [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/self/ns/mnt)" ]; then echo "$p"; fi
	done' "$2"
}
