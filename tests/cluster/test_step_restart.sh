#!/bin/bash
# The training step killed and started again within its job: a batch job
# with #SBATCH --nopfs-dataset runs the unmodified script, kills its step
# (scancel -s KILL) a few seconds in, then runs it again to the end. The second run
# is served by the same agents (one agent step), every sample it reads has
# the file's bytes, and the job ends with its report and nothing left on any
# node.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 600 6
fail=0

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2
#SBATCH --nopfs-dataset=$WORK/data --nopfs-seed=5 --nopfs-epochs=3
set -u
run() {
	srun $PYTHON $WORK/train.py --data $WORK/data --seed 5 --epochs 3 --workers 1 \
		--sleep 0.1 --out $WORK/out\$1-%r.txt
}
run 1 &
srun1=\$!
# until the ranks have read some, then kill the step's srun
for i in \$(seq 1 300); do
	[ "\$(cat $WORK/out1-* 2>/dev/null | wc -l)" -ge 60 ] && break
	sleep 0.1
done
step=\$(squeue -s -h -j \$SLURM_JOB_ID -o "%i %j" | awk '\$2 !~ /nopfs-agent|batch|extern/ { print \$1; exit }')
scancel -s KILL "\$step"
wait \$srun1
echo "srun 1 (step \$step) killed: \$?"
sleep 1
echo "samples read by the killed step: \$(cat $WORK/out1-* | wc -l)"
# the step's tasks are gone before the next starts
for i in \$(seq 1 100); do
	[ "\$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -vc nopfs-agent)" -le 1 ] && break
	sleep 0.2
done
run 2
echo "srun 2 exit \$?"
echo "agent steps: \$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -c nopfs-agent)"
JOB
run_batch 300
read1=$(sed -n 's/^samples read by the killed step: //p' "$WORK/job.out")
if ! grep -q "srun 1 (step .*) killed: [1-9]" "$WORK/job.out" || ((${read1:-1800} >= 1800)); then
	echo "not ok - the first step was not killed (${read1:-?} samples read)"
	fail=1
fi
grep -q "srun 2 exit 0" "$WORK/job.out" || { echo "not ok - the second srun failed"; fail=1; }
grep -q "agent steps: 1" "$WORK/job.out" || { echo "not ok - not one agent step"; fail=1; }
if [[ -e $WORK/nopfs-$job.json ]]; then
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out2-*.txt" \
		--samples 1800 || fail=1
	# the killed run's samples were right too, as far as they went
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out1-*.txt" \
		--samples "$read1" || fail=1
	# every agent lived to the end: each node reported, no request waited long
	"$PYTHON" - "$WORK/nopfs-$job.json" <<'PY' || fail=1
import json, sys
report = json.load(open(sys.argv[1]))
nodes = report["per_node"]
assert sorted(n["node"] for n in nodes) == [0, 1, 2], report["problems"]
longest = max(n["stall"]["max_seconds"] for n in nodes)
assert longest < 5, f"a request waited {longest:.2f} s"
print(f"ok - 3 nodes reported; the longest wait for an agent {longest:.3f} s")
PY
else
	echo "not ok - no job report"
	fail=1
fi
wait_gone "$job" && nothing_left "$job" || fail=1
((fail == 0)) && echo "ok - step killed and started again: right bytes, one agent step, nothing left"
((fail == 0))
