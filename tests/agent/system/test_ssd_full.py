"""A full SSD directory, and the SSD tier's directory removed during a job.
An SSD tier larger than the room its directory has shrinks to fit, with a
warning, rather than failing; it is reserved when made, so another process
filling the file system afterwards costs the tier nothing: every sample is
kept and served from it, with the file's bytes. Its directory removed while
the job runs (an administrator's cleanup, a wrong rm) leaves the agent
serving from the open tier file; it ends cleanly and writes its report.

The SSD directory is a small tmpfs mounted in a private mount namespace
(root; the test re-runs itself under unshare -m)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MIB = 1 << 20
SSD_BYTES = 32 * MIB

harness.private_mounts(__file__)
harness.require_torch()


ssd = tempfile.mkdtemp(prefix="nopfs-ssd-test-")
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SSD_BYTES},mode=0700", "tmpfs", ssd],
               check=True)
ws = harness.Workspace(samples=400, classes=4)
agent = None
try:
    # 1. Asked for 64 MB where 32 MB are: 95% of the room, then the rest taken.
    agent = harness.Agent(ws, "ssdfull", seed=5, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=[f"ssd:{ssd}:64M"], extra=["--stage-window", "8"])
    log = open(agent.log).read()
    assert f"ssd tier 0: '{ssd}' has " in log and "the tier shrinks from 64.00 MiB" in log, log
    reserved = harness.used_bytes(ssd)
    assert reserved >= 30 * MIB, f"the ssd tier is not reserved: {reserved} bytes in use"
    taken = harness.fill_filesystem(ssd)
    checked, report = harness.train_and_stop(agent, ws, 5, 2, 400 * 2)
    agent = None
    tier = report["tiers"][0]
    assert tier["capacity"] <= SSD_BYTES * 0.95, tier
    assert tier["filled"]["samples"] == tier["planned_samples"] > 0, tier
    os.unlink(os.path.join(ssd, "filler"))
    print(f"ssd:64M on a 32 MiB directory: the tier shrank to "
          f"{tier['capacity'] / MIB:.1f} MiB, was reserved, and after the other "
          f"{taken // MIB} MiB were taken still held its {tier['planned_samples']} samples; "
          f"{checked} samples correct")

    # 2. The tier's directory removed during the job.
    agent = harness.Agent(ws, "ssdgone", seed=5, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=[f"ssd:{ssd}:24M"], extra=["--stage-window", "8"])
    gone = [os.path.join(ssd, name) for name in os.listdir(ssd)]
    assert gone, "the agent made nothing in the SSD directory"
    for path in gone:
        shutil.rmtree(path)
    checked, report = harness.train_and_stop(agent, ws, 5, 2, 400 * 2)
    agent = None
    assert os.listdir(ssd) == [], os.listdir(ssd)
    print(f"the SSD tier's directory removed during the job: {checked} samples correct, "
          f"the agent ended with 0 and wrote its report "
          f"({report['tiers'][0]['filled']['samples']} samples served from the open tier)")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
    subprocess.run(["umount", ssd], check=False)
    os.rmdir(ssd)
