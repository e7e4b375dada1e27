"""A resumed job: the script runs epochs 2 to 4 of 5 (its checkpoint was taken
after epoch 1). With --start-epoch 2 the agent plans exactly those epochs:
every request follows the plan (no mismatched request, no position of the
streams skipped), the report counts 3 epochs, and every sample's bytes are
right. Without it the agent plans epochs 0 to 4: the ranks' requests are
found only past the two epochs the script does not run (about 1,200
positions of the streams skipped: what was staged for them, wasted)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
agent = None
try:
    for flag in (True, False):
        extra = ["--start-epoch", "2"] if flag else []
        agent = harness.Agent(ws, f"resume-{flag}", seed=11, epochs=5, world_size=2,
                              ranks=[0, 1], tiers=[f"ram:{ws.dataset_bytes}"], extra=extra)
        ranks = [harness.train(agent, ws, rank, 2, seed=11, epochs=5, start_epoch=2)
                 for rank in (0, 1)]
        harness.wait_all([p for p, _ in ranks])
        checked = harness.verify(ws, [out for _, out in ranks], 600 * 3)
        assert agent.stop() == 0
        report = agent.read_report()
        stream = report["stream"]
        agent = None
        if flag:
            assert report["job"]["epochs"] == 3 and report["job"]["start_epoch"] == 2, \
                report["job"]
            assert stream["mismatched_requests"] == 0, stream
            assert stream["skipped_positions"] < 20, stream
            assert harness.delivered(report) == checked
            print(f"--start-epoch 2: {checked} samples correct, 3 epochs planned, "
                  f"0 mismatched requests, {stream['matched_deliveries']} matched, "
                  f"{stream['skipped_positions']} positions skipped")
        else:
            assert report["job"]["start_epoch"] == 0, report["job"]
            assert stream["skipped_positions"] >= 1000, stream
            print(f"without it: {checked} samples correct, "
                  f"{stream['skipped_positions']} positions skipped")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
