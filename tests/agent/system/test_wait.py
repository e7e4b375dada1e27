"""A sample that takes longer to fetch than the task's timeout is waited for,
not read a second time: the dataset (3 MB samples) is on the emulated PFS at
1 MB/s, the task's NOPFS_TIMEOUT_MS is 2 s, and each fetch takes 3 s or more.
While it lasts the agent sends the task a WAIT every second, and each gives
the task another timeout. Every byte is checked, the agent's report counts
the WAITs it sent and no request that fell back, and the PFS was read once
per sample (its own counter: the task read nothing itself). It is mounted
in a private mount namespace (root)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
harness.private_mounts(__file__)
SAMPLES = 6
ws = harness.Workspace(samples=SAMPLES, classes=2, mean="3M", sd="100K")
stats = os.path.join(ws.root, "pfs-stats.json")  # in the workspace's private directory
process, point = harness.mount_pfs(ws.data, ["--bandwidth", "1:1M", "--stats", stats])
data = ws.data
agent = None
try:
    ws.data = point  # the agent and the task read the dataset through the slow PFS
    agent = harness.Agent(ws, "wait", seed=3, epochs=1, world_size=1, ranks=[0],
                          tiers=["ram:64M"], extra=["--stage-threads", "1"])
    os.environ["NOPFS_TIMEOUT_MS"] = "2000"
    run, out = harness.train(agent, ws, 0, 1, seed=3, epochs=1, workers=1)
    harness.wait_all([run], timeout=300)
    ws.data = data  # checked against the files themselves
    checked = harness.verify(ws, [out], SAMPLES)
    assert agent.stop() == 0
    report = agent.read_report()
    agent = None
    waits = report["stall"]["wait_notices"]
    fell_back = {k: v for k, v in report["fallbacks"].items() if v}
    assert waits >= 2, f"{waits} WAITs sent: the task was never told to wait"
    assert not fell_back, f"requests fell back to the PFS: {fell_back}"
    assert harness.delivered(report) == SAMPLES, report["delivered_on_request"]
    time.sleep(1.2)  # the emulator writes its counters every second
    with open(stats) as f:
        read = json.load(f)["total"]["bytes"]
    probe = report["probe"]["pfs_bytes_read"]
    assert read - probe <= ws.dataset_bytes, \
        f"the PFS read {read - probe} bytes besides the probe for {ws.dataset_bytes}"
    print(f"{checked} samples correct; {waits} WAITs sent; no fallback; PFS read "
          f"{(read - probe) / ws.dataset_bytes:.2f} x S besides the probe")
finally:
    if agent:
        agent.kill()
    ws.data = data
    harness.unmount_pfs(process, point)
    ws.cleanup()
