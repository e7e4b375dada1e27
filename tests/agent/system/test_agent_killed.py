"""SIGKILL the agent mid-epoch: the training finishes with correct data,
reading what the agent had staged and then the PFS."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=1200, classes=12)
agent = None
try:
    agent = harness.Agent(ws, "killed", seed=7, epochs=3, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes}"])
    ranks = [harness.train(agent, ws, rank, 2, seed=7, epochs=3, sleep=0.01) for rank in (0, 1)]
    # Kill it once a third of the samples were read: mid-run, in epoch 1 or so.
    deadline = time.time() + 120
    while time.time() < deadline:
        lines = sum(sum(1 for _ in open(out)) for _, out in ranks if os.path.exists(out))
        if lines >= 1200:
            break
        time.sleep(0.05)
    assert all(p.poll() is None for p, _ in ranks), "training ended before the kill"
    agent.kill()
    start = time.time()
    harness.wait_all([p for p, _ in ranks])
    checked = harness.verify(ws, [out for _, out in ranks], 1200 * 3)
    print(f"agent killed after {lines} of 3600 samples: {checked} samples all correct "
          f"(ranks finished {time.time() - start:.1f} s after the kill)")
finally:
    if agent:
        agent.kill()
        shutil.rmtree(agent.stage, ignore_errors=True)
    ws.cleanup()
