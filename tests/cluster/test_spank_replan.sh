#!/bin/bash
# A batch job whose sruns change the nopfs options: the job's one agent step
# re-plans for each of them. Another seed and epoch count, then another task
# layout on two of the three nodes: the same dataset keeps every cached sample
# where it is (almost nothing read from the PFS again). Another dataset: every
# node's agent (the one the step does not run on too) plans for it, with the
# catalog node 0 built and shared; it is read from the PFS once. Back to the first dataset: planned again. Every
# srun reads correct data, none is told it is served unplanned, and helper
# sruns with --nopfs-plan=no leave the plan alone. Last, a dataset without
# samples: every agent refuses it (and keeps its plan), each node says so.
# Then two steps at once: both read the right data, and the job report says
# how many requests of the earlier one came under the later one's plan.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 600 6
mkdir "$WORK/empty"
"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/data2" --samples 300 --classes 3 \
	--mean 100K --sd 20K >/dev/null
chmod -R a+rX "$WORK"
fail=0

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2
#SBATCH --nopfs-dataset=$WORK/data --nopfs-seed=7 --nopfs-epochs=1
set -u
train() { # NAME, then srun's options, then -- and the script's
	local name=\$1; shift
	local opts=()
	while [[ \$1 != -- ]]; do opts+=("\$1"); shift; done
	shift
	srun "\${opts[@]}" $PYTHON $WORK/train.py --workers 1 "\$@" --out $WORK/out-\$name-%r.txt
	echo "srun \$name exit \$?"
	snapshot \$name
}
snapshot() { # the agents' reports now (SIGUSR1), by a helper step that keeps the plan
	srun --nopfs-plan=no --overlap -N3 -n3 --ntasks-per-node=1 \
		pkill -USR1 -u \$(id -u) -f "^[^ ]*/nopfs-agent --job-id \$SLURM_JOB_ID "
	sleep 1
	for f in nopfs-\$SLURM_JOB_ID.json.*.node-*; do cp "\$f" "after-\$1.\${f##*.}"; done
}
train first -- --data $WORK/data --seed 7 --epochs 1
train seed --nopfs-seed=8 --nopfs-epochs=2 -- --data $WORK/data --seed 8 --epochs 2
train layout -N2 -w n1,n3 -n4 --ntasks-per-node=2 --nopfs-seed=9 -- --data $WORK/data --seed 9 --epochs 1
train dataset --nopfs-dataset=$WORK/data2 --nopfs-seed=3 -- --data $WORK/data2 --seed 3 --epochs 1
train back -- --data $WORK/data --seed 7 --epochs 1
# a dataset without samples: every agent refuses it and keeps its plan
srun --nopfs-dataset=$WORK/empty true 2>$WORK/refused.err
echo "srun refused exit \$?"
snapshot refused
# two steps at once: the later one's plan wins, the earlier one's reads stay right
srun --overlap --nopfs-seed=11 --nopfs-epochs=3 $PYTHON $WORK/train.py --workers 1 \
	--data $WORK/data --seed 11 --epochs 3 --sleep 0.1 --out $WORK/out-long-%r.txt &
long=\$!
sleep 4
srun --overlap --nopfs-seed=12 $PYTHON $WORK/train.py --workers 1 --data $WORK/data --seed 12 \
	--epochs 1 --out $WORK/out-short-%r.txt
echo "srun short exit \$?"
wait \$long
echo "srun long exit \$?"
echo "agent steps: \$(squeue -s -h -j \$SLURM_JOB_ID -o %j | grep -c nopfs-agent)"
JOB
run_batch 600
for name in first seed layout dataset back short long; do
	grep -q "srun $name exit 0" "$WORK/job.out" || { echo "not ok - srun $name failed"; fail=1; }
done
grep -q "agent steps: 1" "$WORK/job.out" || { echo "not ok - not exactly one agent step"; fail=1; }
if grep -E "served, not planned|did not re-plan" "$WORK/job.out"; then
	echo "not ok - a step was not planned for"
	fail=1
fi
refused=$(grep -c "did not re-plan for this step (it refused" "$WORK/refused.err" || true)
if grep -q "srun refused exit 0" "$WORK/job.out" && [[ $refused == 3 ]]; then
	echo "ok - a step the agents cannot plan for: each of its 3 nodes says so, the step runs"
else
	echo "not ok - a step the agents cannot plan for: $refused of 3 nodes said so"
	cat "$WORK/refused.err"
	fail=1
fi
check() { # NAME DATA SAMPLES
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$2" --outs "$WORK/out-$1-*.txt" \
		--samples "$3" || { echo "not ok - srun $1 read wrong data"; fail=1; }
}
check first "$WORK/data" 600
check seed "$WORK/data" 1200
check layout "$WORK/data" 600
check dataset "$WORK/data2" 300
check back "$WORK/data" 600
check short "$WORK/data" 600
check long "$WORK/data" 1800
if [[ -e $WORK/nopfs-$job.json ]]; then
	"$PYTHON" - "$WORK" "$job" <<'PY' || fail=1
