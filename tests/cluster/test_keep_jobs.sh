#!/bin/bash
# Kept caches across jobs on the real 3-node cluster, as a user runs them
# (plugstack cache_base in each node's own /tmp):
#  1. a pre-warm job: srun --nopfs-keep=yes nopfs-stage, one task per node,
#     returns once every node's agent holds what its plan gives it; the
#     nodes then keep it (the job report says how much);
#  2. between the jobs one file of the dataset is rewritten (same size);
#  3. a training job on another layout (2 ranks per node) and seed, with
#     --nopfs-keep=yes: the unmodified PyTorch script reads every byte right
#     (the rewritten file's new bytes too), the agents read at most 2% of
#     the dataset from the PFS, the rewritten file among it (stale: never
#     served from the cache), and the kept caches stay for the next job;
#  4. with cache_limit below what a cache takes, the epilog of a later job
#     on the node removes it (the limit is enforced).
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
BASE=/tmp/nopfs-keep-jobs # each node's own /tmp
PLUGIN_EXTRA_ARGS="cache_base=$BASE"
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
fail=0
not_ok() {
	echo "not ok - $*"
	fail=1
}
cache_base_setup "$BASE"
job_dataset 1500 15
S=$(du -sb "$WORK/data" | cut -f1)
TIERS="ram:20M,ssd:$NOPFS_CLUSTER_SSD:60M" # 80 MB a node: the 3 hold the ~150 MB dataset

# srun_job NAME ARGS...: srun ARGS as the test user in WORK; sets job
srun_job() {
	local name=$1 rc=0
	shift
	(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun "$@" >"$WORK/$name.out" \
		2>"$WORK/$name.err") || rc=$?
	cat "$WORK/$name.out" "$WORK/$name.err"
	((rc == 0)) || not_ok "$name: srun exited $rc"
	job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/$name.err")
	[[ -n $job ]] || { not_ok "$name: srun printed no job report"; exit 1; }
	wait_gone "$job" || not_ok "$name: job $job did not end"
	nothing_left "$job" || fail=1
}

# 1. pre-warm
srun_job prewarm -N3 --ntasks-per-node=1 --nopfs-dataset="$WORK/data" --nopfs-keep=yes \
	--nopfs-tiers="$TIERS" "$PLUGIN_BIN/nopfs-stage" --interval 2
[[ $(grep -c "in the node's tiers after" "$WORK/prewarm.out") -ge 3 ]] ||
	not_ok "nopfs-stage printed no final line on some node"
grep -q "^nopfs: kept caches (3 nodes): 0 samples" "$WORK/prewarm.err" ||
	not_ok "the pre-warm job's summary has no kept caches line"
prewarm=$job

# 2. a file rewritten between the jobs
changed=$(find "$WORK/data" -name '*.JPEG' | sort | sed -n 100p)
"$PYTHON" - "$changed" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    f.seek(0)
    f.write(data)
PY

# 3. the training job
srun_job train -N3 --ntasks-per-node=2 --nopfs-dataset="$WORK/data" --nopfs-keep=yes \
	--nopfs-seed=7 --nopfs-epochs=2 --nopfs-tiers="$TIERS" \
	"$PYTHON" train.py --data "$WORK/data" --seed 7 --epochs 2 --workers 2 \
	--out "$WORK/out-%r.txt"
grep -q "^nopfs: kept caches (3 nodes): " "$WORK/train.err" ||
	not_ok "the training job's summary has no kept caches line"
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 3000 --report "$WORK/nopfs-$job.json" --pfs-bound 0.02 || fail=1
"$PYTHON" - "$WORK/nopfs-$prewarm.json" "$WORK/nopfs-$job.json" "$S" <<'PY' || fail=1
import json, sys
prewarm, train = (json.load(open(p)) for p in sys.argv[1:3])
S = int(sys.argv[3])
k0, k = prewarm["kept"], train["kept"]
assert k0["nodes"] == 3 and k0["kept"]["samples"] >= 1500, k0
assert k["found"]["samples"] == k0["kept"]["samples"] - 1, (k0, k)
assert k["stale"]["samples"] == 1 and k["mismatched"]["samples"] == 0, k
pfs = train["pfs_bytes"]
assert pfs <= 0.02 * S, f"the training job read {pfs / S:.3f} x S from the PFS"
assert k["read"]["samples"] >= 1499, k
assert k["kept"]["samples"] >= 1500, k
for node in train["per_node"]:
    assert node["kept"]["committed"], node["kept"]
print(f"ok - pre-warm kept {k0['kept']['samples']} samples on 3 nodes; the training job on "
      f"another layout and seed took {k['read']['samples']} from them, found 1 stale "
      f"(rewritten) and read {pfs / S:.4f} x S from the PFS")
PY
for node in n1 n2 n3; do
	# shellcheck disable=SC2016 # expanded by the node's shell
	"$NC" exec-node "$node" sh -c 'ls $0/*/*/manifest' "$BASE" >/dev/null ||
		not_ok "no kept cache on $node after the jobs"
done

# 4. the limit: a job's epilog removes caches over cache_limit (1 byte)
NOPFS_SPANK_ARGS="$NOPFS_SPANK_ARGS cache_limit=1" "$NC" up --nodes 3 >/dev/null
job=$(cd "$WORK" && timeout -k 5 60 "${RUNU[@]}" sbatch --parsable --wait -w n1 -o /dev/null \
	--wrap true) || true
job=${job%%;*}
wait_gone "$job" || not_ok "job $job did not end"
# shellcheck disable=SC2016 # expanded by the node's shell
if "$NC" exec-node n1 sh -c 'ls $0/*/*/manifest' "$BASE" 2>/dev/null; then
	not_ok "the epilog left n1's kept cache over cache_limit"
else
	echo "ok - the epilog removed n1's kept cache over cache_limit"
fi
exit "$fail"
