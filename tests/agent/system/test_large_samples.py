"""Samples larger than --max-sample-size (64 MiB by default): a sparse file
of 4.5 GiB (bytes written at its start, across the 4 GiB mark and at its
end) and an 80 MiB file, among ordinary samples and one of 60 MiB. The
catalog has their 64-bit sizes; the agent neither keeps nor serves the two
large ones (every buffer of the agent is as large as the largest sample it
serves: before the limit, its RSS reached 9.4 GiB on this dataset), and the
unchanged script reads them from the PFS itself. Every byte is checked, the
agent's peak RSS stays under 2 GiB (262 MiB here), and the job report says
what happened."""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=60, classes=2)
classes = sorted(os.listdir(ws.data))
SPARSE = (4 << 30) + (512 << 20) + 12345
sparse = os.path.join(ws.data, classes[1], "zz-sparse.JPEG")
with open(sparse, "wb") as f:
    f.truncate(SPARSE)
    for at, data in ((0, b"head"), ((4 << 30) - 6, b"across 4 GiB"), (SPARSE - 4, b"tail")):
        f.seek(at)
        f.write(data)
large = os.path.join(ws.data, classes[0], "zz-large.JPEG")
served = os.path.join(ws.data, classes[1], "zy-served.JPEG")
for path, size in ((large, 80 << 20), (served, 60 << 20)):
    with open(path, "wb") as f:
        f.write(os.urandom(size))

ws.rescan()
ws.dataset_bytes = sum(os.path.getsize(p) for p in ws.paths)
digest = hashlib.sha256()
with open(sparse, "rb") as f:
    for block in iter(lambda: f.read(64 << 20), b""):
        digest.update(block)
ws._digests[ws.paths.index(sparse)] = digest.hexdigest()
samples = len(ws.paths)
too_large_bytes = SPARSE + (80 << 20)

agent = None
try:
    merged = os.path.join(ws.root, "job.json")
    agent = harness.Agent(ws, "large", seed=3, epochs=2, world_size=1, ranks=[0],
                          tiers=["ram:256M"], extra=["--merged-report", merged])
    rank, out = harness.train(agent, ws, 0, 1, seed=3, epochs=2, workers=1, timeout=600)
    harness.wait_all([rank], timeout=600)
    checked = harness.verify(ws, [out], samples * 2)
    assert agent.stop() == 0
    report = agent.read_report()
    job = report["job"]
    assert job["samples"] == samples, job
    assert job["max_sample_size"] == 64 << 20, job
    assert job["too_large"] == {"samples": 2, "bytes": too_large_bytes}, job
    assert report["pfs"]["dataset_bytes"] == ws.dataset_bytes, report["pfs"]
    assert report["fallbacks"]["too_large"] == 4, report["fallbacks"]  # 2 samples x 2 epochs
    assert harness.delivered(report) == (samples - 2) * 2, harness.delivered(report)
    # one buffer the size of the sparse file would be 4.5 GiB (2 GiB: room for ASan)
    rss = report["process"]["max_rss_kib"] * 1024
    assert rss < 2 << 30, f"agent peak RSS {rss / 2**30:.2f} GiB"
    problems = harness.read_merged_report(merged)["problems"]
    assert any("larger than the agents' --max-sample-size" in p for p in problems), problems
    log = open(agent.log).read()
    assert "are larger than --max-sample-size 64.00 MiB" in log, log[-2000:]
    print(f"{checked} samples right (a sparse one of {SPARSE} bytes, one of 80 MiB: "
          f"read by the rank; one of 60 MiB served); agent peak RSS {rss / 2**20:.0f} MiB; "
          f"{report['fallbacks']['too_large']} reads left to the rank")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
