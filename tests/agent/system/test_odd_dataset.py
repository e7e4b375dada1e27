"""Odd files in a dataset, named like samples: a FIFO, a character device,
an empty file, names with a newline and with bytes that are not UTF-8. The
unchanged training script reads every one as it would without nopfs (the
FIFO through a writer that feeds it, the device as /dev/null reads): the
agent serves the regular files and leaves the others to the rank's own open,
never waiting on them (before, a FIFO hung a stager, the probe and the
agent's stop); its report counts the ones it refused."""
import hashlib
import os
import stat
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=300, classes=3)
classes = sorted(os.listdir(ws.data))
fifo = os.path.join(ws.data, classes[0], "zz-fifo.JPEG")
FIFO_BYTES = b"what the FIFO's writer says\n" * 100
stop_feeding = threading.Event()


def feed():
    """Each open of the FIFO for reading gets FIFO_BYTES, then end of file."""
    while not stop_feeding.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet (ENXIO)
            time.sleep(0.005)
            continue
        try:
            os.set_blocking(fd, True)
            os.write(fd, FIFO_BYTES)
        except OSError:  # the reader left early (EPIPE): the agent's look
            pass
        finally:
            os.close(fd)
        time.sleep(0.02)  # the reader sees the end before the next writer


os.mkfifo(fifo)
feeder = threading.Thread(target=feed, daemon=True)
feeder.start()
special = [fifo]
if os.geteuid() == 0:
    device = os.path.join(ws.data, classes[0], "zz-null.JPEG")
    os.mknod(device, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # reads as /dev/null
    special.append(device)
with open(os.path.join(ws.data, classes[1], "zz-empty.JPEG"), "wb"):
    pass
with open(os.path.join(ws.data, classes[1], "zz-new\nline.JPEG"), "wb") as f:
    f.write(b"a name with a newline" * 50)
with open(os.path.join(ws.data.encode(), classes[2].encode(), b"zz-\xff\xfe.JPEG"), "wb") as f:
    f.write(b"a name that is not UTF-8" * 50)
ws.rescan()
ws.dataset_bytes = sum(os.path.getsize(p) for p in ws.paths if p not in special)
samples = len(ws.paths)

agent = None
try:
    agent = harness.Agent(ws, "odd", seed=0, epochs=2, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes * 2}"])
    ranks = [harness.train(agent, ws, rank, 2, seed=0, epochs=2, timeout=120) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks], timeout=120)
    # the FIFO: its writer's bytes, or nothing when two readers shared one write
    allowed = {fifo: {hashlib.sha256(FIFO_BYTES).hexdigest(), hashlib.sha256(b"").hexdigest()}}
    allowed.update({p: {hashlib.sha256(b"").hexdigest()} for p in special[1:]})
    checked = 0
    for _, out in ranks:
        for line in open(out):
            epoch, index, label, digest = line.split()
            path = ws.paths[int(index)]
            expected = allowed.get(path) or {ws.digest(int(index))}
            assert digest in expected, f"sample {index} ({path!r}) in epoch {epoch}: wrong bytes"
            checked += 1
    padded = samples + samples % 2  # DistributedSampler evens the ranks out
    assert checked == padded * 2, (checked, padded * 2)
    assert agent.stop() == 0
    assert agent.stop_seconds < 2, agent.stop_seconds
    report = agent.read_report()
    refused = report["pfs"]["failed_samples"]
    assert refused >= len(special), (refused, report["pfs"])
    log = open(agent.log).read()
    assert "is not a regular file: not served" in log, log[-2000:]
    print(f"{checked} samples correct, {len(special)} special files among them; the agent "
          f"refused {refused} reads of special files and stopped in {agent.stop_seconds:.2f} s")
finally:
    stop_feeding.set()
    if agent:
        agent.kill()
    ws.cleanup()
