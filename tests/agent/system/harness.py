"""Agent system tests without Slurm: start nopfs-agent standalone, run
unmodified training scripts under the interposer, check bytes and reports.

Every wait has a deadline; every process started is ended by its PID.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TOP_SRCDIR = os.path.abspath(os.environ.get("top_srcdir", "."))
TOP_BUILDDIR = os.path.abspath(os.environ.get("top_builddir", "."))
AGENT = os.path.join(TOP_BUILDDIR, "nopfs-agent")
REPORT = os.path.join(TOP_BUILDDIR, "nopfs-report")
PFS = os.path.join(TOP_BUILDDIR, "contrib", "pfs-emulator", "nopfs-pfs")
PRELOAD = os.path.join(TOP_BUILDDIR, "lib", ".libs", "libnopfs_preload.so")
# A sanitizer build: the instrumented interposer loads after the runtime.
if os.environ.get("NOPFS_SANITIZER_RUNTIME"):
    PRELOAD = os.environ["NOPFS_SANITIZER_RUNTIME"] + ":" + PRELOAD
TRAIN = os.path.join(TOP_SRCDIR, "tests", "agent", "system", "train_script.py")
MAKE_DATASET = os.path.join(TOP_SRCDIR, "contrib", "make-dataset")
PYTHON = os.environ.get("NOPFS_PYTHON", "/usr/bin/python3")


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def private_mounts(script):
    """Run the rest of @script in a private mount namespace (it mounts): re-run
    it under unshare -m once, as root; skip otherwise."""
    if os.environ.get("NOPFS_TEST_PRIVATE_MOUNTS") == "1":
        return
    if os.geteuid() != 0:
        skip("mounts file systems: needs root")
    os.environ["NOPFS_TEST_PRIVATE_MOUNTS"] = "1"
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private",
                          sys.executable, os.path.abspath(script)])


def mount_pfs(source, options):
    """Mount @source through the emulated PFS (nopfs-pfs @options) at a new
    directory; returns (its process, the mount point)."""
    point = tempfile.mkdtemp(prefix="nopfs-test-pfs-")
    process = subprocess.Popen([PFS] + options + [source, point], stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not os.path.ismount(point):
        if process.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"nopfs-pfs did not mount {point}")
        time.sleep(0.05)
    return process, point


def unmount_pfs(process, point):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=10)
    os.rmdir(point)


def used_bytes(path):
    """Bytes in use on path's file system."""
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def fill_filesystem(path, inodes=False):
    """Take every free byte of path's file system (a file "filler" in @path)
    and, with @inodes, every free inode (directories d0, d1, ...); returns
    the bytes taken."""
    taken = 0
    try:
        with open(os.path.join(path, "filler"), "wb") as f:
            while True:
                taken += f.write(b"\0" * (1 << 20))
                f.flush()
    except OSError:
        pass
    n = 0
    while inodes:
        try:
            os.mkdir(os.path.join(path, f"d{n}"))
        except OSError:
            break
        n += 1
    return taken


def require_torch():
    probe = subprocess.run([PYTHON, "-c", "import torch, torchvision"], capture_output=True)
    if probe.returncode != 0:
        if os.environ.get("NOPFS_REQUIRE_TORCH") == "1":
            sys.exit(f"torch is required but {PYTHON} cannot import it")
        skip(f"{PYTHON} cannot import torch")


