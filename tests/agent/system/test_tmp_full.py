"""A full /tmp on the node. The agent's runtime directory (its socket,
ready file, step files) is /tmp/nopfs-JOB.TOKEN: once the agent runs,
another process filling /tmp costs the job nothing (every sample right, the
agent ends with 0 and writes its report, nothing left in /tmp). An agent
that cannot make its runtime directory at all (/tmp full of directories
and files before it starts) exits with an error naming the directory, and
the unmodified pipeline reads the PFS as without nopfs, every byte right.

/tmp is a small tmpfs mounted in a private mount namespace (root; the test
re-runs itself under unshare -m); the dataset lives in /var/tmp."""
import os
import secrets
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


harness.private_mounts(__file__)
harness.require_torch()
tempfile.tempdir = "/var/tmp"


def clear(path):
    subprocess.run(["umount", path], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M,nr_inodes=1000,mode=1777", "tmpfs",
                    path], check=True)


ws = harness.Workspace(samples=400, classes=4)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M,nr_inodes=1000,mode=1777", "tmpfs", "/tmp"],
               check=True)
agent = None
try:
    # 1. /tmp fills while the job runs.
    agent = harness.Agent(ws, "tmpfull", seed=2, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=["ram:20M"], extra=["--stage-window", "8"],
                          token=secrets.token_hex(16))
    harness.fill_filesystem("/tmp", inodes=True)
    checked, report = harness.train_and_stop(agent, ws, 2, 2, 400 * 2)
    assert harness.delivered(report) == checked, harness.delivered(report)
    assert not os.path.exists(agent.runtime), os.listdir("/tmp")[:5]
    agent = None
    print(f"/tmp filled during the job: {checked} samples right, all delivered by the "
          f"agent, exit 0, report written, its runtime directory removed")

    # 2. /tmp full before the agent starts: it cannot run; the pipeline reads the PFS.
    clear("/tmp")
    harness.fill_filesystem("/tmp", inodes=True)
    agent = harness.Agent(ws, "tmpfull-before", seed=2, epochs=1, world_size=2, ranks=[0, 1],
                          tiers=["ram:20M"], token=secrets.token_hex(16), wait=False,
                          stderr=subprocess.PIPE)
    _, err = agent.process.communicate(timeout=60)
    rc = agent.process.returncode
    assert rc != 0 and "--runtime-dir '/tmp/nopfs-" in err and "No space left" in err, (rc, err)
    line = [x for x in err.splitlines() if "/tmp/nopfs-" in x][0]
    ranks = [harness.train(agent, ws, rank, 2, seed=2, epochs=1) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks])
    checked = harness.verify(ws, [out for _, out in ranks], 400)
    agent = None
    print(f"/tmp full before the start: the agent exited {rc} ({line.split(': ', 1)[-1]}); "
          f"the pipeline read the PFS, {checked} samples right")
finally:
    if agent:
        agent.kill()
    subprocess.run(["umount", "/tmp"], check=False)
    ws.cleanup()
