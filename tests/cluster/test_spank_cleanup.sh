#!/bin/bash
# Things going wrong mid-run, on the real cluster as the test user:
#  1. SIGKILL of one node's agent: the job still completes with every byte
#     right (that node's tasks, and the others' requests for what it kept,
#     go to the PFS at once), and the job report names the node;
#  2. one node's agent stopped (SIGSTOP) for 5 s: the others' reads from it
#     pass their 1 s deadline and go to the PFS; the job completes right;
#  3. scancel of a running job;
#  4. an agent step whose agents never reach each other (they exit with
#     status 75 after 10 s, node 0's after 20 s, as when its first fence
#     passes and the second times out): the plugin starts it again, the
#     tasks wait for it, and the job is served.
# After each job, no process, file or shared-memory directory of the job
# remains on any node.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 600 6
fail=0

# submit NAME SLEEP [EPOCHS [ENV]]: a 3-node batch job of the script, each
# batch taking SLEEP s, 3 epochs unless told, with ENV (NAME=VALUE) exported
submit() {
	local epochs=${3:-3} env=${4:-NOPFS_DEBUG=0}
	cat >"$WORK/$1.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2 --nopfs-dataset=$WORK/data --nopfs-epochs=$epochs --nopfs-tiers=ram:30M
export $env
srun $PYTHON $WORK/train.py --data $WORK/data --epochs $epochs --workers 1 --sleep $2 --out $WORK/$1-%r.txt
echo "srun exit \$?"
JOB
	(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -o "$WORK/$1.out" "$WORK/$1.sh")
}

# 1. SIGKILL of node n2's agent a second into the run
job=$(submit killed 0.2 3 NOPFS_DEBUG=1)
if wait_agents "$job" && sleep 1; then
	pid=$(node_agent n2 "$job")
	if kill -KILL "$pid"; then
		echo "killed the agent of job $job on n2 (pid $pid)"
	else
		echo "not ok - no agent of job $job on n2 to kill ($pid)"
		fail=1
	fi
else
	echo "not ok - the agents of job $job never got ready"
	fail=1
fi
wait_gone "$job" || { echo "not ok - job $job did not end"; fail=1; }
grep -v '^nopfs-preload' "$WORK/killed.out" || true
grep -q "srun exit 0" "$WORK/killed.out" || { echo "not ok - the job failed after an agent died"; fail=1; }
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/killed-*.txt" \
	--samples 1800 || fail=1
# n2's tasks read what was not staged yet from the PFS themselves, and say so
# (the count the stopped case below relies on)
own=$(own_pfs_reads "$WORK/killed.out")
if ((own > 0)); then
	echo "ok - n2's tasks read $own samples from the PFS themselves"
else
	echo "not ok - no task said it read the PFS itself after its agent died"
	fail=1
fi
"$PYTHON" - "$WORK/nopfs-$job.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["nodes_missing"] == [1], f"missing nodes {r['nodes_missing']}, expected [1]"
assert any("node 1" in p for p in r["problems"]), r["problems"]
# the others gave up on node 1 at once or within the 1 s deadline
assert r["stall"]["max_seconds"] < 3, r["stall"]
print(f"ok - the job report names node 1 as missing; longest wait "
      f"{r['stall']['max_seconds'] * 1000:.0f} ms")
PY
nothing_left "$job" && echo "ok - nothing of job $job is left on the nodes" || fail=1

# 2. node n3's agent stopped for 5 s (well below the tasks' 10 s request timeout)
# once every rank has read its first batch, while the others stage from it:
# the other nodes' reads from it pass their deadline and go to the PFS, n3's
# own tasks wait; the job completes. The job runs 8 epochs (800 samples per
# rank): the agents' 256-sample staging windows then still have samples to
# fetch from n3 while it is stopped (in a 3-epoch job, a machine slow enough
# to start the ranks late lets the agents stage nearly all of the job first).
# With NOPFS_DEBUG=1 the interposer says each read it leaves to the PFS.
job=$(submit stopped 0.2 8 NOPFS_DEBUG=1)
if wait_agents "$job" && wait_reading stopped; then
	pid=$(node_agent n3 "$job")
	if kill -STOP "$pid"; then
		sleep 5
		kill -CONT "$pid"
		echo "stopped the agent of job $job on n3 (pid $pid) for 5 s"
	else
		echo "not ok - no agent of job $job on n3 to stop ($pid)"
		fail=1
	fi
else
	echo "not ok - the agents of job $job never got ready, or its ranks never read"
	fail=1
