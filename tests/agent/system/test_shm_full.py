"""A full /dev/shm. RAM tiers are reserved when the agent creates them, so
another process filling the stage directory's file system afterwards costs
the agent nothing: it does not die of SIGBUS, every sample a rank reads has
the file's bytes, and the report is written. A RAM tier larger than the room
left there shrinks to fit, with a warning, rather than failing later.

The stage directory is on a small tmpfs of its own, mounted in a private
mount namespace (root; the test re-runs itself under unshare -m)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MIB = 1 << 20
SHM_BYTES = 48 * MIB

harness.private_mounts(__file__)
harness.require_torch()


shm = tempfile.mkdtemp(prefix="nopfs-shm-test-")
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SHM_BYTES},mode=0700", "tmpfs", shm],
               check=True)
ws = harness.Workspace(samples=400, classes=4)
agent = None
try:
    # 1. A tier that fits: reserved at creation, then the rest is taken.
    before = harness.used_bytes(shm)
    agent = harness.Agent(ws, "shmfull", seed=3, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=["ram:24M"], extra=["--stage-window", "8"],
                          stage=os.path.join(shm, "stage"))
    reserved = harness.used_bytes(shm) - before
    assert reserved >= 23 * MIB, f"the ram tier is not reserved: {reserved} bytes in use"
    taken = harness.fill_filesystem(shm)
    assert harness.used_bytes(shm) >= SHM_BYTES - MIB, (harness.used_bytes(shm), taken)
    ranks = [harness.train(agent, ws, rank, 2, seed=3, epochs=2) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks])
    checked = harness.verify(ws, [out for _, out in ranks], 400 * 2)
    assert agent.process.poll() is None, "the agent died with /dev/shm full"
    assert agent.stop() == 0
    report = agent.read_report()
    print(f"full /dev/shm: {checked} samples correct, {reserved // MIB} MiB reserved first, "
          f"{taken // MIB} MiB taken after; delivered by the agent: {harness.delivered(report)}")
    agent = None
    os.unlink(os.path.join(shm, "filler"))

    # 2. A tier larger than the room: it shrinks, with a warning naming the directory.
    agent = harness.Agent(ws, "shmbig", seed=3, epochs=1, world_size=1, ranks=[0],
                          tiers=["ram:200M"], stage=os.path.join(shm, "stage2"))
    with open(agent.log) as f:
        log = f.read()
    assert "shrinks from 200.00 MiB" in log, log
    assert harness.used_bytes(shm) <= SHM_BYTES
    process, out = harness.train(agent, ws, 0, 1, seed=3, epochs=1)
    harness.wait_all([process])
    checked = harness.verify(ws, [out], 400)
    assert agent.stop() == 0
    print(f"ram:200M on a {SHM_BYTES // MIB} MiB /dev/shm: shrunk, {checked} samples correct")
    agent = None
finally:
    if agent:
        agent.kill()
    ws.cleanup()
    subprocess.run(["umount", shm])
    os.rmdir(shm)
