#!/bin/bash
# Agents on 3 nodes of the real test cluster: a step of their own (one task
# per node, PMIx), node 0 shares the catalog, they exchange records and plan
# together; then the unmodified PyTorch script (3 nodes x 2 ranks, 2 workers
# each, 3 epochs) reads through the interposer. Every byte must be right and
# every node's agent must report; nothing may be left on the nodes.
#
# With "broken-peer" (test_multinode_broken_peer.sh), node 1's data plane has
# no transport that works: the others cannot reach it nor it them, and what it
# keeps must come from the PFS instead, still byte-exact.
#
# Uses the cluster of NOPFS_CLUSTER_STATE if it is up (and leaves it up);
# otherwise starts one and tears it down at exit. Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail

MODE=${1:-normal}
PYTHON=${NOPFS_PYTHON:-/usr/bin/python3}

"$PYTHON" -c 'import torch, torchvision' 2>/dev/null || {
	[[ ${NOPFS_REQUIRE_TORCH:-0} == 1 ]] && { echo "torch required"; exit 1; }
	echo "SKIP: no torch"
	exit 77
}

# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
. "$(dirname "$0")/cluster_test_lib.sh"

# What the nodes run must be on the PFS: each node has its own /tmp, where a
# build tree may well be.
mkdir -p "$WORK/bin"
cp "$BUILDDIR/nopfs-agent" "$BUILDDIR/lib/.libs/libnopfs_preload.so" "$WORK/bin/"
cp "$SRCDIR/tests/agent/system/train_script.py" "$WORK/bin/train.py"
chmod -R a+rX "$WORK/bin"
"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/data" --samples 1500 --classes 15 \
	--mean 100K --sd 20K >/dev/null
chmod -R a+rX "$WORK/data"
# The job adds a file to this class once the training is over (snapshot semantics).
CHANGED=$(find "$WORK/data" -mindepth 1 -maxdepth 1 -type d | sort | head -n 1)
chmod 777 "$CHANGED"
S=$(du -sb "$WORK/data" | cut -f1)
# The nodes' namespaces do not isolate shared memory: UCX must use TCP.
cat >"$WORK/bin/agent-env" <<ENV
#!/bin/bash
if [ "$MODE" = broken-peer ] && [ "\$SLURM_NODEID" = 1 ]; then
	export UCX_TLS=nonexistent
else
	export UCX_TLS=tcp
fi
exec "\$@"
ENV
chmod 755 "$WORK/bin/agent-env"
# Each node keeps 60 MB in RAM: one node cannot hold the ~150 MB dataset, three can.
cat >"$WORK/job.sh" <<JOB
#!/bin/bash
set -u
# the agent step, started again when its agents never reach each other
# (exit status 75), as the SPANK plugin does
(for attempt in 1 2 3; do
	srun --overlap -N3 -n3 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=0 -J nopfs-agent \\
		$WORK/bin/agent-env $WORK/bin/nopfs-agent --dataset $WORK/data --seed 42 --epochs 3 \\
		--step-tasks '2(x3)' --tier ram:60M --share-dir $WORK --report $WORK/report-%n.json \\
		--log $WORK/agent-%n.log --probe-budget 1 --fence-timeout 30 --verify
	rc=\$?
	[ \$rc = 75 ] || exit \$rc
	echo "agent step: attempt \$attempt asks to be started again"
done) &
for i in \$(seq 1 300); do
	ready=\$(srun --overlap -N3 -n3 --ntasks-per-node=1 bash -c \\
		'test -e /tmp/nopfs-\$SLURM_JOB_ID/ready && echo ready' | grep -c ready)
	[ "\$ready" = 3 ] && break
	sleep 0.2
done
echo "agents ready: \$ready"
srun --overlap -N3 --ntasks-per-node=2 --kill-on-bad-exit=1 \\
	env NOPFS_SOCKET=/tmp/nopfs-\$SLURM_JOB_ID/agent.sock \\
	NOPFS_STAGE_DIR=/dev/shm/nopfs-\$SLURM_JOB_ID NOPFS_DATASET=$WORK/data \\
	LD_PRELOAD=$WORK/bin/libnopfs_preload.so \\
	$PYTHON $WORK/bin/train.py --data $WORK/data --seed 42 --epochs 3 \\
	--workers 2 --out $WORK/out-%r.txt
echo "training exit \$?"
# Snapshot semantics: a class changed during the job. Node 0's check (every
# 10 s) marks it and tells the other agents; then every node lists it as it is.
echo added >$CHANGED/added.JPEG
sleep 12
timeout -k 5 60 srun --overlap -N3 -n3 --ntasks-per-node=1 \
	env NOPFS_SOCKET=/tmp/nopfs-\$SLURM_JOB_ID/agent.sock \
	NOPFS_STAGE_DIR=/dev/shm/nopfs-\$SLURM_JOB_ID NOPFS_DATASET=$WORK/data NOPFS_RANK=9 \
	LD_PRELOAD=$WORK/bin/libnopfs_preload.so \
	$PYTHON -c 'import os, sys; open(sys.argv[2] + os.environ["SLURM_NODEID"], "w").write(repr(sorted(os.listdir(sys.argv[1]))))' \
	$CHANGED $WORK/changed-listing-
