"""Another uid can neither read the runtime or stage directory nor use the
socket; and if it reaches the socket anyway, the agent refuses it
(SO_PEERCRED) and says so in its report. Connections beyond the cap are
closed, and running out of descriptors does not make the agent spin."""
import os
import resource
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

if os.geteuid() != 0:
    harness.skip("needs root to act as another uid")
ws = harness.Workspace(samples=50, classes=2, mean="4K", sd="1K")
agent = None
OTHER = 65534  # nobody

PROBE = r"""
import os, socket, sys
runtime, stage, sock = sys.argv[1:4]
results = []
for path in (runtime, stage):
    try:
        os.listdir(path)
        results.append("listed " + path)
    except PermissionError:
        pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sock)
    s.settimeout(5)
    hello = bytes.fromhex("4e5046530100010010000000" "01000000") + (1234).to_bytes(4, "little") \
        + (0).to_bytes(4, "little", signed=True) + (1).to_bytes(4, "little") + bytes(4)
    s.sendall(hello)
    reply = s.recv(64)
    results.append("connected, reply %d bytes" % len(reply))
except (PermissionError, ConnectionRefusedError, ConnectionResetError, BrokenPipeError) as e:
    results.append("refused: " + type(e).__name__)
print(";".join(results))
"""


def as_other(*args):
    return subprocess.run(["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups",
                           harness.PYTHON, "-c", PROBE, *args], capture_output=True, text=True,
                          timeout=30)


# A well-formed HELLO (wire.h): header (magic, version, type, length, id), pid, rank, flags,
# plan (none).
HELLO = bytes.fromhex("4e5046530100010010000000" "01000000") + (1234).to_bytes(4, "little") \
    + (0).to_bytes(4, "little", signed=True) + (1).to_bytes(4, "little") \
    + (0xFFFFFFFF).to_bytes(4, "little")


def connect(path):
    """A connection that has said HELLO; (socket, bytes of the reply, 0 when closed)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    try:
        s.sendall(HELLO)
        return s, len(s.recv(64))
    except (ConnectionResetError, BrokenPipeError):
        return s, 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_connection_cap():
    """Beyond --max-connections the agent closes connections and says so once."""
    capped = harness.Agent(ws, "cap", seed=1, epochs=1, world_size=1, ranks=[0],
                           tiers=["ram:1M"], extra=["--max-connections", "4"])
    try:
        sock = os.path.join(capped.runtime, "agent.sock")
        held = [connect(sock) for _ in range(12)]
        served = sum(1 for _, n in held if n > 0)
        assert served == 4, f"{served} of 12 connections served with a cap of 4"
        for s, _ in held:
            s.close()
        deadline = time.time() + 5
        while connect(sock)[1] == 0:  # the freed places come back
            assert time.time() < deadline, "no connection served after the others closed"
            time.sleep(0.05)
        with open(capped.log) as f:
            said = [line for line in f if "--max-connections" in line]
        assert len(said) == 1, said
        print(f"connection cap 4: {served} of 12 served; said: {said[0].strip()}")
    finally:
        capped.kill()


def check_out_of_descriptors():
    """EMFILE on accept: the agent pauses (no spinning), then serves again."""
    starved = harness.Agent(ws, "fds", seed=1, epochs=1, world_size=1, ranks=[0],
                            tiers=["ram:1M"])
    pid = starved.process.pid
    try:
        sock = os.path.join(starved.runtime, "agent.sock")
        time.sleep(0.5)
        limit = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        used = len(os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (used + 2, limit[1]))
        held = []
        for _ in range(40):  # connected, waiting to be accepted
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            held.append(s)
        before = cpu_seconds(pid)
        time.sleep(2)
        spent = cpu_seconds(pid) - before
        assert starved.process.poll() is None, "the agent died out of descriptors"
        assert spent < 0.5, f"the agent used {spent:.2f} s of CPU in 2 s out of descriptors"
        for s in held:
            s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, limit)
        deadline = time.time() + 10
        while connect(sock)[1] == 0:
            assert time.time() < deadline, "the agent does not serve after descriptors freed"
            time.sleep(0.1)
        with open(starved.log) as f:
            said = [line for line in f if "cannot accept" in line]
        assert said, "the agent did not say it ran out of descriptors"
        print(f"out of descriptors: {spent:.3f} s CPU in 2 s; said: {said[0].strip()}")
    finally:
        starved.kill()


try:
    check_connection_cap()
    check_out_of_descriptors()
    os.chmod(ws.root, 0o755)
    agent = harness.Agent(ws, "security", seed=1, epochs=1, world_size=1, ranks=[0],
                          tiers=["ram:1M"])
    sock = os.path.join(agent.runtime, "agent.sock")
    for path in (agent.runtime, agent.stage):
        mode = os.stat(path).st_mode & 0o777
        assert mode == 0o700, f"{path} has mode {oct(mode)}"
    out = as_other(agent.runtime, agent.stage, sock).stdout.strip()
    assert "listed" not in out and out.startswith("refused"), out
    # Open the directories up as a careless admin might: the agent still refuses.
    os.chmod(agent.runtime, 0o755)
    os.chmod(sock, 0o777)
    out = as_other(agent.runtime, agent.stage, sock).stdout.strip()
    # The agent closes the connection at once: the task sees a reset or a broken pipe.
    assert "reply 0 bytes" in out or "ConnectionResetError" in out or "BrokenPipeError" in out, out
    assert agent.stop() == 0
    report = agent.read_report()
    assert report["connections"]["refused"] >= 1, report["connections"]
    print(f"other uid: {out}; refused connections: {report['connections']['refused']}")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