fi
wait_gone "$job" || { echo "not ok - job $job did not end"; fail=1; }
grep -q "srun exit 0" "$WORK/stopped.out" || { echo "not ok - the job failed"; cat "$WORK/stopped.out"; fail=1; }
# every byte right; a request of n3's tasks that reached the agent just
# before it stopped can pass its deadline while it is stopped: the task
# then reads the PFS itself (a few: at most 1%, counted from the
# interposer's lines). Every other sample is counted as delivered: the
# staged copies n3's ranks opened while its agent was stopped, up to a
# window past a cursor held back by a request not yet answered, too.
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/stopped-*.txt" \
	--samples 4800 || fail=1
own=$(own_pfs_reads "$WORK/stopped.out")
"$PYTHON" - "$WORK/nopfs-$job.json" "$own" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
own = int(sys.argv[2])
timeouts = sum((n.get("peers") or {}).get("timeouts", 0) for n in r["per_node"] if n["node"] != 2)
assert timeouts > 0, ("no read from the stopped node passed its deadline: "
                      + str([(n["node"], n.get("peers")) for n in r["per_node"]]))
assert r["vs_dataset"] <= 3, r["vs_dataset"]
assert own <= 48, f"the tasks read {own} of the 4800 samples from the PFS themselves"
delivered = r["delivered_total"]["samples"]
unused = sum(n["staging"]["unused_samples"] for n in r["per_node"])
assert 4800 - 48 <= delivered <= 4800, \
    f"the agents counted {delivered} of 4800 samples delivered ({unused} staged copies unused)"
print(f"ok - reads from the stopped node: {timeouts} passed their deadline and went to the "
      f"PFS; the tasks read {own} of the 4800 samples from the PFS themselves; the agents "
      f"counted {delivered} delivered, {unused} staged copies unused")
PY
nothing_left "$job" && echo "ok - nothing of job $job is left on the nodes" || fail=1

# 3. scancel once the agents are ready
job=$(submit cancelled 0.2)
wait_agents "$job" || { echo "not ok - the agents of job $job never got ready"; fail=1; }
sleep 1
"$NC" run scancel "$job"
wait_gone "$job" || { echo "not ok - job $job did not end after scancel"; fail=1; }
sleep 1 # the epilog runs after the job leaves the queue
nothing_left "$job" && echo "ok - scancel: nothing of job $job is left on the nodes" || fail=1

# 4. the first agent step of the job exits with 75 on every node (as when its
#    first PMIx fences never complete: after 10 s, node 0's after 20 s),
#    looking like an agent meanwhile (its command line); the second runs the
#    real agent
mv "$PLUGIN_BIN/nopfs-agent" "$PLUGIN_BIN/nopfs-agent.real"
cat >"$PLUGIN_BIN/nopfs-agent" <<AGENT
#!/bin/bash
marker=$WORK/first-step.\$SLURM_JOB_ID.\$SLURM_NODEID
if [ ! -e "\$marker" ]; then
	: >"\$marker"
	wait=10
	[ "\$SLURM_NODEID" = 0 ] && wait=20
	exec -a "\$0" bash -c 'sleep "\$0"
		echo "nopfs-agent (test): the agents of this step cannot reach each other" >&2
		exit 75' "\$wait" "\$@"
fi
exec $PLUGIN_BIN/nopfs-agent.real "\$@"
AGENT
chmod 755 "$PLUGIN_BIN/nopfs-agent"
job=$(submit again 0.1)
wait_agents "$job" || { echo "not ok - the agents of job $job never got ready"; fail=1; }
wait_gone "$job" || { echo "not ok - job $job did not end"; fail=1; }
mv -f "$PLUGIN_BIN/nopfs-agent.real" "$PLUGIN_BIN/nopfs-agent"
grep -q "srun exit 0" "$WORK/again.out" || { echo "not ok - the job failed"; cat "$WORK/again.out"; fail=1; }
if grep "running (its log" "$WORK/again.out"; then
	echo "not ok - tasks gave up waiting while the agent step was started again"
	fail=1
fi
steps=$(find "$WORK" -maxdepth 1 -name "first-step.$job.*" | wc -l)
if ((steps == 3)) && "$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
	--outs "$WORK/again-*.txt" --samples 1800 --report "$WORK/nopfs-$job.json"; then
	echo "ok - the agent step that asked to be started again was; the job was served"
else
	echo "not ok - agent step started again: $steps first agents; $(cat "$WORK/again.out")"
	fail=1
fi
nothing_left "$job" && echo "ok - nothing of job $job is left on the nodes" || fail=1
exit "$fail"
