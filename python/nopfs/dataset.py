"""nopfs.Dataset: a map-style torch Dataset served by the node's nopfs agent.

    dataset = nopfs.Dataset("/pfs/imagenet/train", decode=decode_jpeg_bytes)
    sampler = DistributedSampler(dataset, seed=S)      # as given to --nopfs-seed
    loader = DataLoader(dataset, sampler=sampler, num_workers=8)

Indices, classes and labels are torchvision ImageFolder's (or the list
file's line numbers and labels), as the agent's catalog has them. Each
process (the main one, each DataLoader worker, forked or spawned) connects
to the agent of its node on first use, as the rank in $NOPFS_RANK, $RANK or
$SLURM_PROCID. A sample comes from the C API (libnopfs) as a read-only
mapping of the agent's node-local copy: decode() reads it in place, and the
mapping is released when decode returns. Without an agent ($NOPFS_SOCKET
unset, or it does not answer) or for an agent of another dataset, samples
are read from their files; so is a sample the C API could not get.
"""
import ctypes
import json
import os
import sys
import threading

import torch.utils.data

from . import _capi

#: torchvision.datasets.folder.IMG_EXTENSIONS, the agent's default too.
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def imagefolder_samples(root, extensions=IMG_EXTENSIONS):
    """(classes, [(path, label)]) in torchvision ImageFolder's order."""
    extensions = tuple(e.lower() for e in extensions)
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"nopfs.Dataset: no class directory in {root}")
    samples = []
    for label, name in enumerate(classes):
        found = 0
        for directory, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            for file in sorted(files):
                if file.lower().endswith(extensions):
                    samples.append((os.path.join(directory, file), label))
                    found += 1
        if found == 0:
            raise FileNotFoundError(f"nopfs.Dataset: class {name} ({os.path.join(root, name)}) "
                                    f"has no file ending with one of {', '.join(extensions)}")
    return classes, samples


def _is_integer(text):
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdigit() and digits.isascii()


def list_samples(root, list_file):
    """[(path, label)] of a list file: one sample per line, "PATH" or "PATH LABEL"."""
    real_root = os.path.realpath(root)
    lexical_root = os.path.normpath(os.path.abspath(root))
    samples = []
    seen = set()
    with open(list_file, encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, 1):
            where = f"nopfs.Dataset: list file '{list_file}' line {number}"
            line = line.strip(" \t\r\n\v\f")
            if not line:
                raise ValueError(f"{where}: empty line")
            path, label = line, 0
            fields = line.split()
            if len(fields) > 1 and _is_integer(fields[-1]):
                label = int(fields[-1])
                path = line[:line.rfind(fields[-1])].rstrip(" \t\r\n\v\f")
            if os.path.isabs(path):
                normal = os.path.normpath(path)
                for base in (lexical_root, real_root):
                    if normal.startswith(base.rstrip("/") + "/"):
                        relative = normal[len(base.rstrip("/")) + 1:]
                        break
                else:
                    raise ValueError(f"{where}: '{path}' is outside the dataset root '{root}'")
            else:
                relative = os.path.normpath(path)
                if relative == ".." or relative.startswith("../"):
                    raise ValueError(f"{where}: '{path}' is outside the dataset root '{root}'")
            if relative == ".":
                raise ValueError(f"{where}: '{path}' is the dataset root itself")
            full = os.path.join(root, relative)
            if not os.path.isfile(full):
                raise FileNotFoundError(f"{where}: '{path}' is not a file")
            if relative in seen:
                raise ValueError(f"{where}: '{path}' is listed twice")
            seen.add(relative)
            samples.append((full, label))
    if not samples:
        raise ValueError(f"nopfs.Dataset: list file '{list_file}' lists no sample")
    return samples


class _Kept(Exception):
    """decode left a reference to a sample's mapping."""


class _Connection:
    """This process's client of the agent (None when there is none)."""

    def __init__(self):
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.client = None
        self.tried = False


