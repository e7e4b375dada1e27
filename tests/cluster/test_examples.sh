#!/bin/bash
# contrib/examples on the test cluster, as a user would run them:
# plan-before-job.sh (nopfs-plan, then it submits ddp-unchanged.sbatch: the
# unchanged PyTorch DDP script under the interposer; a plan that would read
# the PFS too often is not submitted), ddp-dataset.sbatch (the DDP script
# with nopfs.Dataset, spawned DataLoader workers, no interposer) and
# mpi.sbatch (the C/MPI program, when built). Every sample's bytes are
# checked against the files (SHA-256 per sample for the DDP scripts, sizes
# and checksums for the MPI ranks), and each job report against the reads.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 300 3
EX=$WORK/examples
cp -r "$SRCDIR/contrib/examples" "$EX"
have_mpi=0
if [[ -x $BUILDDIR/benchmarks/e2e/train_mpi ]]; then
	cp "$BUILDDIR/benchmarks/e2e/train_mpi" "$EX/"
	have_mpi=1
fi
chmod -R a+rX "$EX"
export PATH=$PLUGIN_BIN:$PATH PYTHON
fail=0

# have_report FILE: the job report, written at the job's end (10 s at most)
have_report() {
	wait_report "$1" 10 && return 0
	echo "not ok - no job report at $1"
	return 1
}

# 1. The planner, then the unchanged DDP script. A plan that would read the
# PFS more than MAX_PFS times is not submitted.
if out=$(cd "$EX" && timeout 60 "${RUNU[@]}" env DATA="$WORK/data" TIERS=ram:1M \
	./plan-before-job.sh 2>&1); then
	echo "not ok - plan-before-job.sh submitted a job whose tiers hold 3 MB of 30: $out"
	fail=1
elif grep -q "not submitted" <<<"$out" && ! grep -q "Submitted batch job" <<<"$out"; then
	echo "ok - plan-before-job.sh: tiers too small for the dataset: not submitted"
else
	echo "not ok - plan-before-job.sh with tiers too small: $out"
	fail=1
fi
(cd "$EX" && timeout -k 5 300 "${RUNU[@]}" env DATA="$WORK/data" EPOCHS=2 SEED=7 \
	TIERS=ram:16M REPORT="$WORK/ddp.json" DIGESTS="$WORK/ddp-%r.txt" \
	./plan-before-job.sh --wait -o "$WORK/ddp.out" >"$WORK/plan.out" 2>&1) || true
cat "$WORK/plan.out" "$WORK/ddp.out" 2>/dev/null || true
if grep -q "^owner-first" "$WORK/plan.out" && grep -q "Submitted batch job" "$WORK/plan.out" &&
	grep -q "^epoch 1: mean loss" "$WORK/ddp.out"; then
	echo "ok - plan-before-job.sh printed the plan and submitted ddp-unchanged.sbatch, which trained 2 epochs"
else
	echo "not ok - plan-before-job.sh + ddp-unchanged.sbatch"
	fail=1
fi
if have_report "$WORK/ddp.json"; then
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/ddp-*.txt" --samples 600 --report "$WORK/ddp.json" || fail=1
else
	fail=1
fi

# 2. The DDP script with nopfs.Dataset, spawned workers, no interposer: every
# sample the agents delivered went through libnopfs.
(cd "$EX" && timeout -k 5 300 "${RUNU[@]}" env DATA="$WORK/data" EPOCHS=2 SEED=3 \
	WORKER_START=spawn REPORT="$WORK/dataset.json" DIGESTS="$WORK/dataset-%r.txt" \
	PYTHONPATH="$PLUGIN_PREFIX/python" \
	sbatch --wait -o "$WORK/dataset.out" --export=ALL ddp-dataset.sbatch >/dev/null 2>&1) || true
cat "$WORK/dataset.out" 2>/dev/null || true
if grep -q "^epoch 1: mean loss" "$WORK/dataset.out" && ! grep -q "nopfs.Dataset\[" "$WORK/dataset.out"; then
	echo "ok - ddp-dataset.sbatch trained 2 epochs with nopfs.Dataset (spawned workers), no warning"
else
	echo "not ok - ddp-dataset.sbatch"
	fail=1
fi
if have_report "$WORK/dataset.json"; then
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/dataset-*.txt" --samples 600 --report "$WORK/dataset.json" || fail=1
	PYTHONPATH=$PLUGIN_PREFIX/python "$PYTHON" -m nopfs.report "$WORK/dataset.json" | sed 's/^/# /'
else
	fail=1
fi

