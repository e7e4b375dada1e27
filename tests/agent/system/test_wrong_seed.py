"""The script uses seed 0 but the agent was told 42: the run completes with
correct data and the report names the mismatch and its likely cause."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=800, classes=8)
agent = None
try:
    agent = harness.Agent(ws, "seed", seed=42, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes}"], extra=["--stage-window", "16"])
    ranks = [harness.train(agent, ws, rank, 2, seed=0, epochs=2) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks])
    checked = harness.verify(ws, [out for _, out in ranks], 800 * 2)
    assert agent.stop() == 0
    report = agent.read_report()
    stream = report["stream"]
    assert stream["mismatched_requests"] > checked // 4, stream
    assert "seed 0" in stream.get("diagnosis", ""), stream
    assert harness.delivered(report) == checked, (harness.delivered(report), checked, {k: report[k] for k in ("delivered_staged", "delivered_on_request", "stream")})
    print(f"{checked} samples correct; diagnosis: {stream['diagnosis']}")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
