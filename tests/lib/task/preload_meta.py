"""The interposer's metadata calls against the real ones, call by call.

usage: preload_meta.py PRELOAD META_BUILD META_PROBE [TREES]
       preload_meta.py --child ROOT LIST     (what each run prints)

A directory changed after the scan and marked by the agent's check is
answered by the file system instead (and counted).

For each of TREES random odd trees (odd_tree.make_tree: non-UTF-8 and
unicode names, symlinks to files and directories inside and outside the
tree, dangling symlinks, nested and empty directories, non-image files; plus
a symlink cycle, a symlinked class and paths that fail with ENOENT and
ENOTDIR), meta_build scans the tree's metadata into a private staging
directory as an agent does (and, for the first trees, its listings alone,
the files' stats left to the file system), then meta_probe (stat, lstat, fstatat, statx,
access, faccessat, realpath, opendir/readdir/readdir64/readdir_r, seekdir,
scandir, fdopendir) and this script's child (os.stat, os.lstat, os.access,
os.listdir, os.scandir, os.walk, os.path.*, pathlib) run on every path with
and without the interposer: their outputs must be equal. The interposed
child then runs under strace: none of its file system calls may name a path
in the dataset (the same child without the interposer makes many).
"""
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "catalog"))
from odd_tree import make_tree  # noqa: E402


def stat_tuple(function, path, **kwargs):
    try:
        s = function(path, **kwargs)
    except OSError as e:
        return ("error", e.errno)
    return (s.st_mode, s.st_ino, s.st_dev, s.st_nlink, s.st_uid, s.st_gid, s.st_size,
            s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns, s.st_blocks, s.st_blksize)


def attempt(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except OSError as e:
        return ("error", e.errno)


def scandir_list(path):
    try:
        with os.scandir(path) as it:
            return [(e.name, e.inode(), attempt(e.is_dir), attempt(e.is_dir, follow_symlinks=False),
                     attempt(e.is_file), attempt(e.is_symlink), stat_tuple(lambda p: e.stat(), None),
                     stat_tuple(lambda p: e.stat(follow_symlinks=False), None))
                    for e in it]
    except OSError as e:
        return ("error", e.errno)


def child(root, list_path):
    out = []
    with open(list_path, "rb") as f:
        paths = [p for p in f.read().split(b"\0") if p]
    for p in paths:
        out.append(("path", p))
        out.append(("stat", stat_tuple(os.stat, p)))
        out.append(("lstat", stat_tuple(os.lstat, p)))
        out.append(("os.path", os.path.exists(p), os.path.lexists(p), os.path.isdir(p),
                    os.path.isfile(p), os.path.islink(p)))
        out.append(("access", os.access(p, os.R_OK), os.access(p, os.X_OK),
                    os.access(p, os.F_OK), os.access(p, os.R_OK, follow_symlinks=False)))
        out.append(("realpath", os.path.realpath(p)))
        out.append(("listdir", attempt(os.listdir, p)))
        out.append(("scandir", scandir_list(p)))
        q = pathlib.Path(os.fsdecode(p))
        out.append(("pathlib", q.exists(), q.is_dir(), q.is_file(), q.is_symlink(),
                    stat_tuple(lambda x: q.stat(), None)))
        if q.is_dir():
            out.append(("iterdir", attempt(lambda: [str(x) for x in q.iterdir()])))
    out.append(("walk", list(os.walk(root))))
    walked = []
    for top, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if d != b"loop"]  # the cycle
        walked.append((top, dirs[:], files))
    out.append(("walk-followlinks", walked))
    out.append(("rglob", [str(x) for x in pathlib.Path(os.fsdecode(root)).rglob("*")]))
    for line in out:
        print(repr(line))


