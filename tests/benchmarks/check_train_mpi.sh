#!/bin/bash
# benchmarks/e2e/train_mpi under mpirun (2 ranks, loopback only) on a tiny
# ImageFolder dataset: complete CSVs; each rank reads, per epoch, exactly the
# samples of torch's DistributedSampler over torchvision's ImageFolder order
# (when torch is importable; NOPFS_REQUIRE_TORCH=1 makes it mandatory), with
# the files' sizes; --synthetic gives the same samples and bytes without
# opening a dataset file (strace); a list index; bad options and unreadable
# samples fail with a message naming them. Skips (77) without mpirun.
set -u
train="${top_builddir:-.}/benchmarks/e2e/train_mpi"
python="${NOPFS_PYTHON:-/usr/bin/python3}"
make_dataset="${top_srcdir:-.}/contrib/make-dataset"

if ! command -v mpirun >/dev/null 2>&1; then
	echo "SKIP: mpirun not found (Debian package openmpi-bin)"
	exit 77
fi
# mpirun must not take this for a Slurm allocation (tests may run inside one).
for variable in $(compgen -e SLURM_); do
	unset "$variable"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# mpi NP ARGS...: train_mpi on NP local ranks over loopback TCP, 60 s at most.
launch=(timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe --mca plm isolated
	--mca btl "self,tcp" --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
mpi() {
	local np=$1
	shift
	"${launch[@]}" -np "$np" "$train" "$@"
}
# traced NAME ARGS...: mpi 2 ARGS under strace, its opens in $work/NAME.strace.
traced() {
	local name=$1
	shift
	strace -f -qq -e "trace=open,openat,openat2" -o "$work/$name.strace" \
		"${launch[@]}" -np 2 "$train" "$@"
}

data="$work/data"
"$python" "$make_dataset" "$data" --samples 40 --classes 4 --mean 4K --sd 1K >/dev/null ||
	exit 1
run=(--data "$data" --seed 7 --epochs 2 --batch-size 3 --compute 0.01 --allreduce 64K)

# check_run PREFIX files|synthetic: CSVs, traces and end lines (PREFIX.err)
# of both ranks against the oracle.
check_run() {
	"$python" - "$data" "$work/$1" "$2" 2 2 3 7 0.01 <<'EOF'
import os, re, sys
data, prefix, mode = sys.argv[1:4]
world, epochs, batch, seed = map(int, sys.argv[4:8])
compute = float(sys.argv[8])
try:
    from torch.utils.data import DistributedSampler
    from torchvision.datasets import ImageFolder
except ImportError:
    if os.environ.get("NOPFS_REQUIRE_TORCH") == "1":
        sys.exit("torch and torchvision are required (NOPFS_REQUIRE_TORCH=1)")
    DistributedSampler = None
if DistributedSampler:
    paths = [p for p, _ in ImageFolder(data, is_valid_file=lambda p: p.endswith(".JPEG")).samples]
else:  # ImageFolder's order for this flat tree, without torch
    paths = [os.path.join(data, c, n) for c in sorted(os.listdir(data))
             for n in sorted(os.listdir(os.path.join(data, c))) if n.endswith(".JPEG")]
def checksum(data):  # train.py's: first and last 8 bytes, little-endian, XORed
    return int.from_bytes(data[:8], "little") ^ int.from_bytes(data[-8:], "little")
def content(index, size):
    if mode == "synthetic":  # train.py's synthetic bytes
        return (bytes(range(256)) * (size // 256 + 1))[:size]
    return open(paths[index], "rb").read()
ends = open(f"{prefix}.err").read()
seen = {}
for rank in range(world):
    trace = [tuple(map(int, line.split())) for line in open(f"{prefix}-{rank}.trace")]
    total = sum(s for _, _, s in trace)
    check = sum(checksum(content(i, s)) for _, i, s in trace) & ((1 << 64) - 1)
    end = (f"train_mpi: rank {rank}/{world}: {epochs} epochs in [0-9.]+ s \\(setup [0-9.]+ s\\), "
           f"{len(trace)} samples, {total} bytes \\({mode}, checksum {check:016x}\\)")
    assert re.search(f"^{end}$", ends, re.M), f"rank {rank}: no line {end} in {ends}"
    for epoch in range(epochs):
        got = [index for e, index, _ in trace if e == epoch]
        if DistributedSampler:
            sampler = DistributedSampler(range(len(paths)), num_replicas=world, rank=rank,
                                         shuffle=True, seed=seed)
            sampler.set_epoch(epoch)
            assert got == list(sampler), f"rank {rank} epoch {epoch}: {got} != {list(sampler)}"
        seen.setdefault(epoch, []).extend(got)
    for epoch, index, size in trace:
        want = os.path.getsize(paths[index])
        assert size == want, f"rank {rank} epoch {epoch} sample {index}: {size} != {want} bytes"
    rows = open(f"{prefix}-{rank}.csv").read().splitlines()
    assert rows[0] == "rank,epoch,batch,samples,bytes,t_request,t_ready,t_done", rows[0]
    per_rank = len(trace) // epochs
    batches = -(-per_rank // batch)
    assert len(rows) == 1 + epochs * batches, f"rank {rank}: {len(rows) - 1} rows"
    position, last_done = 0, 0.0
    for n, row in enumerate(rows[1:]):
        fields = row.split(",")
        r, e, b, samples, nbytes = map(int, fields[:5])
        request, ready, done = map(float, fields[5:])
        assert (r, e, b) == (rank, n // batches, n % batches), row
        assert samples == min(batch, per_rank - b * batch), row
        assert nbytes == sum(s for _, _, s in trace[position:position + samples]), row
        assert last_done <= request <= ready <= done and done - ready >= compute * 0.99, row
        assert all(len(t.split(".")[1]) == 6 for t in fields[5:]), row
        position += samples
        last_done = done
for epoch, indices in seen.items():  # 40 samples, 2 ranks: a partition
    assert sorted(indices) == list(range(len(paths))), f"epoch {epoch}: {sorted(indices)}"
print(f"{prefix}: {len(paths)} samples x {epochs} epochs checked against "
      + ("torch's DistributedSampler" if DistributedSampler else "the file sizes (no torch)"))
EOF
}

# Reading: complete CSVs, torch's order, the files' sizes.
if ! mpi 2 "${run[@]}" --out "$work/real-%r.csv" --trace "$work/real-%r.trace" \
	2>"$work/real.err"; then
	fail "train_mpi run failed: $(cat "$work/real.err")"
elif ! check_run real files; then
	fail "the real run's CSVs, traces or end lines are wrong"
fi

# --synthetic: the same samples and bytes (trace, CSV counts), no dataset file
# opened (strace when it can trace here; the real run is the control).
synthetic=("${run[@]}" --synthetic --out "$work/syn-%r.csv" --trace "$work/syn-%r.trace")
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true 2>/dev/null; then
	if ! traced real "${run[@]}" 2>/dev/null; then
		fail "train_mpi run under strace failed"
	elif ! grep -q "\"$data/[^\"]*\.JPEG\"" "$work/real.strace"; then
		fail "strace shows no open of a dataset file by the real run"
	fi
	traced syn "${synthetic[@]}" 2>"$work/syn.err"
	status=$?
else
	echo "strace unusable here: synthetic I/O not traced"
	mpi 2 "${synthetic[@]}" 2>"$work/syn.err"
	status=$?
fi
if [ "$status" -ne 0 ]; then
	fail "train_mpi --synthetic failed: $(cat "$work/syn.err")"
elif ! check_run syn synthetic; then
	fail "the synthetic run's CSVs, traces or end lines are wrong"
else
	for rank in 0 1; do
		cmp -s "$work/real-$rank.trace" "$work/syn-$rank.trace" ||
			fail "rank $rank: --synthetic read other samples or sizes than the real run"
		cmp -s <(cut -d, -f1-5 "$work/real-$rank.csv") <(cut -d, -f1-5 "$work/syn-$rank.csv") ||
			fail "rank $rank: --synthetic CSV counts differ from the real run's"
	done
	if [ -f "$work/syn.strace" ] && grep "\"$data/[^\"]*\.JPEG\"" "$work/syn.strace"; then
		fail "--synthetic opened dataset files (above)"
	fi
fi

# check_list: each sample of the list file read once, with its file's size.
check_list() {
	"$python" - "$work" <<'EOF'
import os, sys
work = sys.argv[1]
paths = [os.path.join(work, "list", line.split("\t")[0]) for line in open(f"{work}/list/train.txt")]
read = sorted(tuple(map(int, line.split()))[1:]
              for rank in (0, 1) for line in open(f"{work}/list-{rank}.trace"))
assert read == [(i, os.path.getsize(p)) for i, p in enumerate(paths)], read
EOF
}

# A list index (make-dataset --kind list): its order, its files' sizes.
"$python" "$make_dataset" "$work/list" --kind list --samples 12 --classes 3 --mean 2K --sd 512 \
	>/dev/null || exit 1
if ! mpi 2 --index "$work/list/train.txt" --epochs 1 --batch-size 4 --allreduce 0 \
	--trace "$work/list-%r.trace" 2>"$work/list.err"; then
	fail "train_mpi --index failed: $(cat "$work/list.err")"
elif ! check_list; then
	fail "the list run read other samples or sizes than its list file's"
fi

# expect_error NAME STATUS TEXT ARGS...: train_mpi ARGS exits with STATUS, saying TEXT.
expect_error() {
	local name=$1 want=$2 text=$3 status
	shift 3
	mpi 2 "$@" >/dev/null 2>"$work/$name.err"
	status=$?
	if [ "$status" -ne "$want" ]; then
		fail "$name: train_mpi $* exited with $status, not $want: $(cat "$work/$name.err")"
	elif ! grep -qF -- "$text" "$work/$name.err"; then
		fail "$name: no '$text' in: $(cat "$work/$name.err")"
	fi
}
expect_error epochs 2 "error: --epochs: '0' is not an integer" --data "$data" --epochs 0
expect_error allreduce 2 "error: --allreduce: '3'" --data "$data" --allreduce 3
expect_error out 2 "error: --out: 'one.csv' has no %r" --data "$data" --out one.csv
expect_error nodata 2 "error: no dataset: give --data DIR or --index FILE" --epochs 1
expect_error missing 1 "$work/missing" --data "$work/missing"
if [ "$(grep -c "error:" "$work/epochs.err")" -ne 1 ]; then
	fail "a bad option is reported $(grep -c "error:" "$work/epochs.err") times, not once"
fi
# torchvision's is_valid_file takes ".JPEG" only: refuse what it would skip.
cp -r "$data" "$work/lower"
mv "$work/lower/n00000002/n00000002_0000002.JPEG" "$work/lower/n00000002/n00000002_0000002.jpeg"
expect_error lower 1 "n00000002_0000002.jpeg' does not end in .JPEG" --data "$work/lower"
# A sample whose read(2) fails (a link to the reader's own /proc/self/mem,
# unmapped at offset 0: EIO): the real run aborts naming the file; the
# synthetic run, which opens no file, is unaffected.
cp -r "$data" "$work/broken"
ln -s /proc/self/mem "$work/broken/n00000001/n00000001_9999999.JPEG"
expect_error broken 1 "cannot read '$work/broken/n00000001/n00000001_9999999.JPEG'" \
	--data "$work/broken" --epochs 1
if ! mpi 2 --data "$work/broken" --epochs 1 --synthetic 2>"$work/broken-syn.err"; then
	fail "--synthetic failed on the dataset with an unreadable sample: $(cat "$work/broken-syn.err")"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "train_mpi: all checks passed"
