"""The dataset directory disappears during a job (renamed away, as a
wrong mv or a purge would). The agent keeps running and ends cleanly (exit
0, its report written, nothing left); every sample a rank gets has the
bytes the file had; a rank that asks for what no longer exists gets what a
plain loader gets (FileNotFoundError), never other bytes.

Two jobs: in the first the node's RAM tier holds the whole dataset and the
ranks have listed it before it goes: they read it to the end from the tier
(snapshot semantics, docs/user-guide.md). In the second the tier holds a
third: the rest is gone with the directory and the ranks fail as plain
PyTorch would."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def gone_run(ws, name, tier, epochs):
    """A job whose dataset is renamed away once both ranks have read a batch;
    returns (rank exit codes, lines checked, node report)."""
    agent = harness.Agent(ws, name, seed=6, epochs=epochs, world_size=2, ranks=[0, 1],
                          tiers=[tier], extra=["--stage-window", "8"])
    try:
        ranks = [harness.train(agent, ws, rank, 2, seed=6, epochs=epochs, sleep=0.02)
                 for rank in (0, 1)]
        deadline = time.time() + 120
        while not all(os.path.exists(out) and os.path.getsize(out) > 0 for _, out in ranks):
            assert time.time() < deadline, "the ranks read nothing in 120 s"
            time.sleep(0.05)
        os.rename(ws.data, ws.data + ".gone")
        try:
            codes = [p.wait(timeout=600) for p, _ in ranks]
        finally:
            os.rename(ws.data + ".gone", ws.data)
        checked = 0
        for _, out in ranks:
            for line in open(out):
                epoch, index, label, digest = line.split()
                assert digest == ws.digest(int(index)), f"sample {index}: wrong bytes"
                checked += 1
        assert agent.stop() == 0
        report = agent.read_report()
        assert not agent.leftovers(), agent.leftovers()
        return codes, checked, report
    except BaseException:
        agent.kill()
        raise


harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
try:
    S = ws.dataset_bytes
    codes, checked, report = gone_run(ws, "gone-cached", f"ram:{S + S // 10}", 2)
    assert codes == [0, 0] and checked == 1200, (codes, checked)
    print(f"the whole dataset in the tier: the ranks read all {checked} samples right after "
          f"the directory went; the agent ended with 0")
    codes, checked, report = gone_run(ws, "gone-partial", f"ram:{S // 3}", 2)
    assert all(c != 0 for c in codes), codes
    print(f"a third in the tier: the ranks failed as plain PyTorch does (exit {codes}) "
          f"after {checked} samples, every one right; the agent ended with 0, "
          f"{report['pfs']['failed_samples']} of its PFS reads failed")
finally:
    ws.cleanup()
