"""Malformed messages (truncated, oversized, unknown type, wrong version, bad
magic, bad lengths) are rejected; the agent keeps serving and counts them."""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MAGIC = 0x5346504E


def header(type_, length, version=1, magic=MAGIC, request=7):
    return struct.pack("<IHHII", magic, version, type_, length, request)


def hello():
    """pid, rank, flags (C API), plan (none)."""
    return header(1, 16) + struct.pack("<IiII", os.getpid(), 0, 2, 0xFFFFFFFF)


def exchange(sock_path, data, close_early=False):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.settimeout(10)
    s.sendall(data)
    if close_early:
        s.close()
        return None
    chunks = []
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except (socket.timeout, ConnectionResetError):
        pass  # the agent closed the connection
    s.close()
    return b"".join(chunks)


ws = harness.Workspace(samples=40, classes=2, mean="4K", sd="1K")
agent = None
try:
    agent = harness.Agent(ws, "malformed", seed=1, epochs=1, world_size=1, ranks=[0],
                          tiers=["ram:1M"])
    sock = os.path.join(agent.runtime, "agent.sock")
    cases = {
        "truncated header": (header(1, 16)[:10], True),
        "truncated payload": (header(1, 16) + b"\x01\x02", True),
        "oversized": (header(3, 1 << 30), False),
        "unknown type": (header(99, 0), False),
        "wrong version": (header(1, 16, version=9) + bytes(16), False),
        "bad magic": (header(1, 16, magic=0xDEADBEEF) + bytes(16), False),
        "HELLO of an older layout": (header(1, 12) + struct.pack("<IiI", os.getpid(), 0, 2),
                                     False),
        "wrong length for type": (header(1, 3) + b"abc", False),
        "path past its end": (header(3, 8) + struct.pack("<iI", 0, 5000), False),
        "reply type from a task": (header(5, 0), False),
    }
    for name, (data, close_early) in cases.items():
        reply = exchange(sock, data, close_early)
        if reply is not None and reply:
            magic, version, type_, length, _ = struct.unpack("<IHHII", reply[:16])
            assert magic == MAGIC and type_ == 8, f"{name}: reply type {type_}"
        assert agent.process.poll() is None, f"agent died on {name}"
    time.sleep(0.2)
    # Still serving: a well-formed hello gets its welcome.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.settimeout(10)
    s.sendall(hello())
    reply = s.recv(64)
    s.close()
    assert struct.unpack("<IHHII", reply[:16])[2] == 2, "no welcome after malformed input"
    assert agent.stop() == 0
    report = agent.read_report()
    rejected = report["connections"]["malformed_messages"]
    assert rejected >= len(cases) - 2, report["connections"]
    print(f"{len(cases)} malformed inputs, {rejected} rejected messages, agent still serving")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
