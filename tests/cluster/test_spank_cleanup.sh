#!/bin/bash
# Things going wrong mid-run, on the real cluster as the test user:
#  1. SIGKILL of one node's agent: the job still completes with every byte
#     right (that node's tasks, and the others' requests for what it kept,
#     go to the PFS);
#  2. scancel of a running job.
# After each job, no process, file or shared-memory directory of the job
# remains on any node.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 600 6
fail=0

# submit NAME SLEEP: a 3-node batch job of the script, each batch taking SLEEP s
submit() {
	cat >"$WORK/$1.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2 --nopfs-dataset=$WORK/data --nopfs-epochs=3 --nopfs-tiers=ram:30M
srun $PYTHON $WORK/train.py --data $WORK/data --epochs 3 --workers 1 --sleep $2 --out $WORK/$1-%r.txt
echo "srun exit \$?"
JOB
	(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -o "$WORK/$1.out" "$WORK/$1.sh")
}

# wait_agents JOB: until every node's agent of JOB is ready (60 s at most)
wait_agents() {
	local ready
	for _ in $(seq 1 300); do
		ready=0
		for node in n1 n2 n3; do
			"$NC" exec-node "$node" test -e "/tmp/nopfs-$1/ready" && ready=$((ready + 1))
		done
		((ready == 3)) && return 0
		sleep 0.2
	done
	return 1
}

# 1. SIGKILL of node n2's agent once the agents are ready
job=$(submit killed 0.2)
if wait_agents "$job" && sleep 2; then
	"$NC" exec-node n2 pkill -KILL -f "nopfs-agent --job-id $job " || true
	echo "killed the agent of job $job on n2"
else
	echo "not ok - the agents of job $job never got ready"
	fail=1
fi
wait_gone "$job" || { echo "not ok - job $job did not end"; fail=1; }
cat "$WORK/killed.out"
grep -q "srun exit 0" "$WORK/killed.out" || { echo "not ok - the job failed after an agent died"; fail=1; }
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/killed-*.txt" \
	--samples 1800 || fail=1
nothing_left "$job" && echo "ok - nothing of job $job is left on the nodes" || fail=1

# 2. scancel once the agents are ready
job=$(submit cancelled 0.2)
wait_agents "$job" || { echo "not ok - the agents of job $job never got ready"; fail=1; }
sleep 1
"$NC" run scancel "$job"
wait_gone "$job" || { echo "not ok - job $job did not end after scancel"; fail=1; }
sleep 1 # the epilog runs after the job leaves the queue
nothing_left "$job" && echo "ok - scancel: nothing of job $job is left on the nodes" || fail=1
exit "$fail"