class Dataset(torch.utils.data.Dataset):
    """Samples of an ImageFolder tree or a list file, from the nopfs agent.

    root: the dataset's directory, as given to --nopfs-dataset.
    index: "imagefolder" (default) or "list:FILE", as given to --nopfs-index.
    extensions: file name endings for imagefolder (default: torchvision's).
    decode: called with a read-only memoryview of the sample's bytes, valid
        only during the call (default: bytes, a copy); what it returns must
        not refer to the view (copy what you keep, e.g. bytes(view)).
    transform, target_transform: applied to decode's result and the label.
    socket, rank: the agent's socket and this process's rank (default: from
        the environment srun sets); use_agent=False reads the files only.

    dataset[i] is (transform(decode(bytes)), target_transform(label)).
    sources counts this process's samples by where they came from:
    staging, ram, ssd, peer, pfs (through the C API) or file.
    """

    def __init__(self, root, index="imagefolder", *, extensions=None, decode=None,
                 transform=None, target_transform=None, socket=None, rank=None,
                 use_agent=True):
        self.root = os.fspath(root)
        if not os.path.isdir(self.root):
            raise NotADirectoryError(f"nopfs.Dataset: root '{self.root}' is not a directory")
        if index == "imagefolder":
            self.classes, self.samples = imagefolder_samples(
                self.root, IMG_EXTENSIONS if extensions is None else tuple(extensions))
            self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        elif isinstance(index, str) and index.startswith("list:") and len(index) > 5:
            if extensions is not None:
                raise ValueError("nopfs.Dataset: extensions apply to imagefolder only")
            self.classes, self.class_to_idx = None, None
            self.samples = list_samples(self.root, index[5:])
        else:
            raise ValueError(f"nopfs.Dataset: index={index!r}: accepted: imagefolder or "
                             "list:FILE")
        self.index = index
        self.targets = [label for _, label in self.samples]
        self.decode = decode
        self.transform = transform
        self.target_transform = target_transform
        self.socket = socket
        self.rank = -1 if rank is None else int(rank)
        if self.rank < -1:
            raise ValueError(f"nopfs.Dataset: rank={rank}: must be 0 or more")
        self.use_agent = use_agent
        self.sources = {}
        self._connection = None
        self._warned = set()

    def __len__(self):
        return len(self.samples)

    # A DataLoader with the spawn start method pickles the dataset: the
    # worker makes its own connection.
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_connection"] = None
        state["sources"] = {}
        state["_warned"] = set()
        return state

    def _warn(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            print(f"nopfs.Dataset[{os.getpid()}]: {message}", file=sys.stderr, flush=True)

    def _connect(self, connection):
        """Connect this process to its agent when there is one for this dataset."""
        connection.tried = True
        socket = self.socket or os.environ.get("NOPFS_SOCKET")
        if not self.use_agent or not socket:
            return
        dataset = os.environ.get("NOPFS_DATASET")
        if not dataset or os.path.realpath(dataset) != os.path.realpath(self.root):
            self._warn("dataset", f"the agent serves {dataset or 'an unknown dataset'}, not "
                       f"{self.root}: reading the files")
            return
        try:
            lib = _capi.load()
        except OSError as e:
            self._warn("library", f"{e}: reading the files")
            return
        client = ctypes.c_void_p()
        status = lib.nopfs_client_connect(os.fsencode(socket), self.rank, ctypes.byref(client))
        if status != 0:
            self._warn("connect", f"cannot connect to the agent at {socket} "
                       f"({_capi.status_string(lib, status)}): reading the files")
            return
        count = lib.nopfs_client_sample_count(client)
        if count != len(self.samples):
            lib.nopfs_client_disconnect(client)
            self._warn("count", f"the agent serves {count} samples, {self.root} has "
                       f"{len(self.samples)} ({self.index}): reading the files")
            return
        connection.client = client

    def _client(self):
        """This process's connection; a forked child never uses its parent's."""
        connection = self._connection
        if connection is None or connection.pid != os.getpid():
            connection = self._connection = _Connection()
        if not connection.tried:
            with connection.lock:
                if not connection.tried:
                    self._connect(connection)
        return connection

    def _count(self, source):
        self.sources[source] = self.sources.get(source, 0) + 1

    def _from_agent(self, connection, index, decode):
        """(True, decoded) from the C API, or (False, None) to read the file."""
        lib = _capi.load()
        sample = _capi.Sample()
        with connection.lock:
            if connection.client is None:
                return False, None
            status = lib.nopfs_client_get(connection.client, index, ctypes.byref(sample))
        if status != 0:
            self._warn("get", f"sample {index}: {_capi.status_string(lib, status)}: reading "
                       "its file")
            return False, None
        release = True
        try:
            if sample.label != self.samples[index][1]:
                self._warn("label", f"sample {index}: the agent's label {sample.label} is not "
                           f"{self.samples[index][1]} (another index?): reading the files")
                with connection.lock:
                    lib.nopfs_client_release(connection.client, ctypes.byref(sample))
                    lib.nopfs_client_disconnect(connection.client)
                    connection.client = None
                release = False
                return False, None
            source = _capi.SOURCES[sample.source] if sample.source < len(_capi.SOURCES) \
                else "pfs"
            if sample.size == 0:
                decoded = decode(memoryview(b""))
            else:
                try:
                    decoded = self._decode_in_place(sample, index, decode)
                except _Kept as e:
                    release = False  # left mapped: something refers to it
                    raise RuntimeError(str(e)) from None
            self._count(source)
            return True, decoded
        finally:
            if release:
                with connection.lock:
                    lib.nopfs_client_release(connection.client, ctypes.byref(sample))

    @staticmethod
    def _decode_in_place(sample, index, decode):
        """decode(a view of the sample's mapping); _Kept when something still
        refers to the mapping after the call (it must then stay mapped)."""
        owner, base, view = _capi.views(sample)
        try:
            decoded = decode(view)
        except BaseException:
            # The traceback may hold the view: released only if nothing else does.
            try:
                view.release()
                base.release()
            except BufferError:
                pass
            del view, base
            if sys.getrefcount(owner) > 2:
                raise _Kept(f"nopfs.Dataset: decode failed on sample {index} and kept a "
                            "reference to its memory (left mapped)")
            raise
        # Two references: the local name and getrefcount's argument.
        kept = sys.getrefcount(view) > 2
        try:
            view.release()
            base.release()
        except BufferError:
            kept = True
        del view, base
        if kept or sys.getrefcount(owner) > 2:
            raise _Kept(f"nopfs.Dataset: decode kept a reference to sample {index}'s memory, "
                        "which is unmapped after the call: return a copy (e.g. bytes(view))")
        return decoded

    def __getitem__(self, index):
        index = int(index)
        if index < 0:
            index += len(self.samples)
        if not 0 <= index < len(self.samples):
            raise IndexError(f"nopfs.Dataset: index {index} out of range 0..{len(self) - 1}")
        decode = self.decode or bytes
        connection = self._client()
        served, data = False, None
        if connection.client is not None:
            served, data = self._from_agent(connection, index, decode)
        if not served:
            with open(self.samples[index][0], "rb") as f:
                raw = f.read()
            data = decode(memoryview(raw).toreadonly())
            self._count("file")
        label = self.samples[index][1]
        if self.transform is not None:
            data = self.transform(data)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return data, label

    def agent_stats(self):
        """The agent's live statistics (a dict), or None without an agent."""
        connection = self._client()
        if connection.client is None:
            return None
        lib = _capi.load()
        text = ctypes.c_void_p()
        with connection.lock:
            if connection.client is None:
                return None
            status = lib.nopfs_client_stats(connection.client, ctypes.byref(text))
        if status != 0:
            return None
        try:
            return json.loads(ctypes.string_at(text.value).decode())
        finally:
            _libc_free(text)

    def close(self):
        """Disconnect this process from its agent (a later access connects again)."""
        connection = self._connection
        self._connection = None
        if connection is not None and connection.pid == os.getpid() and connection.client:
            with connection.lock:
                _capi.load().nopfs_client_disconnect(connection.client)
                connection.client = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the process exit closes it
            pass


_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def _libc_free(pointer):
    _libc.free(pointer)