def odd_extras(rng, root):
    """What make_tree may leave out: empty directories, a cycle, a symlinked class."""
    os.makedirs(os.path.join(root, b"empty", b"nested-empty"))
    os.mkdir(os.path.join(root, b"cycle"))
    os.symlink(b"..", os.path.join(root, b"cycle", b"loop"))
    with open(os.path.join(root, b"cycle", b"notes.txt"), "wb") as f:
        f.write(b"n" * rng.randint(0, 100))
    dirs = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))]
    os.symlink(os.path.join(root, dirs[0]), os.path.join(root, b"linked-class"))


def path_list(root):
    paths = [root, root + b"/", root + b"/.", root + b"//", root + b"/nonexistent",
             root + b"/nonexistent/x", root + b"/empty/../cycle", root + b"/linked-class/",
             root + b"/cycle/loop/cycle/notes.txt", root + b"/cycle/loop/",
             root + b"/cycle/loop/cycle"]
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            paths.append(os.path.join(top, name))
        for name in files:
            path = os.path.join(top, name)
            paths += [path + b"/", path + b"/x", path + b"/."]
        for name in dirs:
            path = os.path.join(top, name)
            paths += [path + b"/", path + b"/./", path + b"/missing"]
    return paths


def run(command, env=None):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {result.stderr.decode(errors='replace')}")
    if env is not None:
        # The interposer must have used the metadata, not left it all to the real calls.
        served = re.findall(rb"metadata calls into the dataset: (\d+) served", result.stderr)
        if not served or not int(served[-1]):
            raise RuntimeError(f"{command[0]} was not served: "
                               f"{result.stderr.decode(errors='replace')[-2000:]}")
    return result.stdout


def first_difference(a, b):
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}:\n  real   {x[:400]!r}\n  served {y[:400]!r}"
    return f"lengths {len(la)} and {len(lb)}"


def servable(path):
    """Paths the metadata answers: no "..", not through the cycle (left unlisted)."""
    return b"/.." not in path and b"/cycle/loop/" not in path + b"/"


def strace_dataset_calls(command, env, root, work):
    trace = os.path.join(work, b"trace")
    subprocess.run(["strace", "-f", "-qq", "-s", "8192", "-e", "trace=%file,getdents64",
                    "-o", trace] + command, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env, check=True)
    with open(trace, "rb") as f:
        return [line for line in f if root in line and b"execve(" not in line]


def changed_directory(root, stage, meta_build, python, env):
    """A directory changed after the scan, once the agent's check marked it,
    is answered by the file system: its new entry is seen, as the real calls
    see it, and counted."""
    empty = os.path.join(root, b"empty")
    with open(os.path.join(empty, b"new.jpg"), "wb") as f:
        f.write(b"new")
    marked = run([meta_build, b"--check", stage])
    if marked.strip() != b"changed " + os.path.realpath(empty):
        print(f"the check marked {marked!r}, not {empty!r}")
        return False
    code = ("import os, sys; p = os.fsencode(sys.argv[1]); "
            "print(os.listdir(p), os.stat(os.path.join(p, b'new.jpg')).st_size, "
            "os.path.isdir(os.path.join(p, b'nested-empty')))")
    real = run([python, "-c", code, empty])
    result = subprocess.run([python, "-c", code, empty], env=env, capture_output=True)
    stale = re.findall(rb"\((\d+) of them for directories changed", result.stderr)
    if result.stdout != real or not stale or not int(stale[-1]):
        print(f"changed directory: served {result.stdout!r}, real {real!r}, "
              f"{result.stderr[-300:]!r}")
        return False
    print(f"changed directory after the scan: answered by the file system "
          f"({int(stale[-1])} calls counted)")
    return True


def compare(commands, env, what):
    """Run each (name, command) without and with the interposer: (lines
    compared, commands whose outputs differ)."""
    lines = failures = 0
    for name, command in commands:
        real = run(command)
        served = run(command, env)
        lines += real.count(b"\n")
        if real != served:
            failures += 1
            print(f"{what}: {name} differs at {first_difference(real, served)}")
    return lines, failures


