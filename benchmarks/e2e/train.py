#!/usr/bin/env python3
"""The end-to-end benchmark's training emulation: an ordinary PyTorch input
pipeline that knows nothing of nopfs, with compute emulated by sleeping.

One script, run unchanged three ways:
  plain       PyTorch reads the dataset's files (open(path, 'rb').read());
  nopfs       the same under `srun --nopfs-dataset=DIR`: the interposer serves
              the reads, nothing changes here;
  --synthetic the no-I/O lower bound: the same samples, sizes, sampler,
              DataLoader, workers, batch size and compute, but each sample's
              bytes are a view of a buffer in memory (the sizes come from one
              os.stat per file at startup).

The dataset is a torchvision ImageFolder (files ending in .JPEG) or, with
--index FILE, a list file (PATH<TAB>LABEL per line, contrib/make-dataset's
train.txt or index.txt, nopfs's --nopfs-index=list:FILE) read in list order,
its relative paths taken from the dataset root (--data, by default the list
file's directory). DistributedSampler(shuffle=True, seed=--seed) with
set_epoch every epoch, then a DataLoader; each worker reduces a sample to its
length and a checksum of its first and last 8 bytes, so batches of samples of
any size collate and only a few integers per batch cross to the main process.
The checksums' sum per rank is printed at the end: a run under nopfs must
print the same as a plain run of the same rank, world size, seed and epochs.

Per batch, one CSV row (--out, %r = the rank):
  rank,epoch,batch,samples,bytes,t_request,t_ready,t_done
t_request: the loop asks for the batch (for batch 0 before the epoch's
iterator is made, so epoch time includes starting the workers); t_ready: the
batch is there; t_done: after the compute sleep. Absolute time.time() seconds.
At the end, one line per rank on stderr: epochs, time, samples, bytes.

With --val-data DIR (an ImageFolder), every epoch ends with a pass over that
validation set, as training scripts do: DistributedSampler(shuffle=False),
no set_epoch, compute a third of a training batch's (forward only); its
batches are rows of the same epoch, numbered on after the training ones.
"""
import argparse
import importlib
import os
import sys
import time

PROGRAM = "train.py"
MASK64 = (1 << 64) - 1
CSV_HEADER = "rank,epoch,batch,samples,bytes,t_request,t_ready,t_done\n"


class Failure(Exception):
    """A problem with the arguments, the dataset or the output: a message,
    not a traceback."""


def read_file(path):
    """torchvision-style raw read of a whole file."""
    with open(path, "rb") as f:
        return f.read()


def is_sample(path):
    return path.endswith(".JPEG")


