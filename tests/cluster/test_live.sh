#!/bin/bash
# The live view of a running job: while an unmodified PyTorch job (3 nodes x
# 2 ranks, 3 epochs, slowed down) runs, its user's `nopfs-report --live JOB
# --once` on the submit host shows every node's agent (prefetch per tier,
# samples by source, stalls per rank) with plausible figures; the other user
# (nopfs-other) is refused, from the submit host and on a node. After the job,
# its report plots. With admin_comment=yes, the job epilog hands node 0's
# one-line summary to sacctmgr for the job's AdminComment (the test cluster
# has no accounting database: a stand-in sacctmgr records its arguments).
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
admin=${NOPFS_CLUSTER_STATE:-/tmp/nopfs-cluster}/pfs/admin-comment
PLUGIN_EXTRA_ARGS="admin_comment=yes sacctmgr=$admin/sacctmgr"
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 1500 15
rm -rf "$admin"
mkdir -p "$admin/calls"
cat >"$admin/sacctmgr" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$(dirname "$0")/calls/$$"
SH
chmod 755 "$admin/sacctmgr"
fail=0
not_ok() {
	echo "not ok - $*"
	fail=1
}

(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=5 --nopfs-epochs=3 --nopfs-tiers=ram:60M \
	"$PYTHON" train.py --data "$WORK/data" --seed 5 --epochs 3 --workers 2 --sleep 0.25 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") &
srun_pid=$!
job=
for _ in $(seq 1 150); do
	job=$("$NC" run squeue -h -u nopfs -o %i 2>/dev/null | head -n 1) || true
	[[ -n $job ]] && break
	sleep 0.2
done
[[ -n $job ]] || { echo "not ok - the job did not appear"; exit 1; }
wait_agents "$job" || { echo "not ok - the agents of job $job never became ready"; exit 1; }
# Until every rank has read something: every node's figures then mean
# something (a node whose ranks start late has delivered nothing yet).
wait_reading out 30 || true

"${RUNU[@]}" "$PLUGIN_BIN/nopfs-report" --live "$job" --once --json >"$WORK/live.json" \
	2>"$WORK/live.err" || not_ok "--live --once --json: $(cat "$WORK/live.err")"
"${RUNU[@]}" "$PLUGIN_BIN/nopfs-report" --live "$job" --once >"$WORK/live.txt" \
	2>"$WORK/live.err" || not_ok "--live --once: $(cat "$WORK/live.err")"
cat "$WORK/live.txt"
grep -q "^nopfs job $job at .*: the agents of 3 of 3 nodes answered" "$WORK/live.txt" ||
	not_ok "the text view: $(head -n 1 "$WORK/live.txt")"
[[ $(grep -c "^  rank [0-5]: epoch" "$WORK/live.txt") == 6 ]] || not_ok "6 ranks not shown"

# The other user: Slurm refuses the step; on a node there is no agent of theirs.
other_rc=0
"$NC" run-other "$PLUGIN_BIN/nopfs-report" --live "$job" --once >"$WORK/other.out" \
	2>"$WORK/other.err" || other_rc=$?
((other_rc == 1)) || not_ok "nopfs-other's --live exited $other_rc"
grep -q "no node answered" "$WORK/other.err" || not_ok "nopfs-other: $(cat "$WORK/other.err")"
grep -q "delivered\|prefetch" "$WORK/other.out" && not_ok "nopfs-other saw: $(cat "$WORK/other.out")"
other_rc=0
"$NC" exec-node-other n1 "$PLUGIN_BIN/nopfs-report" --live-node "$job" >"$WORK/other-node.out" \
	2>&1 || other_rc=$?
((other_rc == 1)) || not_ok "nopfs-other's --live-node on n1 exited $other_rc"
if ! grep -q '"error"' "$WORK/other-node.out" || grep -q '"status"' "$WORK/other-node.out"; then
	not_ok "nopfs-other on n1: $(cat "$WORK/other-node.out")"
fi

rc=0
wait "$srun_pid" || rc=$?
cat "$WORK/srun.err"
((rc == 0)) || { echo "not ok - srun exited $rc"; exit 1; }

# The live figures: every node once, plausible against the job's.
"$PYTHON" - "$WORK/live.json" "$job" "$WORK/nopfs-$job.json" <<'PY' || not_ok "live figures"
import json, sys
nodes = json.load(open(sys.argv[1]))
job = json.load(open(sys.argv[3]))
assert len(nodes) == 3, nodes
status = [n["status"] for n in nodes]
assert [s["node"] for s in status] == [0, 1, 2], [s["node"] for s in status]
assert len({n["host"] for n in nodes}) == 3, [n["host"] for n in nodes]
assert all(s["job_id"] == sys.argv[2] for s in status)
# The three nodes' RAM holds the dataset (and some replicas); one node's cannot.
planned = sum(t["planned_samples"] for s in status for t in s["tiers"])
assert planned >= job["samples"], (planned, job["samples"])
assert all(0 < sum(t["planned_samples"] for t in s["tiers"]) < job["samples"] for s in status)
final = {n["node"]: n for n in job["per_node"]}
delivered_live = 0
for s in status:
    assert sorted(r["rank"] for r in s["ranks"]) == [2 * s["node"], 2 * s["node"] + 1], s["ranks"]
    for t in s["tiers"]:
        assert 0 <= t["filled"]["samples"] <= t["planned_samples"], t
    for r in s["ranks"]:
        assert 0 <= r["epoch"] <= 3 and 0 <= r["stall_p50_seconds"] <= r["stall_p99_seconds"], r
    got = sum(v["samples"] for k in ("delivered_staged", "delivered_on_request")
              for v in s[k].values())
    end = sum(v["samples"] for k in ("delivered_staged", "delivered_on_request")
              for v in final[s["node"]][k].values())
    assert 0 < got < end, (s["node"], got, end)
    assert s["pfs"]["bytes"] <= final[s["node"]]["pfs"]["bytes"], s["pfs"]
    delivered_live += got
print(f"ok - live: {delivered_live} of {job['delivered_total']['samples']} samples delivered "
      f"at the look, {planned} planned")
PY
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4500 --report "$WORK/nopfs-$job.json" --pfs-bound 1.02 || not_ok "the job's check"
"$PLUGIN_BIN/nopfs-report" --plot "$WORK/plots" "$WORK/nopfs-$job.json" 2>/dev/null ||
	not_ok "--plot of the job report"
for png in epochs stalls; do
	[[ $(head -c 8 "$WORK/plots/$png.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
		not_ok "$png.png is not a PNG file"
done
wait_gone "$job" || not_ok "job $job did not end"

# The epilog's sacctmgr call: the job, and the job report's figures in one line.
for _ in $(seq 1 50); do
	compgen -G "$admin/calls/*" >/dev/null && break
	sleep 0.2
done
"$PYTHON" - "$admin/calls" "$job" "$WORK/nopfs-$job.json" <<'PY' || not_ok "AdminComment"
import json, os, sys
calls = [open(os.path.join(sys.argv[1], name)).read().splitlines()
         for name in os.listdir(sys.argv[1])]
assert len(calls) == 1, f"{len(calls)} sacctmgr calls: {calls}"
args = calls[0]
assert len(args) == 7, args
assert args[:6] == ["-i", "modify", "job", "where", f"jobid={sys.argv[2]}", "set"], args
assert args[6].startswith("AdminComment=nopfs: 3/3 nodes; "), args[6]
job = json.load(open(sys.argv[3]))
line = args[6][len("AdminComment="):]
assert f"PFS {job['vs_dataset']:.2f} x dataset ({job['vs_naive']:.2f} x naive)" in line, line
assert f"{job['delivered_total']['samples']} samples delivered" in line, line
assert "," not in line and '"' not in line, line
print(f"ok - AdminComment: {line}")
PY
rm -rf "$admin"
((fail == 0)) && echo "ok - live view of job $job"
((fail == 0))
