"""Count the reads of a dataset on the "PFS" independently of nopfs: inotify
IN_OPEN events on every directory under the dataset root, by whatever
process on this machine (every node of the test cluster shares its kernel).
Each open of a sample file counts as one read of the whole file (nopfs's
agents and a PyTorch loader read samples whole).

usage: pfs_watch.py ROOT OUT   -- runs until SIGTERM, then writes OUT (JSON):
  {"opens": N, "bytes": B, "files": F}  (F: distinct files opened)
"""
import ctypes
import ctypes.util
import json
import os
import select
import signal
import struct
import sys

IN_OPEN = 0x20
IN_ISDIR = 0x40000000
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
root, out = sys.argv[1], sys.argv[2]
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
if fd < 0:
    sys.exit(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
directories = {}
for directory, _, _ in os.walk(root):
    wd = libc.inotify_add_watch(fd, directory.encode(), IN_OPEN)
    if wd < 0:
        sys.exit(f"inotify_add_watch {directory}: {os.strerror(ctypes.get_errno())}")
    directories[wd] = directory
stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
opens, total, seen = 0, 0, set()
sizes = {}
# tell the caller we are watching
open(out + ".ready", "w").close()
while True:
    try:
        readable, _, _ = select.select([fd], [], [], 0.2)
    except InterruptedError:
        readable = []
    if not readable:
        if stop:
            break
        continue
    data = os.read(fd, 1 << 20)
    at = 0
    while at < len(data):
        wd, mask, cookie, length = struct.unpack_from("iIII", data, at)
        name = data[at + 16:at + 16 + length].rstrip(b"\0").decode()
        at += 16 + length
        if mask & IN_ISDIR or not name:
            continue
        path = os.path.join(directories[wd], name)
        if path not in sizes:
            sizes[path] = os.path.getsize(path)
        opens += 1
        total += sizes[path]
        seen.add(path)
with open(out, "w") as f:
    json.dump({"opens": opens, "bytes": total, "files": len(seen)}, f)
