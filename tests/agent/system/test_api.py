"""The C API (libnopfs through ctypes), two ranks each reading its exact
DistributedSampler stream for 2 epochs: every sample's bytes and label are
right, they come zero-copy from the rank's staging ring, the PFS is read
once per sample, and after the agent is killed the API still returns
correct samples (from the PFS)."""
import ctypes
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
from torch.utils.data import DistributedSampler  # noqa: E402

LIBNOPFS = os.path.join(harness.TOP_BUILDDIR, "lib", ".libs", "libnopfs.so")


class Sample(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_uint64), ("label", ctypes.c_int64),
                ("index", ctypes.c_uint64), ("source", ctypes.c_uint32),
                ("mapping", ctypes.c_void_p), ("mapping_length", ctypes.c_size_t),
                ("ring_slot", ctypes.c_uint32)]


def load():
    lib = ctypes.CDLL(LIBNOPFS)
    lib.nopfs_client_connect.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_void_p)]
    lib.nopfs_client_get.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(Sample)]
    lib.nopfs_client_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Sample)]
    lib.nopfs_client_disconnect.argtypes = [ctypes.c_void_p]
    return lib


def read_epoch(lib, client, indices, ws, labels):
    sources = {}
    for index in indices:
        sample = Sample()
        status = lib.nopfs_client_get(client, index, ctypes.byref(sample))
        assert status == 0, f"get({index}) failed with {status}"
        data = ctypes.string_at(sample.data, sample.size)
        assert hashlib.sha256(data).hexdigest() == ws.digest(index), f"sample {index}: bytes"
        assert sample.label == labels[index], f"sample {index}: label"
        sources[sample.source] = sources.get(sample.source, 0) + 1
        lib.nopfs_client_release(client, ctypes.byref(sample))
    return sources


ws = harness.Workspace(samples=600, classes=6)
agent = None
try:
    labels = [int(os.path.basename(os.path.dirname(p))[1:]) for p in ws.paths]
    agent = harness.Agent(ws, "api", seed=3, epochs=3, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{ws.dataset_bytes}"])
    os.environ.update({k: v for k, v in agent.env().items() if k.startswith("NOPFS_")})
    lib = load()
    clients = []
    for rank in (0, 1):
        client = ctypes.c_void_p()
        assert lib.nopfs_client_connect(None, rank, ctypes.byref(client)) == 0
        clients.append(client)
    totals = {}
    for epoch in range(2):
        for rank in (0, 1):
            sampler = DistributedSampler(range(600), num_replicas=2, rank=rank, seed=3)
            sampler.set_epoch(epoch)
            for source, count in read_epoch(lib, clients[rank], list(sampler), ws,
                                            labels).items():
                totals[source] = totals.get(source, 0) + count
    staged = totals.get(0, 0)
    assert staged >= 0.9 * 1200, f"only {staged} of 1200 from the staging ring: {totals}"
    # The agent dies: the API reads the PFS on its own, still correct.
    agent.kill()
    sampler = DistributedSampler(range(600), num_replicas=2, rank=0, seed=3)
    sampler.set_epoch(2)
    after = read_epoch(lib, clients[0], list(sampler), ws, labels)
    for client in clients:
        lib.nopfs_client_disconnect(client)
    print(f"2 ranks x 2 epochs through the C API: {staged} of 1200 zero-copy from the ring "
          f"({totals}); after the agent was killed: {after}")
finally:
    if agent:
        agent.kill()
        import shutil
        shutil.rmtree(agent.stage, ignore_errors=True)
    ws.cleanup()
