#!/bin/bash
# The user's view: one srun with --nopfs-dataset on the 3-node test cluster
# runs the unmodified PyTorch script (3 nodes x 2 ranks, 2 workers each, 3
# epochs) as the test user. The plugin starts the agent step, the tasks read
# through the interposer, and at the end srun prints the job report and
# writes the merged JSON. Every byte must be right, every node must report,
# and nothing of the job may be left on any node. The agents check every
# copy by CRC32C (SLURM_NOPFS_VERIFY=yes, as a user would set it): on on
# every node, no copy differed.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 1500 15

# Every open of a sample file on the PFS, counted independently of nopfs.
"$PYTHON" "$SRCDIR/tests/cluster/pfs_watch.py" "$WORK/data" "$WORK/watch.json" &
watcher=$!
for _ in $(seq 1 100); do [[ -e $WORK/watch.json.ready ]] && break; sleep 0.05; done
# Each node keeps 60 MB in RAM: one node cannot hold the ~150 MB dataset, three can.
rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" env SLURM_NOPFS_VERIFY=yes srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=42 --nopfs-epochs=3 --nopfs-tiers=ram:60M \
	"$PYTHON" train.py --data "$WORK/data" --seed 42 --epochs 3 --workers 2 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") || rc=$?
kill -TERM "$watcher"
wait "$watcher" || { echo "not ok - the PFS watcher failed"; exit 1; }
cat "$WORK/srun.err"
((rc == 0)) || { echo "not ok - srun exited $rc"; exit 1; }
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ -n $job ]] || { echo "not ok - srun printed no job report"; exit 1; }
grep -q "^nopfs: PFS read" "$WORK/srun.err" || { echo "not ok - no PFS line in the summary"; exit 1; }

left=0
wait_gone "$job" || { echo "not ok - job $job did not end"; left=1; }
nothing_left "$job" || left=1
if ls "$WORK"/nopfs-"$job".json.*.node-* 2>/dev/null; then
	echo "not ok - node reports left beside the job report"
	left=1
fi

"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4500 --report "$WORK/nopfs-$job.json" --pfs-watch "$WORK/watch.json" --pfs-bound 1.02
"$PYTHON" - "$WORK/nopfs-$job.json" <<'PY' || left=1
import json, sys
nodes = json.load(open(sys.argv[1]))["per_node"]
assert len(nodes) == 3 and all(n["verify"]["on"] for n in nodes), [n["verify"] for n in nodes]
assert all(n["verify"]["mismatched_copies"] == 0 for n in nodes), [n["verify"] for n in nodes]
print("ok - SLURM_NOPFS_VERIFY=yes: every node checked its copies ("
      + ", ".join(str(n["verify"]["checked"]["samples"]) for n in nodes) + "), none differed")
PY
((left == 0))