import glob, json, os, sys
from torchvision.datasets import ImageFolder

work, job = sys.argv[1], sys.argv[2]
def size(root):
    ds = ImageFolder(root, loader=lambda p: p, is_valid_file=lambda p: p.endswith(".JPEG"))
    return sum(os.path.getsize(p) for p, _ in ds.samples)
S, S2 = size(os.path.join(work, "data")), size(os.path.join(work, "data2"))
def nodes(name):
    reports = {r["node"]: r for r in (json.load(open(p))
               for p in glob.glob(os.path.join(work, f"after-{name}.node-*")))}
    assert sorted(reports) == [0, 1, 2], f"after srun {name}: node reports {sorted(reports)}"
    return reports
def pfs(name):
    return sum(r["pfs"]["bytes"] - r["pfs"]["probe_bytes"] for r in nodes(name).values())
steps = ["first", "seed", "layout", "dataset", "back"]
read = {s: pfs(s) - (pfs(steps[i - 1]) if i else 0) for i, s in enumerate(steps)}
print("# PFS per srun (x its dataset): " + ", ".join(
    f"{s} {read[s] / (S2 if s == 'dataset' else S):.3f}" for s in steps))
assert read["first"] <= 1.05 * S, read
assert read["seed"] <= 0.05 * S and read["layout"] <= 0.05 * S, read
assert 0.95 * S2 <= read["dataset"] <= 1.3 * S2, (read["dataset"], S2)
assert 0.95 * S <= read["back"] <= 1.3 * S, (read["back"], S)
# what each node planned: the seed and dataset changes everywhere, the layout
# on the step's two nodes only (node 1 keeps its tiers as they are)
for name, expect in (("seed", [1, 1, 1]), ("layout", [1, 0, 1]), ("dataset", [1, 1, 1]),
                     ("back", [1, 1, 1])):
    before = nodes(steps[steps.index(name) - 1])
    after = nodes(name)
    planned = [len(after[n]["replans"]) - len(before[n]["replans"]) for n in range(3)]
    assert planned == expect, f"srun {name}: plans per node {planned}, expected {expect}"
    took = []
    for n in range(3):
        for plan in after[n]["replans"][len(before[n]["replans"]):]:
            assert plan["outcome"] == "planned", (name, n, plan)
            took.append(plan["seconds"])
    print(f"# srun {name}: agents planned for it in at most {max(took):.2f} s")
    # the step's reads on the nodes that planned for it follow their new streams
    reads = {"seed": 1200, "layout": 600, "dataset": 300, "back": 600}[name] / sum(expect)
    mismatched = [after[n]["stream"]["mismatched_requests"] for n in range(3) if expect[n]]
    print(f"# srun {name}: requests outside the plan per node {mismatched} of ~{reads:.0f}")
    assert max(mismatched) <= 0.25 * reads, (name, [after[n]["stream"] for n in range(3)])
back, refused = nodes("back"), nodes("refused")
for n in range(3):
    last = refused[n]["replans"][-1]
    assert last["outcome"] == "refused" and last.get("reason"), (n, last)
    assert len(refused[n]["replans"]) == len(back[n]["replans"]) + 1, (n, refused[n]["replans"])
    assert refused[n]["plan"] == back[n]["plan"], (n, refused[n]["plan"], back[n]["plan"])
    assert refused[n]["job"]["dataset"] == back[n]["job"]["dataset"], n
# another dataset's catalog: built by node 0 alone and shared, never by every node
for name in ("dataset", "back"):
    sources = [nodes(name)[n]["replans"][-1]["catalog"] for n in range(3)]
    assert sources == ["built here", "from node 0", "from node 0"], (name, sources)
assert nodes("seed")[0]["replans"][-1]["catalog"] == "kept"
kept = sum(nodes("seed")[n]["replans"][-1]["kept_samples"] for n in range(3))
assert kept >= 600, f"the seed change kept {kept} cached samples"
report = json.load(open(os.path.join(work, f"nopfs-{job}.json")))
assert report["nodes_missing"] == [], report["nodes_missing"]
# steps one after the other: none of their requests came under another's plan;
# two at once: the earlier one's requests after the later one's plan are told
for n in range(3):
    assert refused[n]["superseded"]["requests"] == 0, (n, refused[n]["superseded"])
superseded = [p for p in report["problems"] if "from tasks of a step planned earlier" in p]
assert superseded, report["problems"]
print(f"# two steps at once: {superseded[0]}")
assert report["replans"] == 6, report["replans"]
delivered = report["delivered_total"]["samples"]
assert delivered >= 600 + 1200 + 600 + 300 + 600, (delivered, report["problems"])
print(f"ok - one agent step planned for {report['replans']} later steps; {kept} cached samples "
      f"kept for the new seed; {delivered} samples delivered")
PY
else
	echo "not ok - no job report at $WORK/nopfs-$job.json"
	fail=1
fi
wait_gone "$job" || true
nothing_left "$job" || fail=1
exit "$fail"
