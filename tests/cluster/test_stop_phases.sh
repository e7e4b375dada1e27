#!/bin/bash
# SIGTERM to the agents in each phase, on the real test cluster as the job
# user, with the emulated PFS slow enough that the phases last (40 ms per
# metadata operation, 20 ms per open and read):
#  1. in the catalog: node 0 scans the dataset, nodes 1 and 2 wait for its
#     catalog in a PMIx exchange;
#  2. in the probe: every node measures its tiers and the PFS (3 s);
#  3. while serving: a running 3-node training step.
# In each case every agent exits within 3 s (the cluster's KillWait is
# 10 s), its log says in which phase it stopped (while serving: that it
# wrote its report), the training step still completes with every byte
# right (its tasks read the PFS themselves once the agents are gone), and
# afterwards nothing of the job is left on any node. While serving, the job
# report has every node's report and counts what the agents delivered until
# they stopped.
# The plan and tier phases last milliseconds here: they are not aimed at.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
export NOPFS_CLUSTER_PFS_EMULATE="--metadata-latency 40 --latency 20"
PLUGIN_EXTRA_ARGS="report_wait=5"
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

job_dataset 120 3
fails=0

# agent_log NODE JOB: what JOB's agent on NODE has logged (its runtime
# directory stays while the log is there, until the job's epilog)
agent_log() {
	# shellcheck disable=SC2016 # expanded by the node's shell
	"$NC" exec-node "$1" sh -c 'cat /tmp/nopfs-$0.*/agent.log 2>/dev/null' "$2"
}

# on_every_node CMD...: until CMD ... NODE succeeds for n1, n2 and n3 (60 s at most)
on_every_node() {
	local node found
	for _ in $(seq 1 300); do
		found=0
		for node in n1 n2 n3; do
			"$@" "$node" && found=$((found + 1))
		done
		((found == 3)) && return 0
		sleep 0.2
	done
	return 1
}

# has_logged JOB TEXT NODE: JOB's agent on NODE has logged TEXT
has_logged() {
	agent_log "$3" "$1" | grep -qF -- "$2"
}

# runs_agent JOB NODE: an agent of JOB runs on NODE
runs_agent() {
	[[ -n $(node_agent "$2" "$1") ]]
}

# terminate JOB: SIGTERM to JOB's agent on every node; sets stop_ms to the
# time until none runs any more (-1: still running after 10 s)
terminate() {
	local node pid start left
	start=$(date +%s%N)
	for node in n1 n2 n3; do
		pid=$(node_agent "$node" "$1")
		[[ -n $pid ]] && kill -TERM "$pid"
	done
	stop_ms=-1
	for _ in $(seq 1 200); do
		left=0
		for node in n1 n2 n3; do
			[[ -n $(node_agent "$node" "$1") ]] && left=$((left + 1))
		done
		if ((left == 0)); then
			stop_ms=$((($(date +%s%N) - start) / 1000000))
			break
		fi
		sleep 0.05
	done
	# their logs now: the job's epilog removes them
	for node in n1 n2 n3; do
		agent_log "$node" "$1" >"$WORK/$1.$node.log" || true
	done
}

# submit NAME SLEEP: a 3-node batch job of the script (one rank a node, one
# epoch, each batch taking SLEEP s); sets job
submit() {
	cat >"$WORK/$1.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=1 --nopfs-dataset=$WORK/data --nopfs-epochs=1 --nopfs-tiers=ram:30M
srun $PYTHON $WORK/train.py --data $WORK/data --epochs 1 --workers 1 --batch-size 1 --sleep $2 --out $WORK/$1-%r.txt
echo "srun exit \$?"
JOB
	job=$(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -o "$WORK/$1.out" "$WORK/$1.sh")
}

# missed NAME WHAT: JOB's agents were never seen in the phase: cancel the job
missed() {
	echo "not ok - $1: the agents of job $job $2"
	fails=$((fails + 1))
	"$NC" run scancel "$job" || true
	wait_gone "$job" || true
}

