#!/bin/bash
# #SBATCH --nopfs-dataset=... with two plain sruns of the unmodified PyTorch
# script: the batch step starts the job's one agent step at job start, both
# sruns use it, and the second finds the caches warm (it reads almost nothing from the PFS); the
# job report, written to the job's report path at the end, accounts for
# both. Then salloc with the options and an srun inside; and a job without
# them, which gets no agent step.
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
#SBATCH --nopfs-dataset=$WORK/data --nopfs-seed=7 --nopfs-epochs=2
set -u
run() {
	srun $PYTHON $WORK/train.py --data $WORK/data --seed 7 --epochs 2 --workers 1 --out $WORK/out\$1-%r.txt
}
# the batch step started the agent step at job start
for i in \$(seq 1 50); do
	squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -q nopfs-agent && break
	sleep 0.1
done
echo "agent steps before the first srun: \$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -c nopfs-agent)"
run 1
echo "srun 1 exit \$?"
# the agents' reports so far (SIGUSR1), to tell the second srun's PFS reads apart
srun --overlap -N3 -n3 --ntasks-per-node=1 pkill -USR1 -u \$(id -u) -f "^[^ ]*/nopfs-agent --job-id \$SLURM_JOB_ID "
sleep 1
for f in nopfs-\$SLURM_JOB_ID.json.*.node-*; do cp "\$f" "after1.\${f##*.}"; done
run 2
echo "srun 2 exit \$?"
echo "agent steps: \$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -c nopfs-agent)"
JOB
run_batch 300
if ! grep -q "srun 1 exit 0" "$WORK/job.out" || ! grep -q "srun 2 exit 0" "$WORK/job.out"; then
	echo "not ok - an srun of the batch job failed"
	fail=1
fi
grep -q "agent steps before the first srun: 1" "$WORK/job.out" ||
	{ echo "not ok - no agent step at the batch job's start"; fail=1; }
grep -q "agent steps: 1" "$WORK/job.out" || { echo "not ok - not exactly one agent step"; fail=1; }
if [[ -e $WORK/nopfs-$job.json ]]; then
	for s in 1 2; do
		"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
			--outs "$WORK/out$s-*.txt" --samples 1200 || fail=1
	done
	"$PYTHON" - "$WORK" "$job" <<'PY' || fail=1
import glob, json, os, sys
work, job = sys.argv[1], sys.argv[2]
report = json.load(open(os.path.join(work, f"nopfs-{job}.json")))
S = report["dataset_bytes"]
nodes = [json.load(open(p)) for p in glob.glob(os.path.join(work, "after1.node-*"))]
assert len(nodes) == 3, f"{len(nodes)} node reports after the first srun"
first = sum(n["pfs"]["bytes"] - n["pfs"]["probe_bytes"] for n in nodes)
second = report["pfs_bytes"] - first
assert report["nodes_missing"] == [], report["nodes_missing"]
assert report["delivered_total"]["samples"] == 2 * 1200, (
    report["delivered_total"], report["problems"],
    [(n["node"], n["fallbacks"], n["stream"]) for n in report["per_node"]])
# A peer too slow (a loaded machine) is left for the PFS: only a data plane
# without failures must keep the second srun off the PFS.
failures = sum((n.get("peers") or {}).get("timeouts", 0) + (n.get("peers") or {}).get("errors", 0)
               for n in report["per_node"])
if failures == 0:
    assert second <= 0.05 * S, f"the second srun read {second / S:.3f} x S from the PFS"
print(f"ok - one agent step for two sruns; PFS: first srun {first / S:.2f} x S, "
      f"second {second / S:.3f} x S; {report['delivered_total']['samples']} samples delivered; "
      f"{failures} peer failures")
PY
else
	echo "not ok - no job report at $WORK/nopfs-$job.json"
	fail=1
fi
ls "$WORK"/nopfs-"$job".json.*.node-* 2>/dev/null && { echo "not ok - node reports left"; fail=1; }

