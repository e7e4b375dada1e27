"""Checks of benchmarks/e2e/train.py's output, for tests/benchmarks/check_e2e.sh.

usage: e2e_check.py runs DATA [--index FILE] --dir DIR --ranks R --epochs E --seed S
                        [--drop-last] [--synthetic]
    DIR/rank-*.csv and DIR/rank-*.err of one run: every rank's samples of
    every epoch, in torch DistributedSampler's order, are in its CSV (counts
    and bytes, batch by batch sizes summing up), and, unless --synthetic, the
    checksum each rank printed is that of the files' bytes.
usage: e2e_check.py same DIR1 DIR2
    the two runs delivered the same samples and bytes per rank, epoch and batch.
usage: e2e_check.py summary FILE REGIME CONFIG KEY=VALUE...
    summary.csv's row has these values (numbers within 1e-6).
"""
import argparse
import csv
import glob
import os
import re
import sys

# the sampler's replay that analyze.py's partial-cache bound uses: checked
# here against the order train.py read in
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks", "e2e"))
from analyze import sampler_streams  # noqa: E402

HEADER = ["rank", "epoch", "batch", "samples", "bytes", "t_request", "t_ready", "t_done"]
MASK64 = (1 << 64) - 1


def dataset_files(data, index):
    """The sample paths in the dataset's index order, written independently
    of train.py: sorted class directories and sorted .JPEG names, or the list
    file's lines."""
    if index:
        root = data or os.path.dirname(os.path.abspath(index))
        with open(index) as f:
            return [os.path.join(root, line.split("\t")[0]) for line in f.read().splitlines()]
    paths = []
    for cls in sorted(e.name for e in os.scandir(data) if e.is_dir()):
        for name in sorted(os.listdir(os.path.join(data, cls))):
            if name.endswith(".JPEG"):
                paths.append(os.path.join(data, cls, name))
    return paths


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        assert header == HEADER, f"{path}: header {header}"
        return [(int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), float(r[5]),
                 float(r[6]), float(r[7])) for r in reader]


def checksum(path):
    with open(path, "rb") as f:
        data = f.read()
    return int.from_bytes(data[:8], "little") ^ int.from_bytes(data[-8:], "little")


def check_runs(args):
    files = dataset_files(args.data, args.index)
    sizes = [os.path.getsize(p) for p in files]
    sums = {}
    for rank in range(args.ranks):
        path = os.path.join(args.dir, f"rank-{rank}.csv")
        rows = read_csv(path)
        check = 0
        for epoch in range(args.epochs):
            indices = sampler_streams(len(files), args.ranks, args.seed, epoch,
                                      args.drop_last)[rank]
            mine = [r for r in rows if r[1] == epoch]
            assert all(r[0] == rank for r in mine), f"{path}: rows of another rank"
            assert [r[2] for r in mine] == list(range(len(mine))), \
                f"{path}: epoch {epoch}: batches not numbered 0..{len(mine) - 1}"
            assert sum(r[3] for r in mine) == len(indices), \
                f"{path}: epoch {epoch}: {sum(r[3] for r in mine)} samples, expected {len(indices)}"
            start = 0
            for r in mine:
                expected = sum(sizes[i] for i in indices[start:start + r[3]])
                assert r[4] == expected, (f"{path}: epoch {epoch} batch {r[2]}: {r[4]} bytes, "
                                          f"the files of its samples have {expected}")
                assert r[5] <= r[6] <= r[7], f"{path}: epoch {epoch} batch {r[2]}: times"
                start += r[3]
            for i in indices:
                sums[i] = sums.get(i, 0) + 1
                if not args.synthetic:
                    check = (check + checksum(files[i])) & MASK64
        assert len(rows) == sum(1 for r in rows if r[1] < args.epochs), f"{path}: extra epochs"
        with open(os.path.join(args.dir, f"rank-{rank}.err")) as f:
            err = f.read()
        match = re.search(r"rank (\d+)/(\d+): (\d+) epochs in .* (\d+) samples, (\d+) bytes "
                          r"\((\w+), checksum ([0-9a-f]{16})\)", err)
        assert match, f"{args.dir}/rank-{rank}.err: no final line: {err!r}"
        assert int(match.group(1)) == rank and int(match.group(2)) == args.ranks, err
        assert int(match.group(3)) == args.epochs, err
        assert int(match.group(4)) == sum(r[3] for r in rows), err
        assert int(match.group(5)) == sum(r[4] for r in rows), err
        assert match.group(6) == ("synthetic" if args.synthetic else "files"), err
        if not args.synthetic:
            assert int(match.group(7), 16) == check, \
                f"rank {rank}: checksum {match.group(7)}, the files' bytes give {check:016x}"
    if not args.drop_last:
        missing = [i for i in range(len(files)) if i not in sums]
        assert not missing, f"samples never read: {missing[:10]}"
    print(f"ok - {args.dir}: {args.ranks} ranks x {args.epochs} epochs of {len(files)} samples"
          f"{' (synthetic)' if args.synthetic else ', bytes and checksums those of the files'}")


def check_same(args):
    for path in sorted(glob.glob(os.path.join(args.first, "rank-*.csv"))):
        other = os.path.join(args.second, os.path.basename(path))
        a = [r[:5] for r in read_csv(path)]
        b = [r[:5] for r in read_csv(other)]
        assert a == b, f"{path} and {other} differ in samples or bytes"
    print(f"ok - {args.first} and {args.second}: the same samples and bytes")


def check_summary(args):
    with open(args.file, newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["regime"] == args.regime and r["config"] == args.config]
    assert len(rows) == 1, f"{args.file}: {len(rows)} rows for {args.regime} {args.config}"
    for pair in args.values:
        key, want = pair.split("=", 1)
        got = rows[0][key]
        try:
            ok = abs(float(got) - float(want)) <= 1e-6
        except ValueError:
            ok = got == want
        assert ok, f"{args.file}: {args.regime} {args.config} {key} = {got!r}, expected {want}"
    print(f"ok - summary.csv {args.regime} {args.config}: {' '.join(args.values)}")


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    runs = commands.add_parser("runs")
    runs.add_argument("data")
    runs.add_argument("--index")
    runs.add_argument("--dir", required=True)
    runs.add_argument("--ranks", type=int, required=True)
    runs.add_argument("--epochs", type=int, required=True)
    runs.add_argument("--seed", type=int, required=True)
    runs.add_argument("--drop-last", action="store_true")
    runs.add_argument("--synthetic", action="store_true")
    same = commands.add_parser("same")
    same.add_argument("first")
    same.add_argument("second")
    summary = commands.add_parser("summary")
    summary.add_argument("file")
    summary.add_argument("regime")
    summary.add_argument("config")
    summary.add_argument("values", nargs="+")
    args = parser.parse_args()
    try:
        {"runs": check_runs, "same": check_same, "summary": check_summary}[args.command](args)
    except (AssertionError, OSError, KeyError, ValueError) as e:
        print(f"FAIL: {type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