class SyntheticBytes:
    """The no-I/O loader: a view (no copy) of a preallocated buffer, as long
    as the file is."""

    def __init__(self, sizes):
        self.sizes = sizes
        largest = max(sizes.values(), default=0)
        self.buffer = memoryview(bytes(range(256)) * (largest // 256 + 1))

    def __call__(self, path):
        return self.buffer[:self.sizes[path]]


def summarize(data):
    """What a worker returns for a sample: its length and a small checksum.
    The whole sample has been read (or generated) before."""
    return len(data), (int.from_bytes(data[:8], "little")
                       ^ int.from_bytes(data[-8:], "little"))


def collate(batch):
    """(samples, bytes, checksum) of a batch of ((length, checksum), label)."""
    total = 0
    check = 0
    for (length, checksum), _label in batch:
        total += length
        check += checksum
    return len(batch), total, check & MASK64


class ListDataset:
    """The samples of a list file in list order, as ImageFolder gives them."""

    def __init__(self, samples, loader, transform):
        self.samples = samples
        self.loader = loader
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        return self.transform(self.loader(path)), label


def parse_list(list_path, root):
    """The samples of a list file, as nopfs reads it: one per line, PATH or
    PATH<whitespace>LABEL (the last field, when an integer); relative paths
    are below @root."""
    samples = []
    try:
        with open(list_path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Failure(f"--index {list_path}: {e.strerror}")
    except UnicodeDecodeError:
        raise Failure(f"--index {list_path}: not a text file")
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            raise Failure(f"--index {list_path} line {number}: empty line")
        label = 0
        path = line.strip()
        if len(fields) > 1:
            try:
                label = int(fields[-1])
                path = line.strip()[:-len(fields[-1])].rstrip()
            except ValueError:
                pass
        samples.append((os.path.join(root, path), label))
    if not samples:
        raise Failure(f"--index {list_path}: no samples")
    return samples


def synthetic(dataset, what):
    """@dataset read from memory: the no-I/O bound."""
    sizes = {}
    for path, _label in dataset.samples:
        try:
            sizes[path] = os.stat(path).st_size
        except OSError as e:
            raise Failure(f"--synthetic: cannot stat {what} sample {path}: {e.strerror}")
    dataset.loader = SyntheticBytes(sizes)


def image_folder(root, option):
    """The ImageFolder at @root (given as @option)."""
    from torchvision.datasets import ImageFolder

    if not os.path.isdir(root):
        raise Failure(f"{option} {root}: not a directory")
    try:
        return ImageFolder(root, loader=read_file, transform=summarize, is_valid_file=is_sample)
    except (FileNotFoundError, RuntimeError) as e:
        raise Failure(f"{option} {root}: not an ImageFolder dataset of .JPEG files ({e})")


def make_val_dataset(args):
    """The validation set, or None."""
    if not args.val_data:
        return None
    dataset = image_folder(args.val_data, "--val-data")
    if args.synthetic:
        synthetic(dataset, "validation")
    return dataset


def make_dataset(args):
    """The dataset (torch Dataset of ((length, checksum), label)), plain or
    synthetic."""
    if args.index:
        root = args.data if args.data else os.path.dirname(os.path.abspath(args.index))
        if not os.path.isdir(root):
            raise Failure(f"--data {root}: not a directory")
        dataset = ListDataset(parse_list(args.index, root), read_file, summarize)
        first = dataset.samples[0][0]
        if not os.path.isfile(first):
            raise Failure(f"--index {args.index}: its first sample {first} is not a file")
    else:
        dataset = image_folder(args.data, "--data")
    if args.synthetic:
        synthetic(dataset, "training")
    return dataset


def environment_int(names, default):
    """The first of the environment variables @names that is set, as an int."""
    for name in names:
        value = os.environ.get(name)
        if value is not None and value != "":
            try:
                return int(value)
            except ValueError:
                raise Failure(f"environment variable {name}={value!r} is not an integer")
    return default


def parse_arguments(argv):
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="the dataset root (ImageFolder, or the root of --index's "
                        "relative paths; default: the list file's directory)")
    parser.add_argument("--index", help="a list file (PATH<TAB>LABEL per line) instead of "
                        "an ImageFolder")
    parser.add_argument("--synthetic", action="store_true",
                        help="no I/O: samples are in-memory bytes of the files' sizes")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--start-epoch", type=int, default=0,
                        help="a resumed job: runs epochs START to EPOCHS-1 (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="DistributedSampler seed")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--prefetch-factor", type=int,
                        help="batches each worker prefetches (default 2; needs --workers >= 1)")
    parser.add_argument("--persistent-workers", action="store_true",
                        help="keep the workers between epochs (needs --workers >= 1)")
    parser.add_argument("--drop-last", action="store_true",
                        help="the sampler drops the tail instead of padding")
    parser.add_argument("--compute", type=float, default=0.0,
                        help="emulated compute per batch, seconds (slept)")
    parser.add_argument("--rank", type=int, help="default: RANK or SLURM_PROCID, else 0")
    parser.add_argument("--world-size", type=int,
                        help="default: WORLD_SIZE or SLURM_NTASKS, else 1")
    parser.add_argument("--out", default="-",
                        help="per-batch CSV; %%r is the rank; - is stdout (default)")
    parser.add_argument("--val-data", help="a validation set (ImageFolder) read after every "
                        "epoch")
    args = parser.parse_args(argv)
    try:
        if args.rank is None:
            args.rank = environment_int(("RANK", "SLURM_PROCID"), 0)
        if args.world_size is None:
            args.world_size = environment_int(("WORLD_SIZE", "SLURM_NTASKS"), 1)
    except Failure as e:
        parser.error(str(e))
    if not args.data and not args.index:
        parser.error("--data DIR (or --index FILE) is required")
    checks = [
        (args.epochs >= 1, f"--epochs {args.epochs}: need at least 1"),
        (0 <= args.start_epoch < args.epochs,
         f"--start-epoch {args.start_epoch}: need 0 <= start < epochs ({args.epochs})"),
        (args.batch_size >= 1, f"--batch-size {args.batch_size}: need at least 1"),
        (args.workers >= 0, f"--workers {args.workers}: need 0 or more"),
        (args.prefetch_factor is None or args.prefetch_factor >= 1,
         f"--prefetch-factor {args.prefetch_factor}: need at least 1"),
        (args.prefetch_factor is None or args.workers >= 1,
         "--prefetch-factor needs --workers >= 1"),
        (not args.persistent_workers or args.workers >= 1,
         "--persistent-workers needs --workers >= 1"),
        (args.compute >= 0 and args.compute == args.compute,
         f"--compute {args.compute}: need seconds >= 0"),
        (args.world_size >= 1, f"--world-size {args.world_size}: need at least 1"),
        (0 <= args.rank < args.world_size,
         f"--rank {args.rank}: need 0 <= rank < world size ({args.world_size})"),
    ]
    for ok, message in checks:
        if not ok:
            parser.error(message)
    try:  # before the slow imports; make_dataset checks the contents
        if args.data and not os.path.isdir(args.data):
            raise Failure(f"--data {args.data}: not a directory")
        if args.index and not os.path.isfile(args.index):
            raise Failure(f"--index {args.index}: not a file")
        if args.val_data and not os.path.isdir(args.val_data):
            raise Failure(f"--val-data {args.val_data}: not a directory")
    except Failure as e:
        print(f"{PROGRAM}: rank {args.rank}: error: {e}", file=sys.stderr)
        sys.exit(1)
    return args


def open_output(pattern, rank):
    if pattern == "-":
        return sys.stdout
    path = pattern.replace("%r", str(rank))
    try:
        return open(path, "w")
    except OSError as e:
        raise Failure(f"--out {path}: {e.strerror}")


def train(args, dataset, out, val_dataset=None):
    """The epochs: returns (samples, bytes, checksum) over all of them."""
    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank,
                                 seed=args.seed, shuffle=True, drop_last=args.drop_last)
    options = {}
    if args.workers > 0:
        options["prefetch_factor"] = args.prefetch_factor or 2
        options["persistent_workers"] = args.persistent_workers
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, collate_fn=collate, **options)
    passes = [(loader, args.compute)]
    if val_dataset is not None:
        val_sampler = DistributedSampler(val_dataset, num_replicas=args.world_size,
                                         rank=args.rank, shuffle=False)
        passes.append((DataLoader(val_dataset, batch_size=args.batch_size, sampler=val_sampler,
                                  num_workers=args.workers, collate_fn=collate, **options),
                       args.compute / 3))
    rank = args.rank
    samples = total = check = 0
    out.write(CSV_HEADER)
    for epoch in range(args.start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        batch = 0
        for pass_loader, compute in passes:
            t_request = time.time()
            for count, size, checksum in iter(pass_loader):
                t_ready = time.time()
                if compute:
                    time.sleep(compute)
                t_done = time.time()
                out.write(f"{rank},{epoch},{batch},{count},{size},"
                          f"{t_request:.6f},{t_ready:.6f},{t_done:.6f}\n")
                samples += count
                total += size
                check = (check + checksum) & MASK64
                batch += 1
                t_request = time.time()
        out.flush()
    return samples, total, check


def main(argv=None):
    started = time.time()
    args = parse_arguments(argv)
    try:
        try:  # this message rather than a traceback
            for module in ("torch", "torchvision"):
                importlib.import_module(module)
        except ImportError as e:
            raise Failure(f"{e}: this script needs PyTorch and torchvision")
        dataset = make_dataset(args)
        val_dataset = make_val_dataset(args)
        out = open_output(args.out, args.rank)
        setup = time.time() - started
        start = time.time()
        try:
            samples, total, check = train(args, dataset, out, val_dataset)
        except OSError as e:
            # from a worker, the message ends with the original exception
            lines = [line for line in str(e).splitlines() if line.strip()]
            what = lines[-1].strip('"') if lines else repr(e)
            raise Failure(f"reading the dataset: {what}")
        finally:
            if out is not sys.stdout:
                out.close()
    except Failure as e:
        print(f"{PROGRAM}: rank {args.rank}: error: {e}", file=sys.stderr)
        return 1
    mode = "synthetic" if args.synthetic else "files"
    print(f"{PROGRAM}: rank {args.rank}/{args.world_size}: "
          f"{args.epochs - args.start_epoch} epochs in "
          f"{time.time() - start:.3f} s (setup {setup:.3f} s), {samples} samples, {total} bytes "
          f"({mode}, checksum {check:016x})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
