"""nopfs.Dataset against a standalone agent (no Slurm): two ranks read
their DistributedSampler streams through DataLoader workers started by fork
and by spawn, with persistent workers over two epochs: every sample's bytes
(SHA-256) and label are the file's, and every one came through the C API.
Then a list dataset; then without an agent, with an agent of another
dataset and after the agent is killed: the files, still right. A decode that
keeps the sample's memory is refused. The merged job report summarised by
nopfs.report reads as nopfs-report prints it."""
import hashlib
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyenv  # noqa: E402,F401
import harness  # noqa: E402

harness.require_torch()
import torch  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

import nopfs  # noqa: E402
import nopfs.report  # noqa: E402

API_SOURCES = ("staging", "ram", "ssd", "peer", "pfs")


class Checked(torch.utils.data.Dataset):
    """(index, label, SHA-256 of the bytes, where the sample came from)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        before = dict(self.dataset.sources)
        data, label = self.dataset[index]
        source = [s for s, n in self.dataset.sources.items() if n != before.get(s, 0)]
        assert len(source) == 1, source
        return index, label, hashlib.sha256(data).hexdigest(), source[0]


def run_epochs(dataset, rank, world, seed, epochs, context, expected, workers=2):
    """Read rank's stream for @epochs; check each sample; return {source: count}."""
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=seed)
    loader = DataLoader(Checked(dataset), batch_size=8, sampler=sampler, num_workers=workers,
                        multiprocessing_context=context if workers else None,
                        persistent_workers=bool(workers))
    sources = {}
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen = []
        for indices, labels, digests, froms in loader:
            for index, label, digest, source in zip(indices.tolist(), labels.tolist(), digests,
                                                    froms):
                path, want_label = expected[index]
                assert label == want_label, f"sample {index}: label {label}, not {want_label}"
                with open(path, "rb") as f:
                    assert digest == hashlib.sha256(f.read()).hexdigest(), \
                        f"sample {index} ({path}): wrong bytes"
                sources[source] = sources.get(source, 0) + 1
                seen.append(index)
        assert seen == list(sampler), f"rank {rank} epoch {epoch}: not the sampler's order"
    return sources


def use_agent(agent):
    for key in ("NOPFS_SOCKET", "NOPFS_STAGE_DIR", "NOPFS_DATASET"):
        os.environ.pop(key, None)
    if agent:
        os.environ.update({k: v for k, v in agent.env().items()
                           if k in ("NOPFS_SOCKET", "NOPFS_STAGE_DIR", "NOPFS_DATASET")})


def from_api(sources):
    return sum(n for s, n in sources.items() if s in API_SOURCES)