def remapped(root, stage, meta_build, python, env):
    """Tasks started on the agent's listings (files' stats not yet made) pass
    a file's stat to the file system, and map the whole metadata once the
    agent has replaced the file: the same stat is then served."""
    files = [os.path.join(root, b"remap-check.bin")]
    with open(files[0], "wb") as f:
        f.write(b"x" * 65)
    run([meta_build, b"--listing", root, stage])
    code = ("import os, sys, time; p = os.fsencode(sys.argv[1]); s = os.stat(p); "
            "print(s.st_ino, s.st_size, s.st_mtime_ns, flush=True); sys.stdin.readline(); "
            "time.sleep(1.2); s = os.stat(p); print(s.st_ino, s.st_size, s.st_mtime_ns)")
    real = run([python, "-c", code.replace("sys.stdin.readline(); ", ""), files[0]])
    child = subprocess.Popen([python, "-c", code, files[0]], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = child.stdout.readline()
    run([meta_build, root, stage])
    out, err = child.communicate(b"go\n", timeout=30)
    counts = re.findall(rb"metadata calls into the dataset: (\d+) served, (\d+) passed", err)
    if first + out != real or not counts or counts[-1] != (b"1", b"1"):
        print(f"remapped metadata: {first + out!r} against {real!r}, counts {counts}, "
              f"{err[-300:]!r}")
        return False
    print("a file's stat: passed with the listings, served from the whole metadata once it "
          "replaced them")
    return True


def main():
    preload, meta_build, meta_probe = sys.argv[1:4]
    if not shutil.which("strace"):
        print("strace is missing (contrib/install-deps installs it)")
        return 99
    trees = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    python = sys.executable
    me = os.path.abspath(__file__)
    failures = 0
    lines = 0
    for seed in range(trees):
        rng = random.Random(seed)
        work = os.fsencode(tempfile.mkdtemp(prefix="nopfs-preload-meta-"))
        try:
            root = os.fsencode(make_tree(rng, os.fsdecode(work)))
            odd_extras(rng, root)
            stage = os.path.join(work, b"stage")
            os.mkdir(stage, 0o700)
            listing = os.path.join(work, b"list")
            with open(listing, "wb") as f:
                f.write(b"\0".join(path_list(root)) + b"\0")
            probe = [meta_probe, listing]
            python_child = [python, me, "--child", root, listing]
            # Settle access times: the first reads of directories and links update them.
            run(probe)
            run(python_child)
            run([meta_build, root, stage])
            env = dict(os.environ, LD_PRELOAD=preload, NOPFS_DATASET=root,
                       NOPFS_STAGE_DIR=stage, NOPFS_DEBUG="1")
            env.pop("NOPFS_SOCKET", None)
            env.pop("NOPFS_DISABLE", None)
            commands = (("meta_probe", probe), ("python", python_child))
            compared, failed = compare(commands, env, f"tree {seed}")
            lines += compared
            failures += failed
            if seed < 5:
                # the listings alone (what tasks started early see first): files' stats pass
                run([meta_build, b"--listing", root, stage])
                compared, failed = compare(commands, env, f"tree {seed} on the listings")
                lines += compared
                failures += failed
                if seed == 0:
                    failures += not remapped(root, stage, meta_build, python, env)
                run([meta_build, root, stage])
            if seed < 3:
                with open(listing, "wb") as f:
                    f.write(b"\0".join(p for p in path_list(root) if servable(p)) + b"\0")
                plain = strace_dataset_calls(python_child, None, root, work)
                ours = strace_dataset_calls(python_child, env, root, work)
                if not plain or ours:
                    failures += 1
                    print(f"tree {seed}: dataset calls reaching the file system: "
                          f"{len(plain)} plain, {len(ours)} with the interposer (want 0)")
                    for line in ours[:5]:
                        print("  ", line)
                else:
                    print(f"tree {seed}: {len(plain)} dataset metadata calls plain, "
                          f"0 with the interposer")
            if seed < 3:
                failures += not changed_directory(root, stage, meta_build, python, env)
        finally:
            shutil.rmtree(work)
    print(f"{trees - failures}/{trees} trees: served metadata equals the real calls "
          f"({lines} result lines compared)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
