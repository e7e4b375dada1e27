"""Resumed jobs. The script runs epochs 2 to 4 of 5 (its checkpoint was
taken after epoch 1). With --start-epoch 2 the agent plans exactly those
epochs: every request follows the plan (no mismatched request, no position
of the streams skipped), the report counts 3 epochs, and every sample's
bytes are right.

Without --start-epoch (4 ranks, 3000 samples) the agent plans epochs 0 to 4
and finds from each rank's first requests off the plan (12 start a look;
the batches in flight meanwhile add to them) that it reads the script's
epoch 2: it moves the rank's staging window there, at
least 99% of the requests after those follow the plan, and the PFS is read
once.

A script that never calls set_epoch (every epoch in epoch 0's order) is
recognised at its epoch 1, from the first requests of one rank: the agent
stages that order from then on, for every rank (a rank found at epoch 0's
place after its epoch 0; resumed at a later epoch, epoch 0's order, which
no planned epoch has). A script with shuffle=False is recognised from its
first requests.

A resume within epoch 2 (each rank's sampler skips the 120 indices it had
read, as a restored StatefulDataLoader does): with --start-sample 120 the
plan starts there (nothing skipped); without it each rank's first 120
positions are staged for nothing and skipped. The chain's next job
may run on another layout: resumed with 3 ranks instead of 2, the plan is
the new layout's."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
default_ws = harness.Workspace(samples=600, classes=6)
agent = None
ws_big = None


def run(name, extra, world_size=2, start_sample=0, workspace=None, start_epoch=2,
        script=()):
    """One resumed job; returns (samples checked, report)."""
    global agent
    ws = workspace or default_ws
    ranks = list(range(world_size))
    agent = harness.Agent(ws, f"resume-{name}", seed=11, epochs=5, world_size=world_size,
                          ranks=ranks, tiers=[f"ram:{ws.dataset_bytes}"], extra=extra)
    runs = [harness.train(agent, ws, rank, world_size, seed=11, epochs=5,
                          start_epoch=start_epoch, start_sample=start_sample, extra=script)
            for rank in ranks]
    harness.wait_all([p for p, _ in runs])
    per_rank = -(-len(ws.paths) // world_size)
    checked = harness.verify(ws, [out for _, out in runs],
                             (per_rank * (5 - start_epoch) - start_sample) * world_size)
    assert agent.stop() == 0
    report = agent.read_report()
    agent = None
    return checked, report


try:
    checked, report = run("epoch", ["--start-epoch", "2"])
    stream = report["stream"]
    assert report["job"]["epochs"] == 3 and report["job"]["start_epoch"] == 2, report["job"]
    assert stream["mismatched_requests"] == 0, stream
    assert stream["skipped_positions"] < 20, stream
    assert harness.delivered(report) == checked
    print(f"--start-epoch 2: {checked} samples correct, 3 epochs planned, "
          f"0 mismatched requests, {stream['matched_deliveries']} matched, "
          f"{stream['skipped_positions']} positions skipped")

    ws_big = harness.Workspace(samples=3000, classes=6)
    checked, report = run("none", ["--stage-window", "128"], world_size=4, workspace=ws_big)
    stream = report["stream"]
    assert report["job"]["start_epoch"] == 0, report["job"]
    first = {}
    for event in stream["self_sync"]:
        first.setdefault(event["rank"], event)
    assert sorted(first) == [0, 1, 2, 3], stream["self_sync"]
    for event in first.values():
        assert event["epoch"] == 2 and event["index"] < 40, event
        # 12 start a look; a DataLoader's batch (16) is in flight meanwhile
        assert event["after_requests"] <= 3 * 16, event
    # after each rank's first 20 requests, at least 99% follow the plan
    assert stream["mismatched_requests"] <= 4 * 20 + checked // 100, stream
    pfs = report["pfs"]["bytes"] - report["pfs"]["probe_bytes"]  # the probe's are counted in
    assert pfs <= 1.02 * report["pfs"]["dataset_bytes"], report["pfs"]
    print(f"without it (4 ranks, 3000 samples): {checked} samples correct; every rank found "
          f"at the script's epoch 2 after "
          f"{max(e['after_requests'] for e in first.values())} requests at most; "
          f"{stream['mismatched_requests']} of {checked} requests off the plan; "
          f"{stream['self_synced']} moves; PFS "
          f"{pfs / report['pfs']['dataset_bytes']:.2f} x S")

    # A script that never calls set_epoch reads epoch 0's order every epoch:
    # at its epoch 1 the agent finds that order and stages it from then on.
    checked, report = run("no-set-epoch", ["--stage-window", "128"], world_size=4,
                          workspace=ws_big, start_epoch=0, script=["--no-set-epoch"])
    stream = report["stream"]
    order = stream["order_found"]
    assert order["order"] == "no set_epoch", order
    assert all(m["epoch"] == 1 and m["index"] < 40 for m in stream["self_sync"]), stream
    assert stream["self_synced"] <= 4, stream
    assert stream["mismatched_requests"] <= 4 * 3 * 16, stream
    per_rank = 750
    assert order["seconds"] > 0 and order["after_requests"] <= 3 * 16, order
    print(f"a script without set_epoch (5 epochs of epoch 0's order): {checked} samples "
          f"correct; order found from rank {order['rank']}'s requests after "
          f"{order['after_requests']} off the plan ({order['seconds']:.1f} s); "
          f"{stream['mismatched_requests']} of {checked} requests off the plan "
          f"(at most {4 * 3 * 16}: the first batches of epoch 1, of {4 * per_rank} there)")

    # Resumed at epoch 2 without set_epoch: epoch 0's order, which no planned
    # epoch has, is found from the first requests.
    checked, report = run("no-set-epoch-resumed", ["--start-epoch", "2"], world_size=2,
                          script=["--no-set-epoch"])
    stream = report["stream"]
    assert stream["order_found"]["order"] == "no set_epoch", stream
    assert stream["mismatched_requests"] <= 2 * 3 * 16, stream
    print(f"resumed at epoch 2 without set_epoch: {checked} samples correct; "
          f"{stream['mismatched_requests']} of {checked} requests off the plan")

    # shuffle=False: the index order, found from the first requests.
    checked, report = run("no-shuffle", ["--stage-window", "128"], world_size=4,
                          workspace=ws_big, start_epoch=0, script=["--no-shuffle"])
    stream = report["stream"]
    assert stream["order_found"]["order"] == "no shuffle", stream
    assert stream["mismatched_requests"] <= 4 * 3 * 16, stream
    assert "diagnosis" not in stream, stream
    pfs = report["pfs"]["bytes"] - report["pfs"]["probe_bytes"]
    assert pfs <= 1.02 * report["pfs"]["dataset_bytes"], report["pfs"]
    print(f"a script with shuffle=False: {checked} samples correct; order found after "
          f"{stream['order_found']['after_requests']} requests off the plan; "
          f"{stream['mismatched_requests']} of {checked} requests off the plan; PFS "
          f"{pfs / report['pfs']['dataset_bytes']:.2f} x S")

    checked, report = run("sample", ["--start-epoch", "2", "--start-sample", "120"],
                          start_sample=120)
    stream = report["stream"]
    assert report["job"]["start_sample"] == 120, report["job"]
    assert stream["mismatched_requests"] == 0, stream
    assert stream["skipped_positions"] < 20, stream
    assert harness.delivered(report) == checked
    print(f"--start-epoch 2 --start-sample 120: {checked} samples correct, "
          f"0 mismatched requests, {stream['skipped_positions']} positions skipped")

    checked, report = run("sample-unsaid", ["--start-epoch", "2"], start_sample=120)
    stream = report["stream"]
    assert stream["skipped_positions"] >= 2 * 120 - 20, stream
    print(f"resumed at index 120 without --start-sample: {checked} samples correct, "
          f"{stream['skipped_positions']} positions skipped")

    checked, report = run("layout", ["--start-epoch", "2", "--start-sample", "50"],
                          world_size=3, start_sample=50)
    stream = report["stream"]
    assert report["job"]["world_size"] == 3, report["job"]
    assert stream["mismatched_requests"] == 0, stream
    assert stream["skipped_positions"] < 30, stream
    print(f"resumed on 3 ranks (the chain's earlier job had 2): {checked} samples correct, "
          f"0 mismatched requests, {stream['skipped_positions']} positions skipped")
finally:
    if agent:
        agent.kill()
    default_ws.cleanup()
    if ws_big:
        ws_big.cleanup()