class Workspace:
    """A temporary directory with a dataset, removed at exit."""

    def __init__(self, samples=3000, classes=30, mean="110K", sd="20K"):
        self.root = tempfile.mkdtemp(prefix="nopfs-agent-test-")
        self.data = os.path.join(self.root, "data")
        self.ssd = os.path.join(self.root, "ssd")
        os.makedirs(self.ssd)
        subprocess.run([PYTHON, MAKE_DATASET, self.data, "--samples", str(samples),
                        "--classes", str(classes), "--mean", mean, "--sd", sd],
                       check=True, stdout=subprocess.DEVNULL)
        self.rescan()
        self.dataset_bytes = sum(os.path.getsize(p) for p in self.paths)
        self._digests = {}

    def rescan(self):
        """The samples as ImageFolder orders them (sorted str names, undecodable
        bytes escaped), again after a test added some."""
        self.paths = []
        for cls in sorted(os.listdir(self.data)):
            for name in sorted(os.listdir(os.path.join(self.data, cls))):
                if name.endswith(".JPEG"):
                    self.paths.append(os.path.join(self.data, cls, name))

    def digest(self, index):
        if index not in self._digests:
            with open(self.paths[index], "rb") as f:
                self._digests[index] = hashlib.sha256(f.read()).hexdigest()
        return self._digests[index]

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


class Agent:
    """A standalone nopfs-agent for one node."""

    def __init__(self, ws, job_id, seed, epochs, world_size, ranks, tiers, extra=(),
                 stage=None, wait=True, token=None, verify=True, stderr=None):
        """With @token (32 hex digits, as the plugin gives), the agent's places are
        its defaults, /tmp/nopfs-JOB.TOKEN and /dev/shm/nopfs-JOB.TOKEN; @stage
        another stage directory; @wait: until it is ready. @verify: every copy
        is checked against the CRC32C of its sample's first read (--verify)."""
        self.ws = ws
        self.job_id = f"{job_id}-{os.getpid()}"
        self.runtime = os.path.join(ws.root, f"run-{job_id}")
        self.stage = stage or f"/dev/shm/nopfs-test-{self.job_id}"
        places = ["--runtime-dir", self.runtime, "--stage-dir", self.stage]
        env = dict(os.environ)
        if token:
            self.runtime = f"/tmp/nopfs-{self.job_id}.{token}"
            self.stage = f"/dev/shm/nopfs-{self.job_id}.{token}"
            places = []
            env["NOPFS_AGENT_TOKEN"] = token
        self.report = os.path.join(ws.root, f"report-{job_id}.json")
        self.log = os.path.join(ws.root, f"agent-{job_id}.log")
        cmd = [AGENT, "--dataset", ws.data, "--seed", str(seed), "--epochs", str(epochs),
               "--world-size", str(world_size), "--ranks", ",".join(map(str, ranks)),
               "--job-id", self.job_id] + places + ["--report", self.report, "--log", self.log, "--probe-budget", "1"] + (["--verbose"] if os.environ.get("NOPFS_TEST_VERBOSE") else [])
        for tier in tiers:
            cmd += ["--tier", tier]
        cmd += (["--verify"] if verify else []) + list(extra)
        self.val_dataset = (list(extra)[list(extra).index("--val-dataset") + 1]
                            if "--val-dataset" in extra else None)
        self.started = time.time()
        self.process = subprocess.Popen(cmd, env=env, stderr=stderr, text=bool(stderr))
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        ready = os.path.join(self.runtime, "ready")
        while time.time() < deadline:
            if os.path.exists(ready):
                self.ready_seconds = time.time() - self.started
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"agent exited with {self.process.returncode}: "
                                   + open(self.log).read())
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"agent not ready within {timeout} s")

    def env(self, rank=None):
        env = dict(os.environ)
        env.update({"LD_PRELOAD": PRELOAD, "NOPFS_SOCKET": os.path.join(self.runtime, "agent.sock"),
                    "NOPFS_STAGE_DIR": self.stage, "NOPFS_DATASET": self.ws.data})
        if self.val_dataset:  # as the plugin sets it for a step with --nopfs-val-dataset
            env["NOPFS_VAL_DATASET"] = self.val_dataset
        if rank is not None:
            env["RANK"] = str(rank)
        return env

    def stop(self, timeout=5):
        """SIGTERM; the agent must drain and write its report within 2 s."""
        start = time.time()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("agent did not exit within 5 s of SIGTERM")
        self.stop_seconds = time.time() - start
        return self.process.returncode

    def kill(self):
        """SIGKILL (no cleanup by the agent): remove what it would have."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
            shutil.rmtree(self.stage, ignore_errors=True)
            shutil.rmtree(self.runtime, ignore_errors=True)

    def read_report(self):
        with open(self.report) as f:
            return json.load(f)

    def leftovers(self):
        """Files the agent should have removed."""
        left = []
        if os.path.exists(self.stage):
            left.append(self.stage)
        if os.path.exists(os.path.join(self.runtime, "agent.sock")):
            left.append("agent.sock")
        if os.path.isdir(self.ws.ssd) and os.listdir(self.ws.ssd):
            left.append(f"ssd: {os.listdir(self.ws.ssd)}")
        return left


def filled(agent):
    """Whether the agent's tiers hold every planned sample (nopfs-report --live-node)."""
    done = subprocess.run([REPORT, "--live-node", agent.job_id], capture_output=True,
                          text=True, timeout=30)
    status = json.loads(done.stdout.splitlines()[0])["status"]
    return all(t["filled"]["samples"] == t["planned_samples"] for t in status["tiers"])


