"""libnopfs (lib/task/nopfs.h) through ctypes.

The library is $NOPFS_LIBRARY when set, else libnopfs.so.0 in the libdir
nopfs was installed to, else the one the dynamic linker finds.
"""
import ctypes
import ctypes.util
import os

try:
    from . import _paths
except ImportError:  # running from the source tree
    _paths = None

# nopfs_wire_source: where a sample came from.
SOURCES = ("staging", "ram", "ssd", "peer", "pfs")


class Sample(ctypes.Structure):
    """struct nopfs_sample."""

    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_uint64), ("label", ctypes.c_int64),
                ("index", ctypes.c_uint64), ("source", ctypes.c_uint32),
                ("mapping", ctypes.c_void_p), ("mapping_length", ctypes.c_size_t),
                ("ring_slot", ctypes.c_uint32)]


def library_path():
    """The path (or name) of libnopfs to load, or None."""
    path = os.environ.get("NOPFS_LIBRARY")
    if path:
        return path
    if _paths is not None:
        installed = os.path.join(_paths.LIBDIR, "libnopfs.so.0")
        if os.path.exists(installed):
            return installed
    return ctypes.util.find_library("nopfs")


_lib = None


def load():
    """libnopfs with its prototypes declared; OSError when it cannot be loaded."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not path:
        raise OSError("libnopfs not found: install nopfs or set $NOPFS_LIBRARY")
    lib = ctypes.CDLL(path)
    lib.nopfs_client_connect.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_void_p)]
    lib.nopfs_client_connect.restype = ctypes.c_int
    lib.nopfs_client_disconnect.argtypes = [ctypes.c_void_p]
    lib.nopfs_client_disconnect.restype = None
    lib.nopfs_client_sample_count.argtypes = [ctypes.c_void_p]
    lib.nopfs_client_sample_count.restype = ctypes.c_uint64
    lib.nopfs_client_get.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(Sample)]
    lib.nopfs_client_get.restype = ctypes.c_int
    lib.nopfs_client_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Sample)]
    lib.nopfs_client_release.restype = None
    lib.nopfs_client_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.nopfs_client_stats.restype = ctypes.c_int
    lib.nopfs_status_string.argtypes = [ctypes.c_int]
    lib.nopfs_status_string.restype = ctypes.c_char_p
    _lib = lib
    return lib


# A type of array as long as any sample: from_address() makes the owner of a
# view of a sample's memory without copying it, and without a new type (ctypes
# keeps every array type it made) for each size.
_ANY_SIZE = ctypes.c_ubyte * (1 << 60)


def views(sample):
    """(owner, base, view): view is a read-only memoryview of the sample's bytes,
    not copied; base and owner are what it rests on. Whoever keeps a reference
    to view, or a view derived from it, adds to the reference counts of view or
    of owner (see Dataset.__getitem__)."""
    owner = _ANY_SIZE.from_address(sample.data)
    base = memoryview(owner)
    return owner, base, base.cast("B")[:sample.size].toreadonly()


def status_string(lib, status):
    text = lib.nopfs_status_string(status)
    return text.decode() if text else f"status {status}"
