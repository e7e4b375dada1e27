"""The dataset's listings and stats from the agent's one scan: unmodified
torchvision ImageFolder training ranks read the right bytes while none of
their metadata calls into the dataset (directory opens, getdents64, stat,
access, readlink) reaches the file system (strace), the agent's report counts
the calls served per rank, a class directory changed during the job is
listed as it is once the agent's check saw it, and once the agent is gone the same calls go to
the file system again and still see the dataset."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

METADATA_CALLS = re.compile(rb"^\d+ +(newfstatat|statx|stat|lstat|access|faccessat2?|readlink(at)?"
                            rb"|getdents64|openat\(.*O_DIRECTORY)")


def dataset_metadata_calls(trace, data):
    """strace lines of metadata calls that name a path in the dataset."""
    with open(trace, "rb") as f:
        return [line for line in f if METADATA_CALLS.match(line) and data in line]


def listing(env, root=None):
    code = ("import os, sys; root = sys.argv[1]; "
            "print(sorted((t, sorted(d), sorted(f)) for t, d, f in os.walk(root)))")
    run = subprocess.run([harness.PYTHON, "-c", code, root or harness_ws.data], env=env,
                         capture_output=True, check=True)
    return run.stdout, run.stderr


harness.require_torch()
if not shutil.which("strace"):
    sys.exit("strace is missing (contrib/install-deps installs it)")
harness_ws = ws = harness.Workspace(samples=600, classes=12)
agent = None
try:
    agent = harness.Agent(ws, "metadata", seed=3, epochs=1, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes}"])
    assert os.path.exists(os.path.join(agent.stage, "meta")), "no metadata in the stage directory"
    rank1, out1 = harness.train(agent, ws, 1, 2, seed=3, epochs=1)
    # Rank 0 under strace: its metadata calls into the dataset are counted.
    trace = os.path.join(ws.root, "trace-rank0")
    out0 = os.path.join(ws.root, "out-0.txt")
    subprocess.run(["strace", "-f", "-qq", "-s", "4096", "-o", trace, harness.PYTHON,
                    harness.TRAIN, "--data", ws.data, "--rank", "0", "--world-size", "2",
                    "--seed", "3", "--epochs", "1", "--workers", "2", "--out", out0],
                   env=agent.env(0), check=True, timeout=600)
    harness.wait_all([rank1])
    checked = harness.verify(ws, [out0, out1], 600)
    served_calls = dataset_metadata_calls(trace, ws.data.encode())
    assert not served_calls, (f"{len(served_calls)} metadata calls of rank 0 reached the "
                              f"file system, e.g. {served_calls[:3]}")
    # The same rank without nopfs scans the dataset itself.
    plain_trace = os.path.join(ws.root, "trace-plain")
    subprocess.run(["strace", "-f", "-qq", "-s", "4096", "-o", plain_trace, harness.PYTHON,
                    harness.TRAIN, "--data", ws.data, "--rank", "0", "--world-size", "2",
                    "--seed", "3", "--epochs", "1", "--workers", "2", "--out",
                    os.path.join(ws.root, "out-plain.txt")], check=True, timeout=600)
    plain_calls = dataset_metadata_calls(plain_trace, ws.data.encode())
    assert plain_calls, "the plain run made no metadata call: the trace shows nothing"
    served_listing, _ = listing(dict(agent.env(7), NOPFS_DEBUG="1"))
    # Snapshot semantics: a directory changed during the job is passed to the
    # file system once the agent's check (every 10 s) has seen it.
    changed_class = os.path.dirname(ws.paths[0])
    with open(os.path.join(changed_class, "added.JPEG"), "wb") as f:
        f.write(b"added")
    deadline = time.time() + 25
    while True:
        after_change, stderr = listing(dict(agent.env(7), NOPFS_DEBUG="1"))
        if b"added.JPEG" in after_change or time.time() > deadline:
            break
        time.sleep(1)
    assert b"added.JPEG" in after_change, "the changed directory is still served as scanned"
    assert after_change == listing(None)[0], "the changed directory is not listed as it is"
    os.unlink(os.path.join(changed_class, "added.JPEG"))
    # A rank whose dataset the metadata is not for (a later step on another
    # one) has no metadata to look in: its calls are counted as reaching the PFS.
    other = os.path.join(ws.root, "other-dataset")
    os.makedirs(os.path.join(other, "a", "b"))
    other_listing, stderr = listing(dict(agent.env(8), NOPFS_DATASET=other, NOPFS_DEBUG="1"),
                                    other)
    assert other_listing == listing(None, other)[0], "the other dataset is not listed as it is"
    absent = re.search(rb"0 served, (\d+) passed to the PFS \(0 of them for directories changed "
                       rb"since the scan, (\d+) with no usable metadata\)", stderr)
    assert absent and int(absent[1]) == int(absent[2]) > 0, stderr[-500:]
    # A task started before its agent (NOPFS_META_WAIT) whose agent never
    # puts the metadata there: it waits that long, says so, lists the
    # dataset on the file system and counts those calls as reaching it.
    early_stage, early_runtime = tempfile.mkdtemp(), tempfile.mkdtemp()
    started = time.time()
    early_listing, stderr = listing(dict(agent.env(9), NOPFS_STAGE_DIR=early_stage,
                                         NOPFS_SOCKET=os.path.join(early_runtime, "agent.sock"),
                                         NOPFS_META_WAIT="1"))
    waited = time.time() - started
    assert early_listing == listing(None)[0], "the early task did not list the dataset as it is"
    assert waited >= 1.0, f"the early task waited {waited:.2f} s for the metadata, not 1 s"
    assert (b"no usable dataset metadata in " + early_stage.encode() + b" after 1.0 s "
            b"(waited as long as NOPFS_META_WAIT says)") in stderr, stderr[-500:]
    counts = [name for name in os.listdir(early_stage) if name.startswith(".meta-9-")]
    assert len(counts) == 1, os.listdir(early_stage)
    with open(os.path.join(early_stage, counts[0])) as f:
        fields = f.read().split()
    assert fields[:4] == ["nopfs-meta", "2", "9", "0"] and fields[4] == fields[6] != "0" \
        and fields[5] == "0", fields
    shutil.rmtree(early_stage)
    shutil.rmtree(early_runtime)
    if agent.stop() != 0:
        raise AssertionError("agent exited with an error")
    report = agent.read_report()
    meta = report["metadata"]
    assert meta["published"] and meta["directories"] == 13 and meta["unlisted"] == 0, meta
    assert meta["changed_directories"] >= 1 and meta["passed_changed"] > 0, meta
    # (the listings ran as "rank 7": only they met the changed directory)
    assert meta["per_rank"]["7"]["passed"] == meta["passed_changed"], meta
    assert meta["per_rank"]["8"] == {"served": 0, "passed": int(absent[1])}, meta
    assert meta["passed_absent"] == int(absent[1]) and meta["not_served"] is None, meta
    for rank in ("0", "1"):
        counts = meta["per_rank"].get(rank)
        assert counts and counts["served"] > 0 and counts["passed"] == 0, (rank, meta)
    # The agent is gone: the real calls answer, the same.
    real_listing, _ = listing(None)
    after, stderr = listing(dict(agent.env(7), NOPFS_DEBUG="1"))
    assert real_listing == after, "listings differ once the agent is gone"
    assert b"added.JPEG" not in served_listing and served_listing == real_listing, (
        "the served listing differs from the real one")
    assert b"metadata calls into the dataset: 0 served" in stderr, stderr[-500:]
    print(f"{checked} samples correct; dataset metadata calls reaching the file system: "
          f"{len(plain_calls)} plain, 0 with nopfs; served per rank: "
          + ", ".join(f"{r}: {c['served']}" for r, c in sorted(meta["per_rank"].items())))
finally:
    if agent:
        agent.kill()
    ws.cleanup()