# check NAME FIRST OTHERS: after SIGTERM in a phase: the stop time, each
# node's log line (grep -E patterns: FIRST for node 0, OTHERS for the
# others), the job's end, its bytes and what is left
check() {
	local name=$1 first=$2 others=$3 node pattern log
	if ((stop_ms < 0 || stop_ms > 3000)); then
		echo "not ok - $name: the agents of job $job took ${stop_ms} ms to exit after SIGTERM"
		tail -n 12 "$WORK/$job".n?.log | sed 's/^/#   /'
		fails=$((fails + 1))
	else
		echo "ok - $name: every agent of job $job exited within $stop_ms ms of SIGTERM"
	fi
	for node in n1 n2 n3; do
		pattern=$others
		[[ $node == n1 ]] && pattern=$first
		log=$(cat "$WORK/$job.$node.log")
		if grep -qE -- "$pattern" <<<"$log"; then
			echo "ok - $name: $node: $(grep -E -- "$pattern" <<<"$log" | tail -n 1 | cut -d' ' -f3-)"
		else
			echo "not ok - $name: $node's agent log lacks '$pattern':"
			tail -n 8 <<<"$log" | sed 's/^/#   /'
			fails=$((fails + 1))
		fi
	done
	if ! wait_gone "$job"; then
		echo "not ok - $name: job $job did not end"
		fails=$((fails + 1))
		return
	fi
	if grep -q "srun exit 0" "$WORK/$name.out"; then
		echo "ok - $name: the training step completed"
	else
		echo "not ok - $name: the training step failed:"
		sed 's/^/#   /' "$WORK/$name.out"
		fails=$((fails + 1))
	fi
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/$name-*.txt" --samples 120 | sed "s/^/$name: /" || fails=$((fails + 1))
	if nothing_left "$job"; then
		echo "ok - $name: nothing of job $job is left on the nodes"
	else
		fails=$((fails + 1))
	fi
}

# 1. in the catalog: node 0 scanning, the others waiting for it
submit catalog 0
if on_every_node runs_agent "$job" && sleep 1 && ! agent_log n1 "$job" | grep -q "catalog: "; then
	terminate "$job"
	check catalog "during the catalog: stopping before serving" \
		"stopped while waiting for the other agents|during the catalog: stopping before serving"
else
	missed catalog "were not in their catalog phase"
fi

# 2. in the probe, a second after every node has its catalog
submit probe 0
if on_every_node has_logged "$job" "catalog: " && sleep 1 && ! agent_log n1 "$job" | grep -q "probe took"; then
	terminate "$job"
	check probe "during the probe: stopping before serving" "during the probe: stopping before serving"
else
	missed probe "were not in their probe"
fi

# 3. while serving, once every rank has read 4 of its 40 samples (a batch
# of one every 0.25 s)
submit serve 0.25
if wait_agents "$job" && wait_read serve 3 4; then
	terminate "$job"
	check serve "report written to" "report written to"
	wait_report "$WORK/nopfs-$job.json" 10 || true
	if summary=$("$PYTHON" - "$WORK/nopfs-$job.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["nodes_reported"] == [0, 1, 2], r["nodes_reported"]
delivered = r["delivered_total"]["samples"]
assert 0 < delivered < 120, f"the agents delivered {delivered} of 120 samples"
assert all(n.get("final", True) for n in r["per_node"]), "an interim node report"
print(f"the job report has all 3 node reports; the agents delivered {delivered} of the "
      f"120 samples before they stopped, the tasks read the rest")
PY
	); then
		echo "ok - serve: $summary"
	else
		echo "not ok - serve: the job report: $summary"
		fails=$((fails + 1))
	fi
else
	missed serve "never got ready"
fi

echo "# $fails failed"
((fails == 0))
