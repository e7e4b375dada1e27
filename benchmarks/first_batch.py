"""One rank of an unmodified torchvision ImageFolder job until its first
batch (bench_metadata.sh): prints "RANK SECONDS SAMPLES", the seconds since
$BENCH_START (srun's start, epoch seconds)."""
import os
import sys
import time

from torch.utils.data import DataLoader, DistributedSampler
from torchvision.datasets import ImageFolder


def raw(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    start = float(os.environ["BENCH_START"])
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    dataset = ImageFolder(sys.argv[1], loader=raw)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=0)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=0,
                        collate_fn=lambda batch: batch)
    batch = next(iter(loader))
    assert len(batch) == 32
    print(f"{rank} {time.time() - start:.3f} {len(dataset)}", flush=True)


if __name__ == "__main__":
    main()
