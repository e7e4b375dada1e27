"""The C API (libnopfs.so) from Python through ctypes, against fake_agent.

    client_ctypes.py LIBNOPFS FAKE_AGENT

Sample 0 is staged for rank 0 ("i0.0"), the agent serves the others ("AGENT"), and once
the agent is gone the PFS copy ("PFS") is read through the staging index.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

SAMPLES = 4


class Sample(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("size", ctypes.c_uint64),
        ("label", ctypes.c_int64),
        ("index", ctypes.c_uint64),
        ("source", ctypes.c_uint32),
        ("mapping", ctypes.c_void_p),
        ("mapping_length", ctypes.c_size_t),
    ]


def label(index):
    return index % 7 - 3  # fake_agent_label()


def copy(origin, index):
    # Of one size whatever the origin: the client checks the index's sizes.
    return f"{origin:<6} {index}\n".encode() + bytes([65 + index]) * (index * 5000)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_index(path, relative_paths):
    blob = b"".join(p.encode() for p in relative_paths)
    offsets = [0]
    for p in relative_paths:
        offsets.append(offsets[-1] + len(p.encode()))
    with open(path, "wb") as f:
        f.write(struct.pack("=IIQ", 0x4E504649, 1, len(relative_paths)))
        for i in range(len(relative_paths)):
            f.write(struct.pack("=Q", len(copy("PFS", i))))
        for i in range(len(relative_paths)):
            f.write(struct.pack("=q", label(i)))
        f.write(struct.pack(f"={len(offsets)}Q", *offsets))
        f.write(blob)


def bind(lib):
    lib.nopfs_client_connect.argtypes = [
        ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.nopfs_client_get.argtypes = [
        ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(Sample)]
    lib.nopfs_client_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Sample)]
    lib.nopfs_client_release.restype = None
    lib.nopfs_client_disconnect.argtypes = [ctypes.c_void_p]
    lib.nopfs_client_disconnect.restype = None
    lib.nopfs_client_sample_count.argtypes = [ctypes.c_void_p]
    lib.nopfs_client_sample_count.restype = ctypes.c_uint64
    lib.nopfs_client_stats.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.nopfs_status_string.argtypes = [ctypes.c_int]
    lib.nopfs_status_string.restype = ctypes.c_char_p


def get(lib, client, index):
    sample = Sample()
    status = lib.nopfs_client_get(client, index, ctypes.byref(sample))
    assert status == 0, lib.nopfs_status_string(status)
    data = ctypes.string_at(sample.data, sample.size) if sample.size else b""
    result = (data, sample.label, sample.source)
    lib.nopfs_client_release(client, ctypes.byref(sample))
    assert not sample.data and sample.size == 0
    return result


def main():
    lib = ctypes.CDLL(sys.argv[1])
    bind(lib)
    libc = ctypes.CDLL(None)
    assert lib.nopfs_status_string(-11) == b"timed out"
    for internal in ("nopfs_wire_encode", "nopfs_channel_call", "nopfs_log"):
        assert not hasattr(lib, internal), f"{internal} is exported"

    with tempfile.TemporaryDirectory(prefix="nopfs-ctypes-") as root:
        stage, dataset, copies = (os.path.join(root, d)
                                  for d in ("stage", "dataset", "copies"))
        socket = os.path.join(root, "agent.sock")
        paths = [f"class{i % 2}/{i}.bin" for i in range(SAMPLES)]
        os.mkdir(stage, 0o700)  # the client uses only a private staging directory
        for i, p in enumerate(paths):
            write(os.path.join(dataset, p), copy("PFS", i))
            write(os.path.join(copies, f"i{i}"), copy("AGENT", i))
        write(os.path.join(stage, "i0.0"), copy("STAGED", 0))  # rank 0, sample 0
        write_index(os.path.join(stage, "index"), paths)
        os.environ.update(NOPFS_STAGE_DIR=stage, NOPFS_DATASET=dataset,
                          NOPFS_TIMEOUT_MS="500")

        agent = subprocess.Popen([sys.argv[2], "--socket", socket, "--copies", copies,
                                  "--samples", str(SAMPLES)], stdout=subprocess.DEVNULL)
        try:
            # the socket exists once bound, and takes connections once listening
            client = ctypes.c_void_p()
            for _ in range(100):
                status = lib.nopfs_client_connect(socket.encode(), 0, ctypes.byref(client))
                if status == 0:
                    break
                time.sleep(0.05)
            assert status == 0, lib.nopfs_status_string(status)
            assert lib.nopfs_client_sample_count(client) == SAMPLES

            assert get(lib, client, 0) == (copy("STAGED", 0), label(0), 0)
            for i in range(1, SAMPLES):
                assert get(lib, client, i) == (copy("AGENT", i), label(i), 1)
            text = ctypes.c_void_p()
            assert lib.nopfs_client_stats(client, ctypes.byref(text)) == 0
            stats = json.loads(ctypes.string_at(text.value))
            libc.free(text)
            assert stats["gets"] == SAMPLES - 1, stats

            agent.terminate()
            agent.wait()
            for i in range(1, SAMPLES):
                assert get(lib, client, i) == (copy("PFS", i), label(i), 4)
            lib.nopfs_client_disconnect(client)
        finally:
            # Also when a check failed: never leave the fake agent running.
            if agent.poll() is None:
                agent.kill()
                agent.wait()
    print("ok: libnopfs through ctypes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
