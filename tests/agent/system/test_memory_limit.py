"""A memory limit below the node's memory. The agent runs in a memory cgroup
limited to 256 MiB (as Slurm's --mem puts a job in one): its ram:50% tier is
half of that limit, not half of the node's memory, and the log says which
limit it took; the pipeline reads every sample right through it. Needs a
writable memory cgroup (v1 memory.limit_in_bytes or v2 memory.max): the
test is skipped where the machine gives none."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MIB = 1 << 20
LIMIT = 256 * MIB


def own_memory_cgroup():
    """(the directory of this process's memory cgroup, the limit file's name) or None."""
    for line in open("/proc/self/cgroup"):
        number, controllers, path = line.rstrip("\n").split(":", 2)
        if "memory" in controllers.split(","):
            return os.path.join("/sys/fs/cgroup/memory", path.lstrip("/")), \
                "memory.limit_in_bytes"
        if number == "0" and controllers == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            return os.path.join("/sys/fs/cgroup", path.lstrip("/")), "memory.max"
    return None


harness.require_torch()
found = own_memory_cgroup()
if not found:
    harness.skip("no memory cgroup for this process")
parent, limit_file = found
child = os.path.join(parent, f"nopfs-test-{os.getpid()}")
try:
    os.mkdir(child)
    with open(os.path.join(child, limit_file), "w") as f:
        f.write(str(LIMIT))
except OSError as why:
    harness.skip(f"cannot make a memory cgroup under {parent}: {why}")

ws = harness.Workspace(samples=300, classes=3)
agent = None
try:
    # only the agent goes into the limited group: this process moves in to
    # start it, and out again
    with open(os.path.join(child, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    try:
        agent = harness.Agent(ws, "memlimit", seed=4, epochs=2, world_size=2, ranks=[0, 1],
                              tiers=["ram:50%"], wait=False)
    finally:
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    agent.wait_ready()
    log = open(agent.log).read()
    assert "of the job's memory limit (256.00 MiB" in log, log
    checked, report = harness.train_and_stop(agent, ws, 4, 2, 300 * 2)
    agent = None
    capacity = report["tiers"][0]["capacity"]
    assert capacity <= LIMIT // 2, capacity
    node = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    print(f"ram:50% under a 256 MiB memory cgroup: a {capacity / MIB:.0f} MiB tier "
          f"(50% of the node's {node / (1 << 30):.1f} GiB would be "
          f"{node / 2 / (1 << 30):.1f} GiB); {checked} samples correct")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
    try:
        os.rmdir(child)
    except OSError:
        pass