echo "listing exit \$?"
rm -f $CHANGED/added.JPEG # the samples checked below are the dataset's as trained on
# The job ends here: Slurm sends the agent step SIGTERM (KillWait grace).
JOB
chmod 755 "$WORK/job.sh"
job=$(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" sbatch --parsable --wait -N3 \
	--ntasks-per-node=2 -o "$WORK/job.out" "$WORK/job.sh") || true
job=${job%%;*}
cat "$WORK/job.out"
# The agents write their reports on SIGTERM; give them the grace they have.
for _ in $(seq 1 100); do
	[[ $(find "$WORK" -name 'report-*.json' | wc -l) == 3 ]] && break
	sleep 0.1
done
left=0
for node in n1 n2 n3; do
	if "$NC" exec-node "$node" ls "/tmp/nopfs-$job" "/dev/shm/nopfs-$job" >/dev/null 2>&1; then
		echo "not ok - node $node still has /tmp/nopfs-$job or /dev/shm/nopfs-$job"
		left=1
	fi
done

"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4500
"$PYTHON" - "$WORK" "$S" "$MODE" <<'PY'
import glob, json, os, sys
work, S, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
checked = 6 * 250 * 3
reports = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(work, "report-*.json")))]
assert sorted(r["node"] for r in reports) == [0, 1, 2], "a node's report is missing"
delivered = sum(sum(v["samples"] for v in r[k].values()) for r in reports
                for k in ("delivered_staged", "delivered_on_request"))
planned = sum(t["planned_bytes"] for r in reports for t in r["tiers"])
assert delivered == checked, (
    f"the agents delivered {delivered} of the {checked} samples read; per node: "
    + "; ".join(f"{r['node']}: fallbacks {r['fallbacks']}, watch overflows "
                f"{r['connections']['watch_overflows']}, unused {r['staging']['unused_samples']}"
                for r in reports))
assert planned >= S, f"the nodes plan to keep {planned} of {S} bytes"
pfs = sum(r["pfs"]["bytes"] - r["pfs"]["probe_bytes"] for r in reports)
planes = {r["node"]: r["peers"] for r in reports}
if mode == "broken-peer":
    assert planes[1] is None, f"node 1 reports a data plane: {planes[1]}"
    del planes[1]
peer_gets = sum(p["gets"] + p["requests"] for p in planes.values())
assert peer_gets > 0, "no sample came from another node's agent"
# Over TCP (no hardware RDMA), fetches go over the agents' own sockets (UCX
# only for one that finds all 8 connections to its node busy).
streamed = sum(p["stream_requests"] for p in planes.values())
requested = sum(p["requests"] for p in planes.values())
assert streamed > 0 and 10 * streamed >= 9 * requested, planes
failures = sum(p["timeouts"] + p["errors"] for p in planes.values())
# A peer too slow (a loaded machine) is left for the PFS: only a data plane
# without failures must keep the job near one read of the dataset.
if mode == "normal" and failures == 0:
    assert pfs <= 1.02 * S, f"the job read {pfs / S:.2f} x S from the PFS with peers on"
# --verify: every copy from a tier or another node had its sample's CRC32C.
for r in reports:
    v = r["verify"]
    assert v["on"] and v["mismatched_copies"] == 0, f"node {r['node']}: verify {v}"
    assert v["checked"]["samples"] + v["recorded"]["samples"] > 0, f"node {r['node']}: {v}"
print("ok - --verify: " + ", ".join(
    f"node {r['node']} checked {r['verify']['checked']['samples']} copies "
    f"({r['verify']['recorded']['samples']} sums recorded)" for r in reports)
    + ", none differed")
# The dataset's metadata: scanned by node 0, loaded by the others from its
# share, answered every rank's listing and stat calls into the dataset.
for r in reports:
    meta = r["metadata"]
    assert meta["published"] and meta["directories"] == 16 and meta["unlisted"] == 0, (
        f"node {r['node']}: metadata {meta}")
# ... and the class changed after the training: every node saw the change.
    assert meta["changed_directories"] == 1, f"node {r['node']}: metadata {meta}"
listings = [open(os.path.join(work, f"changed-listing-{n}")).read() for n in range(3)]
assert all("'added.JPEG'" in listing for listing in listings), listings
ranks = {k: v for r in reports for k, v in r["metadata"]["per_rank"].items()
         if int(k) < 6}
assert sorted(ranks) == [str(k) for k in range(6)], f"metadata counts of ranks {sorted(ranks)}"
assert all(c["served"] > 0 and c["passed"] == 0 for c in ranks.values()), ranks
print(f"ok - a class changed during the job is listed as it is on every node")
print(f"ok - metadata served to every rank, none passed to the PFS: "
      + ", ".join(f"{k}: {ranks[k]['served']}" for k in sorted(ranks)))
print(f"ok - 3 agents planned together ({planned / S:.2f} x S kept across nodes); "
      f"{checked} samples correct; {peer_gets} samples from peers "
      f"({streamed} over the stream path); "
      f"{failures} peer failures; PFS read {pfs / S:.2f} x S ({mode})")
PY
((left == 0)) || exit 1
grep -q "agents ready: 3" "$WORK/job.out"
