#!/usr/bin/env python3
"""A PyTorch DistributedDataParallel training script that knows nothing of
nopfs: torchvision ImageFolder + DistributedSampler + DataLoader workers.

The model is deliberately tiny (a linear classifier over each file's byte
histogram) so the example runs anywhere, on CPUs, with any files; put your
decoding, transforms and model in its place. Ranks and world size come from
Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), the rendezvous from
MASTER_ADDR and MASTER_PORT (the sbatch scripts set them).

--digests PATH writes "epoch index label sha256" for every sample a rank
read (%r: the rank), to check that the bytes are the files' bytes.
"""
import argparse
import hashlib
import os
import sys
import time

import numpy
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.datasets import ImageFolder


def features(buffer):
    """(the byte histogram of a sample as a float tensor, its SHA-256): read
    in place from any bytes-like buffer, nothing of it kept."""
    counts = numpy.bincount(numpy.frombuffer(buffer, dtype=numpy.uint8), minlength=256)
    histogram = torch.from_numpy(counts).float() / max(1, len(buffer))
    return histogram, hashlib.sha256(buffer).hexdigest()


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def image_folder(root):
    """The dataset: ((histogram, digest), label) for each file of an ImageFolder tree."""
    return ImageFolder(root, loader=read_file, transform=features)


class ResumedSampler(DistributedSampler):
    """A DistributedSampler that can resume within an epoch: in the first
    epoch it iterates it skips the first `skip` indices of its rank (those
    read before the checkpoint), as torchdata's StatefulDataLoader does."""

    def __init__(self, *args, skip=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip = skip

    def __iter__(self):
        indices = list(super().__iter__())
        skip, self.skip = self.skip, 0
        return iter(indices[skip:])


class Indexed(torch.utils.data.Dataset):
    """Adds the sample's index (for --digests)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        (histogram, digest), label = self.dataset[index]
        return histogram, label, index, digest


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="DistributedSampler seed")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--start-method", default="fork", choices=("fork", "spawn"),
                        help="how DataLoader workers start")
    parser.add_argument("--digests", help="per-sample SHA-256 output; %%r is the rank")
    parser.add_argument("--checkpoint", help="saved after each epoch (rank 0); with --resume, "
                        "training goes on from where it was saved")
    parser.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                        help="also save every N batches within an epoch")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--stop-after", type=int,
                        help="end after this many epochs, as a job at its time limit would")
    parser.add_argument("--stop-after-batches", type=int,
                        help="end after this many batches, within an epoch, saving a "
                        "checkpoint there")
    return parser.parse_args()


def main(make_dataset=image_folder):
    args = parse_args()
    rank = int(os.environ.get("SLURM_PROCID", 0))
    world = int(os.environ.get("SLURM_NTASKS", 1))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world)
    device = torch.device(f"cuda:{int(os.environ.get('SLURM_LOCALID', 0))}"
                          if backend == "nccl" else "cpu")

    dataset = Indexed(make_dataset(args.data))
    classes = max(dataset.dataset.targets) + 1
    model = DistributedDataParallel(torch.nn.Linear(256, classes).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()
    digests = open(args.digests.replace("%r", str(rank)), "w") if args.digests else None

    # A checkpoint says the last whole epoch and, when it was saved within
    # the next one, the samples each rank had read of it.
    first, skip = 0, 0
    if args.resume and args.checkpoint and os.path.exists(args.checkpoint):
        saved = torch.load(args.checkpoint)
        model.module.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        first, skip = saved["epoch"] + 1, saved.get("samples", 0)
        if rank == 0:
            within = f", and {skip} samples per rank of epoch {first}" if skip else ""
            print(f"resumed after epoch {saved['epoch']}{within}", flush=True)
    sampler = ResumedSampler(dataset, num_replicas=world, rank=rank, seed=args.seed, skip=skip)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        multiprocessing_context=args.start_method if args.workers else None)

    def save(epoch, samples):
        """rank 0: the model after @epoch and @samples per rank of the next"""
        if rank == 0 and args.checkpoint:
            torch.save({"epoch": epoch, "samples": samples, "model": model.module.state_dict(),
                        "optimizer": optimizer.state_dict()}, args.checkpoint + ".new")
            os.replace(args.checkpoint + ".new", args.checkpoint)

    last = args.epochs if args.stop_after is None else min(args.epochs, first + args.stop_after)
    done_batches = 0
    start = time.time()
    for epoch in range(first, last):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        read = skip if epoch == first else 0
        for histograms, labels, indices, sums in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(histograms.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            done_batches += 1
            read += len(labels)
            if digests:
                for index, label, digest in zip(indices.tolist(), labels.tolist(), sums):
                    digests.write(f"{epoch} {index} {label} {digest}\n")
            if read < sampler.num_samples and (
                    (args.checkpoint_every and batches % args.checkpoint_every == 0) or
                    done_batches == args.stop_after_batches):
                save(epoch - 1, read)
            if done_batches == args.stop_after_batches:
                break
        stopped = done_batches == args.stop_after_batches
        if stopped and read < sampler.num_samples:
            if rank == 0:
                print(f"stopped within epoch {epoch}: {read} samples per rank read", flush=True)
            last = epoch + 1
            break
        if rank == 0:
            print(f"epoch {epoch}: mean loss {total / max(1, batches):.4f}", flush=True)
        save(epoch, 0)
        if stopped:
            last = epoch + 1
            break
    if digests:
        digests.close()
    print(f"rank {rank}/{world}: epochs {first} to {last - 1} in {time.time() - start:.2f} s",
          file=sys.stderr)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
