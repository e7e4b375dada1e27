"""A rank far ahead of its staging cursor. A rank that does not open one
position of its stream (a sample it got another way; here the first whose
sample is not again in its window) holds its window's cursor there, while it
goes on opening the staged copies of the positions after it. With 100
samples per rank and epoch the 256-position window reaches two epochs past
the cursor's: every open of a staged copy there must still be matched to its
position and counted as delivered, not lost and counted as unused at the
end (as happened when an agent stopped for a few seconds came back behind
its ranks, a request of theirs not yet answered).

The test plays rank 0 of 4 itself: it waits until the agent has staged the
window, then opens the staged copies of positions 0 to 255 in stream order,
all but that one, and checks each copy's bytes."""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
from torch.utils.data import DistributedSampler  # noqa: E402

SEED, EPOCHS, WINDOW, WORLD = 7, 4, 256, 4


def stream(count):
    """Rank 0's sample indices (world size WORLD) over EPOCHS epochs."""
    sampler = DistributedSampler(range(count), num_replicas=WORLD, rank=0, shuffle=True,
                                 seed=SEED)
    order = []
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        order += list(sampler)
    return order


def staged_name(ws, index):
    relative = os.path.relpath(ws.paths[index], ws.data)
    return "p0." + relative.replace("%", "%25").replace("/", "%2F")


def main():
    ws = harness.Workspace(samples=100 * WORLD, classes=4, mean="8K", sd="0")
    agent = None
    try:
        order = stream(len(ws.paths))
        window = order[:WINDOW]
        skipped = next(p for p in range(2, WINDOW) if window.count(window[p]) == 1)
        wanted = {staged_name(ws, index) for index in window}
        agent = harness.Agent(ws, "ahead", seed=SEED, epochs=EPOCHS, world_size=WORLD, ranks=[0],
                              tiers=["ram:16M"], extra=["--stage-window", str(WINDOW)])
        deadline = time.time() + 60
        while not wanted <= set(os.listdir(agent.stage)):
            assert time.time() < deadline, "the agent did not stage the window in 60 s"
            time.sleep(0.05)
        time.sleep(0.5)  # the window's last copies are written and renamed in place
        opened = 0
        for position in range(WINDOW):
            if position == skipped:
                continue
            index = order[position]
            with open(os.path.join(agent.stage, staged_name(ws, index)), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            assert digest == ws.digest(index), f"position {position}: wrong bytes"
            opened += 1
            time.sleep(0.002)  # as a rank between batches: the agent keeps up
        time.sleep(1)
        assert agent.stop() == 0, "the agent did not exit cleanly"
        report = agent.read_report()
        staged = sum(v["samples"] for v in report["delivered_staged"].values())
        assert staged == opened, (f"{opened} staged copies opened, {staged} counted as "
                                  f"delivered; unused {report['staging']['unused_samples']}")
        print(f"ok - {opened} staged copies opened up to two epochs past the cursor "
              f"(held at position {skipped}), all counted as delivered, bytes right; "
              f"unused {report['staging']['unused_samples']}")
    finally:
        if agent:
            agent.kill()
        ws.cleanup()


if __name__ == "__main__":
    main()
