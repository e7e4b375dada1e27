"""SIGTERM before the agent serves: in the dataset's scan and in the
self-measurement (probe) it stops within 2 s (not at the end of the phase,
nor at Slurm's SIGKILL), exits 0, says in which phase, and leaves neither its
runtime nor its stage directory behind.

The dataset is on the emulated PFS (nopfs-pfs), slow enough that each phase
lasts long: 100 ms per metadata operation for the scan, 300 ms per open and
read for the probe. It is mounted in a private mount namespace (root)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.private_mounts(__file__)
def wait_for_log(agent, text, timeout=30):
    """Until @text is in the agent's log (None: until its log exists)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if agent.process.poll() is not None:
            raise RuntimeError(f"the agent exited with {agent.process.returncode}")
        if os.path.exists(agent.log) and (text is None or text in open(agent.log).read()):
            return
        time.sleep(0.05)
    raise RuntimeError(f"no '{text}' in the agent's log within {timeout} s")


def stop_in(ws, phase, pfs_options, wait_text, extra):
    process, point = harness.mount_pfs(ws.data, pfs_options)
    data = ws.data
    ws.data = point  # the agent reads the dataset through the slow PFS
    agent = None
    try:
        agent = harness.Agent(ws, f"stop-{phase}", seed=1, epochs=1, world_size=1, ranks=[0],
                              tiers=["ram:64M"], extra=extra, wait=False)
        wait_for_log(agent, wait_text)
        time.sleep(1)  # well inside the phase
        start = time.time()
        agent.process.send_signal(signal.SIGTERM)
        try:
            rc = agent.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"SIGTERM in the {phase}: still running 10 s later")
        seconds = time.time() - start
        log = open(agent.log).read()
        assert seconds < 2, f"SIGTERM in the {phase}: {seconds:.1f} s to exit: {log}"
        assert rc == 0, f"SIGTERM in the {phase}: exit status {rc}: {log}"
        assert f"during the {phase}: stopping before serving" in log, f"log: {log!r}"
        assert "ready in" not in log, log
        for path in (agent.runtime, agent.stage):
            assert not os.path.exists(path), f"left behind: {path}"
        print(f"SIGTERM in the {phase}: exited 0 in {seconds:.2f} s, nothing left behind")
        agent = None
    finally:
        if agent:
            agent.kill()
        ws.data = data
        harness.unmount_pfs(process, point)


ws = harness.Workspace(samples=300, classes=30)
try:
    stop_in(ws, "catalog", ["--metadata-latency", "100"], None, [])
    stop_in(ws, "probe", ["--latency", "300"], "catalog: ", ["--probe-budget", "30"])
finally:
    ws.cleanup()