def main():
    ws = harness.Workspace(samples=400, classes=4, mean="60K", sd="10K")
    agents = []
    try:
        expected = [(p, int(os.path.basename(os.path.dirname(p))[1:])) for p in ws.paths]
        merged = os.path.join(ws.root, "job.json")
        agent = harness.Agent(ws, "pyds", seed=5, epochs=2, world_size=2, ranks=[0, 1],
                              tiers=[f"ram:{ws.dataset_bytes}"],
                              extra=["--merged-report", merged])
        agents.append(agent)
        use_agent(agent)
        dataset = nopfs.Dataset(ws.data)
        assert len(dataset) == 400 and dataset.classes == sorted(os.listdir(ws.data))
        for rank, context in ((0, "fork"), (1, "spawn")):
            ds = nopfs.Dataset(ws.data, rank=rank)
            # Used (connected) in this process first: the workers connect anew.
            assert ds[1][1] == expected[1][1] and sum(ds.sources.values()) == 1, ds.sources
            sources = run_epochs(ds, rank, 2, 5, 2, context, expected)
            assert sources.get("file", 0) == 0 and from_api(sources) == 400, \
                f"rank {rank} ({context} workers): {sources}"
            print(f"ok - rank {rank}, 2 {context} persistent workers, 2 epochs: 400 samples "
                  f"right, all through the C API: {sources}")
        # The main process too (no workers), and the agent's statistics.
        sources = run_epochs(nopfs.Dataset(ws.data, rank=0), 0, 2, 5, 1, None, expected,
                             workers=0)
        assert from_api(sources) == 200, sources
        stats = dataset.agent_stats()
        assert isinstance(stats, dict) and stats, stats
        print(f"ok - no workers: 200 samples right through the C API: {sources}; agent stats "
              f"has {len(stats)} keys")

        # A decode that keeps a view of the sample's memory is refused.
        import numpy
        keep = nopfs.Dataset(ws.data, rank=0, decode=lambda view: numpy.frombuffer(view, "u1"))
        try:
            keep[3]
        except RuntimeError as e:
            assert "decode kept a reference" in str(e), e
            print("ok - a decode keeping the sample's memory is refused")
        else:
            raise AssertionError("a decode keeping the sample's memory was not refused")
        copy = nopfs.Dataset(ws.data, rank=0,
                             decode=lambda view: numpy.frombuffer(view, "u1").copy())
        array, label = copy[3]
        assert array.tobytes() == open(expected[3][0], "rb").read() and label == expected[3][1]

        # Stop the agent: its merged report, summarised by nopfs.report as by nopfs-report.
        assert agent.stop() == 0
        report = nopfs.report.load(merged)
        # ~1000 samples went through the C API above
        assert report.delivered_samples >= 900, report.delivered_total
        printed = subprocess.run([harness.REPORT, merged], capture_output=True, text=True)
        assert printed.returncode == 0, printed.stderr
        c_lines = [line[len("nopfs: "):] for line in printed.stderr.splitlines()
                   if line.startswith("nopfs: ")]
        assert report.summary().splitlines() == c_lines, (report.summary(), c_lines)
        print(f"ok - nopfs.report summary equals nopfs-report's ({len(c_lines)} lines)")

        # No agent: the files, right, with fork and spawn workers.
        use_agent(None)
        for context in ("fork", "spawn"):
            sources = run_epochs(nopfs.Dataset(ws.data), 0, 1, 9, 1, context, expected)
            assert sources == {"file": 400}, sources
        print("ok - without an agent: 400 samples right from the files (fork and spawn)")

        # A list dataset: a subset, in another order, with its own labels.
        chosen = list(range(399, 0, -3))
        list_file = os.path.join(ws.root, "list.txt")
        with open(list_file, "w") as f:
            for n, i in enumerate(chosen):
                f.write(f"{os.path.relpath(ws.paths[i], ws.data)} {n % 7}\n")
        list_expected = [(ws.paths[i], n % 7) for n, i in enumerate(chosen)]
        agent = harness.Agent(ws, "pylist", seed=2, epochs=1, world_size=1, ranks=[0],
                              tiers=[f"ram:{ws.dataset_bytes}"],
                              extra=["--index", f"list:{list_file}"])
        agents.append(agent)
        use_agent(agent)
        sources = run_epochs(nopfs.Dataset(ws.data, f"list:{list_file}"), 0, 1, 2, 1, "fork",
                             list_expected)
        assert from_api(sources) == len(chosen), sources
        print(f"ok - a list dataset of {len(chosen)} samples: right, through the C API: "
              f"{sources}")
        # The same agent for an ImageFolder Dataset of the same root: it serves
        # other samples; the files are read instead.
        sources = run_epochs(nopfs.Dataset(ws.data, rank=0), 0, 1, 9, 1, None, expected,
                             workers=0)
        assert sources == {"file": 400}, sources
        print("ok - an agent serving another index of the root: the files, right")

        # Connected, then the agent dies: still the right bytes.
        ds = nopfs.Dataset(ws.data, f"list:{list_file}")
        _, _ = ds[0]
        agent.kill()
        sources = run_epochs(ds, 0, 1, 2, 1, None, list_expected, workers=0)
        assert sum(sources.values()) == len(chosen), sources
        print(f"ok - after the agent was killed: {len(chosen)} samples right: {sources}")

        # An agent of another dataset: not used.
        other = os.path.join(ws.root, "other")
        shutil.copytree(ws.data, other)
        os.environ["NOPFS_SOCKET"] = os.path.join(ws.root, "nowhere.sock")
        os.environ["NOPFS_DATASET"] = other
        sources = run_epochs(nopfs.Dataset(ws.data), 0, 1, 9, 1, None, expected, workers=0)
        assert sources == {"file": 400}, sources
        print("ok - an agent of another dataset: the files, right")
    finally:
        for agent in agents:
            agent.kill()
            shutil.rmtree(agent.stage, ignore_errors=True)
        ws.cleanup()


if __name__ == "__main__":
    main()
