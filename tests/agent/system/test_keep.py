"""--keep-dir: what a node held at the end of a job serves the next job on the
same dataset, never stale, never damaged. Job 1 reads the dataset through
an agent whose RAM tier holds a third of it and whose SSD tier the rest, and
keeps both. Between the jobs one file of the dataset is rewritten (same
size, other bytes) and a byte of the kept data is damaged. Job 2 (another
seed) reads everything from what was kept but those two samples, which come
from the PFS: its PFS bytes are at most 2% of the dataset, and every byte
the ranks read is the file's (SHA-256 of each). Then: a job of the same user
on the same dataset while the cache is in use keeps nothing (and says so),
and a --keep-dir that is not private, or a dataset directory planted as a
link, is refused. nopfs-stage, the pre-warm command, waits for the tiers of each
job to be full (and fails, saying why, without an agent)."""
import fcntl
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def only_dir(keep):
    names = os.listdir(keep)
    assert len(names) == 1 and len(names[0]) == 16, names
    return os.path.join(keep, names[0])


STAGE = os.path.join(harness.TOP_BUILDDIR, "nopfs-stage")


agents = []


def start(ws, name, keep, seed, tiers):
    agents.append(harness.Agent(ws, name, seed=seed, epochs=1, world_size=2, ranks=[0, 1],
                                tiers=tiers, extra=["--keep-dir", keep]))
    return agents[-1]


def run_job(ws, name, keep, seed, tiers):
    agent = start(ws, name, keep, seed, tiers)
    # the pre-warm command: back once the tiers hold everything planned
    done = subprocess.run([STAGE, "--timeout", "120", "--interval", "1"], env=agent.env(),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert " 600 of 600 samples" in done.stdout.splitlines()[-1], done.stdout
    checked, report = harness.train_and_stop(agent, ws, seed=seed, epochs=1,
                                             expected_lines=len(ws.paths))
    return checked, report


harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
try:
    S = ws.dataset_bytes
    keep = os.path.join(ws.root, "keep")
    os.mkdir(keep, 0o700)
    tiers = [f"ram:{S // 3}", f"ssd:{ws.ssd}:{S + S // 10}"]

    checked, first = run_job(ws, "keep-1", keep, seed=1, tiers=tiers)
    k = first["kept"]
    pfs = first["pfs"]["bytes"] - first["pfs"]["probe_bytes"]
    assert k["found"]["samples"] == 0 and k["read"]["samples"] == 0, k
    assert k["committed"] and k["kept"]["samples"] == 600, k
    assert k["written"]["samples"] > 0, k  # the RAM tier's samples, into the kept data
    directory = only_dir(keep)
    assert sorted(os.listdir(directory)) == ["data", "manifest"], os.listdir(directory)
    for name in ("", "data", "manifest"):
        st = os.lstat(os.path.join(directory, name))
        assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0, (name, oct(st.st_mode))
    print(f"job 1: {checked} samples right, PFS {pfs / S:.3f} S; kept "
          f"{k['kept']['samples']} samples ({k['kept']['bytes']} bytes, "
          f"{k['written']['samples']} of them from the RAM tier)")

    # between the jobs: a file rewritten (same size), a byte of the kept data damaged
    changed = ws.paths[17]
    size = os.path.getsize(changed)
    with open(changed, "r+b") as f:
        data = bytearray(f.read())
        data[size // 2] ^= 0xff
        f.seek(0)
        f.write(data)
    ws._digests.pop(17, None)
    with open(os.path.join(directory, "data"), "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0x5a]))

    checked, second = run_job(ws, "keep-2", keep, seed=2, tiers=tiers)
    k = second["kept"]
    pfs = second["pfs"]["bytes"] - second["pfs"]["probe_bytes"]
    assert k["found"]["samples"] == 599 and k["stale"]["samples"] == 1, k
    assert k["mismatched"]["samples"] == 1, k
    assert k["read"]["samples"] == 598, k
    assert pfs <= 0.02 * S, (pfs, S)
    assert second["pfs"]["failed_samples"] == 0
    assert k["committed"] and k["kept"]["samples"] == 600, k
    assert sorted(os.listdir(directory)) == ["data", "manifest"], os.listdir(directory)
    print(f"job 2: {checked} samples right; {k['read']['samples']} read from the kept cache, "
          f"1 stale (its file rewritten) and 1 damaged read anew: PFS {pfs / S:.4f} S")

    # in use by another job of the user: this one keeps nothing and says why
    lock = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    agent = start(ws, "keep-3", keep, 1, tiers)
    assert agent.stop() == 0
    os.close(lock)
    report = agent.read_report()
    assert "in use by another job" in report["kept"]["why"], report["kept"]
    assert not report["kept"]["committed"], report["kept"]
    assert sorted(os.listdir(directory)) == ["data", "manifest"], os.listdir(directory)

    # not private, or planted: refused, and named
    os.chmod(keep, 0o755)
    agent = start(ws, "keep-4", keep, 1, tiers)
    assert agent.stop() == 0
    why = agent.read_report()["kept"]["why"]
    assert keep in why and "open to other users" in why, why
    os.chmod(keep, 0o700)
    elsewhere = os.path.join(ws.root, "elsewhere")
    os.mkdir(elsewhere, 0o700)
    os.rename(directory, directory + ".moved")
    os.symlink(elsewhere, directory)
    agent = start(ws, "keep-5", keep, 1, tiers)
    assert agent.stop() == 0
    why = agent.read_report()["kept"]["why"]
    assert "not a private directory" in why, why
    assert os.listdir(elsewhere) == [], os.listdir(elsewhere)
    print("in use, not private, planted as a link: refused, nothing kept or read there")

    # no agent: nopfs-stage says so and fails
    env = dict(os.environ, NOPFS_SOCKET=os.path.join(ws.root, "no-such.sock"))
    done = subprocess.run([STAGE, "--timeout", "5"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "does not answer" in done.stderr, done.stderr
    env.pop("NOPFS_SOCKET")
    done = subprocess.run([STAGE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "NOPFS_SOCKET is not set" in done.stderr, done.stderr
finally:
    for agent in agents:
        agent.kill()
    ws.cleanup()