# Two sruns racing to be first: exactly one agent step, and both steps' tasks
# get their node's agent.
# (The option in the environment, not #SBATCH: the batch step would start it.)
cat >"$WORK/race.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2
export SLURM_NOPFS_DATASET=$WORK/data
for i in 1 2; do
	srun -N3 -n3 --ntasks-per-node=1 sh -c 'echo "socket=\${NOPFS_SOCKET:-none}"' >race\$i.out &
done
wait
echo "agent steps: \$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -c nopfs-agent)"
JOB
chmod 755 "$WORK/race.sh"
(cd "$WORK" && timeout -k 5 120 "${RUNU[@]}" sbatch --wait -o "$WORK/race.out" "$WORK/race.sh" >/dev/null) || true
served=$(cat "$WORK"/race[12].out 2>/dev/null | grep -c "^socket=/tmp/nopfs-" || true)
if grep -q "agent steps: 1" "$WORK/race.out" && [[ $served == 6 ]]; then
	echo "ok - two racing sruns: one agent step, all 6 tasks served"
else
	echo "not ok - two racing sruns: $(cat "$WORK/race.out"); $served of 6 tasks got an agent"
	fail=1
fi

# salloc with the options, srun inside: salloc prints the job report at the end.
(cd "$WORK" && timeout -k 5 120 "${RUNU[@]}" salloc -N2 --ntasks-per-node=1 \
	--nopfs-dataset="$WORK/data" --nopfs-epochs=1 --nopfs-report="$WORK/salloc.json" \
	srun "$PYTHON" train.py --data "$WORK/data" --epochs 1 --workers 1 --out "$WORK/s3-%r.txt" \
	>"$WORK/salloc.out" 2>&1) || { echo "not ok - salloc job failed"; cat "$WORK/salloc.out"; fail=1; }
wait_report "$WORK/salloc.json" 10 || true
grep -q "^nopfs: job report: $WORK/salloc.json" "$WORK/salloc.out" ||
	{ echo "not ok - salloc printed no job report"; fail=1; }
salloc_job=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$WORK/salloc.out")
if [[ -z $salloc_job || -e /tmp/nopfs-$salloc_job.srun ]]; then
	echo "not ok - salloc left its srun's lock /tmp/nopfs-$salloc_job.srun"
	fail=1
fi
if [[ -e $WORK/salloc.json ]] && "$PYTHON" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["nodes_expected"] == 2 and r["nodes_missing"] == [], r
assert r["delivered_total"]["samples"] == 600, r["delivered_total"]
' "$WORK/salloc.json"; then
	echo "ok - salloc + srun: agents on 2 nodes, 600 samples delivered, report written and printed"
else
	echo "not ok - salloc + srun: no complete report"; cat "$WORK/salloc.out"; fail=1
fi

# no option: no agent step, nothing in the tasks' environment
# shellcheck disable=SC2016 # expanded by the tasks' shell
out=$(cd "$WORK" && timeout 60 "${RUNU[@]}" srun -N3 --ntasks-per-node=1 bash -c \
	'echo "steps=$(squeue -s -h -j $SLURM_JOB_ID -o %j | grep -c nopfs-agent) preload=${LD_PRELOAD:-} socket=${NOPFS_SOCKET:-}"' | sort -u)
if [[ $out == "steps=0 preload= socket=" ]]; then
	echo "ok - a job without nopfs options: no agent step, no nopfs environment"
else
	echo "not ok - a job without nopfs options: $out"
	fail=1
fi
# --nopfs-preload=no: the agent's socket, no interposer
# shellcheck disable=SC2016 # expanded by the tasks' shell
out=$(cd "$WORK" && timeout 120 "${RUNU[@]}" srun -N2 --ntasks-per-node=1 \
	--nopfs-dataset="$WORK/data" --nopfs-preload=no \
	sh -c 'echo "preload=${LD_PRELOAD:-} socket=${NOPFS_SOCKET:+set}"' 2>/dev/null | sort -u)
if [[ $out == "preload= socket=set" ]]; then
	echo "ok - --nopfs-preload=no: the tasks get the agent's socket, no LD_PRELOAD"
else
	echo "not ok - --nopfs-preload=no: $out"
	fail=1
fi
exit "$fail"
