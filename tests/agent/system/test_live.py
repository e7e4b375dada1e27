"""The live status of a running agent (nopfs-report --live-node) while an
unmodified pipeline trains: prefetch progress per tier, samples by source and
stalls per rank add up to what the tasks read; another user gets nothing. The
node report then has deliveries per epoch and the stall histogram, and
nopfs-report plots and compares the job report made from it."""
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def live(job_id, user=None):
    cmd = [harness.REPORT, "--live-node", job_id]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, (done.returncode, done.stdout, done.stderr)
    return done.returncode, json.loads(lines[0])


def delivered_by_source(status):
    return {s: status["delivered_staged"][s]["samples"] + status["delivered_on_request"][s]["samples"]
            for s in status["delivered_staged"]}


harness.require_torch()
ws = harness.Workspace(samples=1200, classes=12)
agent = None
try:
    S = ws.dataset_bytes
    epochs = 3
    merged_path = os.path.join(ws.root, "job-report.json")
    agent = harness.Agent(ws, "live", seed=7, epochs=epochs, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{S // 2}", f"ssd:{ws.ssd}:{S}"],
                          extra=["--merged-report", merged_path], token=secrets.token_hex(16))
    # Nothing read yet: the agent answers, with its plan and no deliveries.
    rc, first = live(agent.job_id)
    assert rc == 0 and "status" in first, first
    status = first["status"]
    assert status["job_id"] == agent.job_id and status["node"] == 0, status
    planned = [t["planned_samples"] for t in status["tiers"]]
    assert sum(planned) == len(ws.paths), planned
    assert [r["rank"] for r in status["ranks"]] == [0, 1], status["ranks"]

    ranks = [harness.train(agent, ws, rank, 2, seed=7, epochs=epochs, sleep=0.01)
             for rank in (0, 1)]
    # During training: counts only grow and stay within what exists.
    seen = []
    deadline = time.time() + 300
    while any(p.poll() is None for p, _ in ranks) and time.time() < deadline:
        rc, line = live(agent.job_id)
        assert rc == 0, line
        seen.append(line["status"])
        time.sleep(0.5)
    harness.wait_all([p for p, _ in ranks])
    per_rank = (len(ws.paths) + 1) // 2
    checked = harness.verify(ws, [out for _, out in ranks], 2 * per_rank * epochs)
    assert len(seen) >= 2, f"only {len(seen)} looks during training"
    for before, after in zip(seen, seen[1:]):
        b, a = delivered_by_source(before), delivered_by_source(after)
        assert all(a[s] >= b[s] for s in a), (b, a)
    for status in seen:
        assert sum(delivered_by_source(status).values()) <= checked
        for tier in status["tiers"]:
            assert 0 <= tier["filled"]["samples"] <= tier["planned_samples"], tier

    # After training: the last look adds up to what the tasks read.
    rc, last = live(agent.job_id)
    status = last["status"]
    assert sum(delivered_by_source(status).values()) == checked, (status, checked)
    assert [t["filled"]["samples"] for t in status["tiers"]] == planned, status["tiers"]
    assert sum(r["requests"] for r in status["ranks"]) == status["stall"]["requests"], status
    for r in status["ranks"]:
        assert r["epoch"] == epochs, r
        assert 0 <= r["stall_p50_seconds"] <= r["stall_p99_seconds"], r
        assert r["stall_p99_seconds"] <= 2 * status["stall"]["max_seconds"] + 1e-6 or \
            r["requests"] == 0, (r, status["stall"])
    hist = status["stall"]["histogram_us_log2"]
    assert len(hist) == 32 and sum(hist) == status["stall"]["requests"], status["stall"]

    # Rank 1 reads 20 samples outside its stream: 20 requests of its own, waits counted.
    reader = ("import sys\nfor p in sys.argv[1:]:\n    open(p, 'rb').read()\n")
    subprocess.run([harness.PYTHON, "-c", reader] + ws.paths[:20], env=agent.env(1),
                   check=True, timeout=120)
    rc, after = live(agent.job_id)
    again = {r["rank"]: r for r in after["status"]["ranks"]}
    before = {r["rank"]: r for r in status["ranks"]}
    assert again[1]["requests"] == before[1]["requests"] + 20, (before, again)
    assert again[0]["requests"] == before[0]["requests"], (before, again)
    assert 0 < again[1]["stall_p50_seconds"] <= again[1]["stall_p99_seconds"], again[1]
    assert again[1]["stall_p99_seconds"] <= 2 * after["status"]["stall"]["max_seconds"], \
        (again[1], after["status"]["stall"])
    status = after["status"]
    checked += 20

    # Another user: no agent of theirs, and nothing of ours is shown.
    if os.getuid() == 0:
        rc, other = live(agent.job_id, user=65534)
        assert rc == 1 and "status" not in other and "error" in other, other
    # A job without an agent here: a clear answer, not a hang.
    rc, none = live(f"{agent.job_id}-none")
    assert rc == 1 and "no agent" in none["error"], none
    assert subprocess.run([harness.REPORT, "--live-node", "../x"], capture_output=True,
                          timeout=30).returncode == 1

    assert agent.stop() == 0, "agent exit status"
    report = agent.read_report()
    # Deliveries per epoch plus those without a stream position add up to the totals.
    for source in report["delivered_staged"]:
        total = (report["delivered_staged"][source]["bytes"]
                 + report["delivered_on_request"][source]["bytes"])
        by_epoch = sum(e[source]["bytes"] for e in report["per_epoch"])
        assert by_epoch + report["unattributed"][source]["bytes"] == total, source
    assert len(report["per_epoch"]) == epochs, len(report["per_epoch"])
    for epoch in report["per_epoch"]:
        assert sum(c["samples"] for c in epoch.values()) >= 2 * per_rank - 2 * 16, epoch
    assert sum(report["stall"]["histogram_us_log2"]) == report["stall"]["requests"]

    # The job report: plotted (valid PNGs, the data is the report's) and compared.
    job = harness.read_merged_report(merged_path)
    assert job["per_epoch"] == report["per_epoch"], "per_epoch not merged"
    plots = tempfile.mkdtemp(dir=ws.root)
    done = subprocess.run([harness.REPORT, "--plot", plots, merged_path], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for name in ("epochs.png", "stalls.png"):
        with open(os.path.join(plots, name), "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", name
        assert int.from_bytes(head[16:20], "big") == 900, name
    with open(os.path.join(plots, "epochs.dat")) as f:
        rows = [line.split() for line in f if not line.startswith("#")]
    assert len(rows) == epochs
    for row, epoch in zip(rows, job["per_epoch"]):
        ram = epoch["ram"]["bytes"] / 1e6
        assert abs(float(row[2]) - ram) < 1e-5, (row, epoch)
    done = subprocess.run([harness.REPORT, "--compare", merged_path, "naive"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pfs_row = [line for line in done.stdout.splitlines() if line.startswith("PFS read / dataset")]
    ratio = float(pfs_row[0].split()[-1])
    assert abs(ratio - epochs / job["vs_dataset"]) < 0.01 * ratio, (pfs_row, job["vs_dataset"])
    print(f"{checked} samples checked; {len(seen)} live looks during training; "
          f"last: {delivered_by_source(status)}, ranks "
          f"{[(r['requests'], r['stall_p50_seconds'], r['stall_p99_seconds']) for r in status['ranks']]}")
except Exception:
    if agent:
        print(open(agent.log).read()[-4000:])
    raise
finally:
    if agent:
        agent.kill()
    ws.cleanup()
