#!/usr/bin/env python3
"""An ordinary PyTorch data pipeline that knows nothing of nopfs.

torchvision ImageFolder (raw bytes instead of decoded images, since the test
files are random bytes) + DistributedSampler + DataLoader with workers. Prints
one line per sample: epoch, index, label and the SHA-256 of the bytes read, so
a test can compare every byte with the dataset's files. With --errors, a file
that cannot be read prints "error:ERRNO-NAME" instead of its digest. With
--val-data, every epoch ends with a pass over a validation set, as training
scripts do: DistributedSampler(shuffle=False) (or, --val-all, the whole set on
every rank); its lines read "val EPOCH INDEX LABEL DIGEST".
"""
import argparse
import errno
import hashlib
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.datasets import ImageFolder


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class ReadError:
    """What read_or_error() returns for a file that cannot be read."""

    def __init__(self, error):
        self.name = errno.errorcode.get(error.errno, str(error.errno))


def read_or_error(path):
    try:
        return read_bytes(path)
    except OSError as error:
        return ReadError(error)


class Digest:
    def __call__(self, data):
        if isinstance(data, ReadError):
            return f"error:{data.name}"
        return hashlib.sha256(data).hexdigest()


class ResumedSampler(DistributedSampler):
    """A DistributedSampler restored within an epoch, as a checkpointed
    sampler (torchdata's StatefulDataLoader) is: in the first epoch it
    iterates it skips the indices its rank had already read."""

    def __init__(self, *args, skip=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip = skip

    def __iter__(self):
        indices = list(super().__iter__())
        skip, self.skip = self.skip, 0
        return iter(indices[skip:])


def is_jpeg(path):
    return path.endswith(".JPEG")


class Indexed(torch.utils.data.Dataset):
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        digest, label = self.dataset[index]
        return index, label, digest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--rank", type=int,
                        default=int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", 0))))
    parser.add_argument("--world-size", type=int,
                        default=int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", 1))))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--start-epoch", type=int, default=0,
                        help="a resumed job: run epochs START to EPOCHS-1")
    parser.add_argument("--start-sample", type=int, default=0,
                        help="and resume epoch START after each rank's first N indices")
    parser.add_argument("--no-set-epoch", action="store_true",
                        help="never call set_epoch: every epoch repeats the first's order")
    parser.add_argument("--no-shuffle", action="store_true",
                        help="DistributedSampler(shuffle=False): every epoch in index order")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=0.0, help="compute per batch (s)")
    parser.add_argument("--out", default="-", help="output file; %%r is the rank")
    parser.add_argument("--errors", action="store_true",
                        help="print a file's read error instead of failing")
    parser.add_argument("--val-data", help="a validation set, read after every epoch")
    parser.add_argument("--val-all", action="store_true",
                        help="every rank reads the whole validation set")
    args = parser.parse_args()

    read = read_or_error if args.errors else read_bytes
    dataset = Indexed(ImageFolder(args.data, loader=read, transform=Digest(),
                                  is_valid_file=is_jpeg))
    sampler = ResumedSampler(dataset, num_replicas=args.world_size, rank=args.rank,
                             seed=args.seed, shuffle=not args.no_shuffle,
                             skip=args.start_sample)
    # prefetch_factor only with workers (older PyTorch refuses it, even None, without)
    extra = {"prefetch_factor": 2} if args.workers else {}
    # A sanitizer build preloads the ASan runtime into Python, whose allocator
    # takes no lock across fork(): a worker forked while another thread of
    # this process allocates can hang in it. Workers start from a fork server.
    if args.workers and os.environ.get("NOPFS_SANITIZER_RUNTIME"):
        extra["multiprocessing_context"] = "forkserver"
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, **extra)
    val_loader = None
    if args.val_data:
        val_set = Indexed(ImageFolder(args.val_data, loader=read, transform=Digest(),
                                      is_valid_file=is_jpeg))
        val_sampler = None if args.val_all else DistributedSampler(
            val_set, num_replicas=args.world_size, rank=args.rank, shuffle=False)
        val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler,
                                shuffle=False, num_workers=args.workers, **extra)
    out_path = args.out.replace("%r", str(args.rank))
    out = sys.stdout if out_path == "-" else open(out_path, "w", buffering=1)
    start = time.time()
    for epoch in range(args.start_epoch, args.epochs):
        if not args.no_set_epoch:
            sampler.set_epoch(epoch)
        for indices, labels, digests in loader:
            for index, label, digest in zip(indices.tolist(), labels.tolist(), digests):
                out.write(f"{epoch} {index} {label} {digest}\n")
            if args.sleep:
                time.sleep(args.sleep)
        for indices, labels, digests in val_loader or ():
            for index, label, digest in zip(indices.tolist(), labels.tolist(), digests):
                out.write(f"val {epoch} {index} {label} {digest}\n")
    out.flush()
    print(f"rank {args.rank}: {args.epochs} epochs in {time.time() - start:.2f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
