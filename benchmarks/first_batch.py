"""One rank of an unmodified torchvision ImageFolder job until its first
batch (bench_metadata.sh): prints "RANK SECONDS SAMPLES STARTED IMPORTED
LISTED", the seconds since $BENCH_START (srun's start, epoch seconds) to
its first batch, then to the start of Python, the end of the imports and
the end of ImageFolder's listing; under nopfs it then waits for its agent
to serve, if it does not yet."""
import os
import sys
import time

STARTED = time.time()

from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402
from torchvision.datasets import ImageFolder  # noqa: E402

IMPORTED = time.time()


def raw(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    start = float(os.environ["BENCH_START"])
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    dataset = ImageFolder(sys.argv[1], loader=raw)
    listed = time.time()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=0)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=0,
                        collate_fn=lambda batch: batch)
    batch = next(iter(loader))
    assert len(batch) == 32
    print(f"{rank} {time.time() - start:.3f} {len(dataset)} {STARTED - start:.3f} "
          f"{IMPORTED - start:.3f} {listed - start:.3f}", flush=True)
    # Started before its agent served (--nopfs-start=early): stay until it
    # does, as a training job would, so that the job's report is written.
    socket = os.environ.get("NOPFS_SOCKET")
    deadline = time.time() + 300
    while socket and not os.path.exists(os.path.join(os.path.dirname(socket), "ready")):
        if time.time() > deadline:
            sys.exit(f"rank {rank}: the agent did not serve within 300 s")
        time.sleep(0.2)


if __name__ == "__main__":
    main()