def train(agent, ws, rank, world_size, seed, epochs, workers=2, sleep=0.0, preload=True,
          timeout=600, start_epoch=0, start_sample=0, extra=()):
    """Start one rank of the unmodified training script; returns (process, out path)."""
    out = os.path.join(ws.root, f"out-{rank}-{time.time_ns()}.txt")
    env = agent.env(rank) if preload else dict(os.environ)
    cmd = [PYTHON, TRAIN, "--data", ws.data, "--rank", str(rank), "--world-size",
           str(world_size), "--seed", str(seed), "--epochs", str(epochs), "--workers",
           str(workers), "--sleep", str(sleep), "--out", out, "--start-epoch", str(start_epoch),
           "--start-sample", str(start_sample), *extra]
    return subprocess.Popen(cmd, env=env), out


def wait_all(processes, timeout=600):
    deadline = time.time() + timeout
    for process in processes:
        left = max(1, deadline - time.time())
        try:
            if process.wait(timeout=left) != 0:
                raise RuntimeError(f"training rank exited with {process.returncode}")
        except subprocess.TimeoutExpired:
            for p in processes:
                if p.poll() is None:
                    p.kill()
            raise


def verify(ws, outputs, expected_lines):
    """Every sample's bytes equal the file's bytes; returns the number checked."""
    checked = 0
    for out in outputs:
        with open(out) as f:
            for line in f:
                epoch, index, label, digest = line.split()
                if digest != ws.digest(int(index)):
                    raise AssertionError(f"sample {index} in epoch {epoch}: wrong bytes")
                checked += 1
    if checked != expected_lines:
        raise AssertionError(f"{checked} samples read, expected {expected_lines}")
    return checked


def train_and_stop(agent, ws, seed, epochs, expected_lines, ranks=(0, 1)):
    """Train @ranks of a world of len(@ranks) through @agent, check every
    byte they read (@expected_lines in all), stop the agent (exit 0);
    returns (samples checked, its report)."""
    runs = [train(agent, ws, rank, len(ranks), seed=seed, epochs=epochs) for rank in ranks]
    wait_all([p for p, _ in runs])
    checked = verify(ws, [out for _, out in runs], expected_lines)
    assert agent.stop() == 0
    return checked, agent.read_report()


def delivered(report):
    total = 0
    for key in ("delivered_staged", "delivered_on_request"):
        total += sum(v["samples"] for v in report[key].values())
    return total


def read_merged_report(path):
    """The job report node 0 wrote (--merged-report): there, and a JSON object."""
    if not os.path.exists(path):
        raise AssertionError(f"no job report at {path}")
    with open(path) as f:
        return json.load(f)


def report_summary(path):
    """nopfs-report's summary of a job report (its stderr); it must succeed."""
    done = subprocess.run([REPORT, path], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"nopfs-report {path}: exit {done.returncode}: {done.stderr}")
    return done.stderr