# 3. A chain of three jobs: the first stops after epoch 0 (as at a time
# limit), the second goes on from its checkpoint with --nopfs-start-epoch=1
# and stops within epoch 1 after 3 batches (96 samples per rank), the third
# goes on from there with --nopfs-start-sample=96. The second and third
# plan only what they read: every request follows the plan.
chain_job() { # NAME [VAR=VALUE...]: resumed.sbatch with these settings
	local name=$1
	shift
	(cd "$EX" && timeout -k 5 300 "${RUNU[@]}" env DATA="$WORK/data" EPOCHS=3 SEED=9 \
		CHECKPOINT="$WORK/run.pt" REPORT="$WORK/$name.json" DIGESTS="$WORK/$name-%r.txt" "$@" \
		sbatch --wait -o "$WORK/$name.out" --export=ALL resumed.sbatch >/dev/null 2>&1) || true
	cat "$WORK/$name.out" 2>/dev/null || true
}
chain_followed() { # NAME START_EPOCH START_SAMPLE EPOCHS: the job's report says so, 0 off the plan
	"$PYTHON" - "$WORK/$1.json" "$2" "$3" "$4" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
start_epoch, start_sample, epochs = map(int, sys.argv[2:])
assert (report["start_epoch"], report["epochs"]) == (start_epoch, epochs), \
    (report["start_epoch"], report["epochs"])
assert all(n["job"]["start_sample"] == start_sample for n in report["per_node"]), \
    [n["job"]["start_sample"] for n in report["per_node"]]
mismatched = sum(n["stream"]["mismatched_requests"] for n in report["per_node"])
skipped = sum(n["stream"].get("skipped_positions", 0) for n in report["per_node"])
assert mismatched == 0 and skipped < 20, (mismatched, skipped)
print(f"ok - resumed.sbatch: {sys.argv[1].split('/')[-1]} planned the script's epochs "
      f"{start_epoch} (from sample {start_sample} per rank) to {start_epoch + epochs - 1}: "
      f"0 requests off the plan, {skipped} positions skipped; PFS {report['vs_dataset']:.2f} x S")
PY
}
chain_job chain-1 STOP_AFTER=1
chain_job chain-2 STOP_AFTER_BATCHES=3
chain_job chain-3
# 300 samples on 3 ranks: 100 per rank and epoch; chain-3 reads 100 - 96 of
# epoch 1 and 100 of epoch 2. chain-2's DataLoader workers read ahead of the batch it stops at:
# the agents delivered more than it used, so only its bytes are checked.
if grep -q "^epoch 0: mean loss" "$WORK/chain-1.out" && ! grep -q "^epoch 1" "$WORK/chain-1.out" &&
	grep -q "^resumed after epoch 0$" "$WORK/chain-2.out" &&
	grep -q "^stopped within epoch 1: 96 samples per rank read" "$WORK/chain-2.out" &&
	grep -q "^resumed after epoch 0, and 96 samples per rank of epoch 1" "$WORK/chain-3.out" &&
	grep -q "^epoch 2: mean loss" "$WORK/chain-3.out" &&
	have_report "$WORK/chain-1.json" && have_report "$WORK/chain-2.json" &&
	have_report "$WORK/chain-3.json" &&
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/chain-2-*.txt" --samples 288 &&
	"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" \
		--outs "$WORK/chain-3-*.txt" --samples 312 --report "$WORK/chain-3.json" &&
	chain_followed chain-2 1 0 2 && chain_followed chain-3 1 96 2; then
	echo "ok - resumed.sbatch: a chain of three jobs (epoch 0; 3 batches of epoch 1; the rest from there)"
else
	echo "not ok - resumed.sbatch"
	fail=1
fi

# 4. The C/MPI program under the interposer.
run_mpi_example() {
	rm -f "$WORK/mpi.json" "$WORK"/mpi-*.txt
	(cd "$EX" && timeout -k 5 300 "${RUNU[@]}" env DATA="$WORK/data" EPOCHS=2 SEED=5 \
		REPORT="$WORK/mpi.json" TRACE="$WORK/mpi-%r.txt" OMPI_MCA_btl=self,tcp \
		OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 \
		sbatch --wait -o "$WORK/mpi.out" --export=ALL mpi.sbatch >/dev/null 2>&1)
}
if ((have_mpi)); then
	# Open MPI's TCP transport can fail a connect between ranks on a loaded
	# machine ("connect() ... failed: Operation now in progress", then a rank
	# crashes in MPI): that job is run once more, saying so.
	if ! run_mpi_example && grep -q "failed to TCP connect to a peer MPI process" "$WORK/mpi.out"; then
		echo "# mpi.sbatch: Open MPI could not connect its ranks (below); running it again"
		sed 's/^/#   /' "$WORK/mpi.out"
		run_mpi_example || true
	fi
	cat "$WORK/mpi.out" 2>/dev/null || true
	if have_report "$WORK/mpi.json" && "$PYTHON" - "$WORK" <<'PY'; then
import glob, json, os, re, sys
from torchvision.datasets import ImageFolder
work = sys.argv[1]
paths = [p for p, _ in ImageFolder(os.path.join(work, "data"), loader=lambda p: p,
                                  is_valid_file=lambda p: p.endswith(".JPEG")).samples]
def checksum(path):
    data = open(path, "rb").read()
    return int.from_bytes(data[:8], "little") ^ int.from_bytes(data[-8:], "little")
out = open(os.path.join(work, "mpi.out")).read()
world, per_rank, checked = 6, (len(paths) + 5) // 6, 0
for rank in range(world):
    lines = [l.split() for l in open(os.path.join(work, f"mpi-{rank}.txt"))]
    assert len(lines) == 2 * per_rank, f"rank {rank}: {len(lines)} samples read"
    for epoch, index, size in lines:
        assert int(size) == os.path.getsize(paths[int(index)]), f"rank {rank} sample {index}"
    want = sum(checksum(paths[int(i)]) for _, i, _ in lines) & ((1 << 64) - 1)
    end = re.search(rf"^train_mpi: rank {rank}/{world}: .* \(files, checksum ([0-9a-f]{{16}})\)$",
                    out, re.M)
    assert end and int(end.group(1), 16) == want, f"rank {rank}: checksum"
    checked += len(lines)
report = json.load(open(os.path.join(work, "mpi.json")))
assert report["nodes_missing"] == [] and report["delivered_total"]["samples"] == checked, (
    report["delivered_total"], report["problems"])
print(f"ok - mpi.sbatch: 6 MPI ranks read {checked} samples with the files' sizes and "
      f"checksums, all delivered by the agents; PFS {report['vs_dataset']:.2f} x S")
PY
		:
	else
		echo "not ok - mpi.sbatch"
		fail=1
	fi
else
	echo "# no benchmarks/e2e/train_mpi (configure found no MPI): mpi.sbatch not run"
fi
exit "$fail"
