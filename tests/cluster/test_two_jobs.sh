#!/bin/bash
# Two jobs of the same user on the same 3 nodes and the same dataset at once
# (the nodes have 4 CPUs; each job takes one a node): each job gets its own
# agents, places and report, every sample each rank reads has the file's
# bytes, each report accounts for its own job's samples only, and afterwards
# nothing of either job is left on any node.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

job_dataset 600 6
fails=0

# run SEED: one job, 3 nodes x 1 rank, 3 epochs of the script with SEED
run() {
	(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=1 \
		--nopfs-dataset="$WORK/data" --nopfs-seed="$1" --nopfs-epochs=3 \
		--nopfs-report="$WORK/job-$1.json" \
		"$PYTHON" train.py --data "$WORK/data" --seed "$1" --epochs 3 --workers 2 \
		--sleep 0.05 --out "$WORK/out-$1-%r.txt") >"$WORK/job-$1.out" 2>"$WORK/job-$1.err"
}

run 7 &
first=$!
run 8 &
second=$!
# both running at once: seen in the queue
together=0
for _ in $(seq 1 300); do
	(($("$NC" run squeue -h -t R -o %i | wc -l) >= 2)) && { together=1; break; }
	kill -0 "$first" 2>/dev/null || kill -0 "$second" 2>/dev/null || break
	sleep 0.1
done
rc7=0 rc8=0
wait "$first" || rc7=$?
wait "$second" || rc8=$?
for seed in 7 8; do
	cat "$WORK/job-$seed.err"
done
if ((rc7 != 0 || rc8 != 0)); then
	echo "not ok - the jobs exited $rc7 and $rc8"
	exit 1
fi

jobs=()
for seed in 7 8; do
	job=$(report_job "$WORK/job-$seed.json")
	if [[ -z $job ]]; then
		echo "not ok - no job report for seed $seed"
		fails=$((fails + 1))
		continue
	fi
	jobs+=("$job")
	# every sample right; the report's deliveries are this job's (3 ranks x 3 epochs x 200)
	if "$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/out-$seed-*.txt" --samples 1800 --report "$WORK/job-$seed.json"; then
		echo "ok - job $job (seed $seed): every sample right, its report accounts for its own reads"
	else
		echo "not ok - job $job (seed $seed)"
		fails=$((fails + 1))
	fi
done
if ((${#jobs[@]} == 2 && together)) && [[ ${jobs[0]} != "${jobs[1]}" ]]; then
	echo "ok - two jobs, ${jobs[0]} and ${jobs[1]}, ran at once"
else
	echo "not ok - not two jobs at once: ${jobs[*]} (seen running together: $together)"
	fails=$((fails + 1))
fi
for job in "${jobs[@]}"; do
	wait_gone "$job" && nothing_left "$job" || fails=$((fails + 1))
done
echo "# $fails failed"
((fails == 0))
