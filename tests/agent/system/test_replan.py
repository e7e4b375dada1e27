"""A running agent takes another plan on for a later step: another seed, epoch
count and world size over the same dataset (it keeps every cached sample: the
PFS is not read again), a description it must refuse (it keeps its plan),
another dataset (a new catalog, read from the PFS once), and the same step
again (accepted without re-planning)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def describe(agent, generation, args):
    """What the plugin does on each node of a later step: a step file (SIGUSR2 makes the agent look at once)."""
    path = os.path.join(agent.runtime, f"step-{generation}")
    with open(path + ".tmp", "w") as f:
        f.write("".join(arg + "\n" for arg in args))
    os.rename(path + ".tmp", path)
    agent.process.send_signal(signal.SIGUSR2)
    return path


def wait_plan(agent, generation, step_file, timeout=60):
    """The generation in the ready file once the step file is taken."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(os.path.join(agent.runtime, "ready")) as f:
            pid, current = map(int, f.read().split())
        assert pid == agent.process.pid, (pid, agent.process.pid)
        if current >= generation or not os.path.exists(step_file):
            time.sleep(0.3)  # a refusal rewrites nothing: let a late change show
            with open(os.path.join(agent.runtime, "ready")) as f:
                return int(f.read().split()[1])
        assert agent.process.poll() is None, open(agent.log).read()
        time.sleep(0.05)
    raise RuntimeError(f"plan {generation} not taken within {timeout} s")


def live_report(agent):
    before = os.path.getmtime(agent.report) if os.path.exists(agent.report) else 0
    agent.process.send_signal(signal.SIGUSR1)
    for _ in range(100):
        if os.path.exists(agent.report) and os.path.getmtime(agent.report) != before:
            time.sleep(0.05)
            return agent.read_report()
        time.sleep(0.05)
    raise RuntimeError("no report on SIGUSR1")


def wait_cached(agent, samples):
    """Until the tiers have been filled with @samples samples in all (every plan)."""
    for _ in range(600):
        report = live_report(agent)
        if sum(t["filled"]["samples"] for t in report["tiers"]) >= samples:
            return report
        time.sleep(0.1)
    raise RuntimeError(f"tiers not filled: {report['tiers']}")


harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
other = harness.Workspace(samples=200, classes=4)
agent = None
try:
    agent = harness.Agent(ws, "replan", seed=42, epochs=1, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes}"])
    ranks = [harness.train(agent, ws, rank, 2, seed=42, epochs=1) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks])
    checked = harness.verify(ws, [out for _, out in ranks], 600)
    first = wait_cached(agent, 600)
    pfs_first = first["pfs"]["bytes"]
    assert first["plan"] == 0 and first["replans"] == [], first["replans"]

    # 1. Same dataset, another seed, epoch count and layout: all of it is kept.
    step = describe(agent, 5, ["--dataset", ws.data, "--index", "imagefolder", "--seed", "7",
                               "--epochs", "2", "--world-size", "3", "--ranks", "0,1,2"])
    assert wait_plan(agent, 5, step) == 5
    ranks = [harness.train(agent, ws, rank, 3, seed=7, epochs=2, sleep=0.02)
             for rank in (0, 1, 2)]
    harness.wait_all([p for p, _ in ranks])
    checked += harness.verify(ws, [out for _, out in ranks], 600 * 2)
    second = live_report(agent)
    plan = second["replans"][-1]
    assert second["plan"] == 5 and plan["outcome"] == "planned", second["replans"]
    assert plan["kept_samples"] == 600 and plan["kept_bytes"] == ws.dataset_bytes, plan
    assert plan["catalog"] == "kept", plan
    assert (second["job"]["epochs"], second["job"]["world_size"]) == (2, 3), second["job"]
    assert second["pfs"]["bytes"] == pfs_first, (second["pfs"], pfs_first)
    matched = second["stream"]["matched_deliveries"] - first["stream"]["matched_deliveries"]
    # (a plan for another stream would match hardly any: a window is 16 of 200 samples)
    assert matched >= 1200 * 0.9, (matched, second["stream"])

    # 2. A description with an option that is not the step's: refused, plan kept.
    step = describe(agent, 6, ["--dataset", ws.data, "--seed", "1", "--tier", "ram:1G"])
    assert wait_plan(agent, 6, step) == 5
    refused = live_report(agent)["replans"][-1]
    assert refused["generation"] == 6 and refused["outcome"] == "refused", refused
    assert "'--tier' is not an option of a step" in open(agent.log).read()

    # 3. Another dataset: a new catalog, its samples read from the PFS once.
    step = describe(agent, 9, ["--dataset", other.data, "--seed", "3", "--epochs", "2",
                               "--world-size", "1", "--ranks", "0"])
    assert wait_plan(agent, 9, step) == 9
    env = agent.env(0)
    env["NOPFS_DATASET"] = other.data
    out = os.path.join(other.root, "out.txt")
    process = harness.subprocess.Popen(
        [harness.PYTHON, harness.TRAIN, "--data", other.data, "--rank", "0", "--world-size", "1",
         "--seed", "3", "--epochs", "2", "--workers", "2", "--sleep", "0", "--out", out], env=env)
    harness.wait_all([process])
    checked_other = harness.verify(other, [out], 200 * 2)
    third = wait_cached(agent, 600 + 200)
    plan = third["replans"][-1]
    assert third["plan"] == 9 and plan["kept_samples"] == 0, third["replans"]
    assert plan["catalog"] == "built here", plan  # alone: nobody to share it with
    assert third["job"]["samples"] == 200, third["job"]
    new_bytes = third["pfs"]["bytes"] - pfs_first
    assert new_bytes == other.dataset_bytes, (new_bytes, other.dataset_bytes)

    # 4. The same step again: accepted at once, nothing re-planned.
    step = describe(agent, 12, ["--dataset", other.data, "--seed", "3", "--epochs", "2",
                                "--world-size", "1", "--ranks", "0"])
    assert wait_plan(agent, 12, step) == 12
    fourth = live_report(agent)
    assert fourth["plan"] == 12 and len(fourth["replans"]) == 3, fourth["replans"]
    assert not os.path.exists(step)

    assert agent.stop() == 0
    final = agent.read_report()
    assert [p["generation"] for p in final["replans"]] == [5, 6, 9], final["replans"]
    assert not agent.leftovers(), agent.leftovers()
    print(f"{checked} + {checked_other} samples correct; plan 5 kept "
          f"{final['replans'][0]['kept_samples']} cached samples in "
          f"{final['replans'][0]['seconds']:.2f} s, {matched} of 1200 requests in its streams; "
          f"plan 9 read its dataset once")
finally:
    if agent:
        agent.kill()
    if not os.environ.get("NOPFS_TEST_KEEP"):
        ws.cleanup()
        other.cleanup()
