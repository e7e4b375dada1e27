"""Another uid can neither read the runtime or stage directory nor use the
socket; and if it reaches the socket anyway, the agent refuses it
(SO_PEERCRED) and says so in its report."""
import os
import socket
import struct
import subprocess
import sys

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


try:
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
