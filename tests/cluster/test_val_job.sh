#!/bin/bash
# A training job with a validation pass after every epoch, on the real
# 3-node cluster, as a user runs it: srun --nopfs-dataset --nopfs-val-dataset
# with the unmodified PyTorch script (3 nodes x 2 ranks, 3 epochs; after each,
# DistributedSampler(shuffle=False) over the validation set). Every byte of
# both sets must be right, the agents must account for every validation
# read, the later passes must come from the nodes' memory, and the job must
# read the PFS at most 1.02 x (S + S_val). Nothing of the job may be left.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 1500 15
"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/val" --samples 301 --classes 5 \
	--mean 100K --sd 20K >/dev/null
chmod -R a+rX "$WORK/val"

rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-val-dataset="$WORK/val" --nopfs-seed=4 \
	--nopfs-epochs=3 --nopfs-tiers=ram:70M \
	"$PYTHON" train.py --data "$WORK/data" --val-data "$WORK/val" --seed 4 --epochs 3 \
	--workers 2 --out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") || rc=$?
cat "$WORK/srun.err"
((rc == 0)) || { echo "not ok - srun exited $rc"; exit 1; }
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ -n $job ]] || { echo "not ok - srun printed no job report"; exit 1; }
grep -q "^nopfs: validation set (" "$WORK/srun.err" ||
	{ echo "not ok - no validation set line in the summary"; exit 1; }
left=0
wait_gone "$job" || { echo "not ok - job $job did not end"; left=1; }
nothing_left "$job" || left=1
# 301 validation samples padded to 306 (51 a rank) every epoch
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4500 --val-data "$WORK/val" --val-samples 918 --report "$WORK/nopfs-$job.json" \
	--pfs-bound 1.02
"$PYTHON" - "$WORK/nopfs-$job.json" <<'PY' || left=1
import json, sys
report = json.load(open(sys.argv[1]))
v = report["val"]
# the first pass fills each node's share from the PFS; the two after it read memory
assert v["delivered"]["ram"]["samples"] >= 2 * 306, v
assert v["pfs_bytes"]["bytes"] <= 1.01 * v["bytes"], v
nodes = [n["val"] for n in report["per_node"]]
assert all(n["kept"]["samples"] == n["share"]["samples"] for n in nodes), nodes
print(f"ok - each node kept its ranks' share of the validation set "
      f"({', '.join(str(n['share']['samples']) for n in nodes)} samples); "
      f"{v['delivered']['ram']['samples']} of {v['requests']} validation reads from memory; "
      f"the set read {v['pfs_bytes']['bytes'] / v['bytes']:.3f} x S_val from the PFS")
PY
((left == 0))
