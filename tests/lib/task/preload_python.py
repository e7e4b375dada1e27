"""Read dataset files from Python under the interposer, in this process and
in forked children (multiprocessing's fork start method, and os.fork).

    preload_python.py FILE...

Prints "WHO FIRST-LINE SIZE" per file read: the parent reads the first
file, a pool of forked workers the others, a bare os.fork() child the last.
The first line of each copy tells which copy was read.
"""
import multiprocessing
import os
import sys


def first_line(path):
    with open(path, "rb") as f:
        data = f.read()
        size = os.fstat(f.fileno()).st_size
    if size != len(data):
        raise SystemExit(f"{path}: fstat says {size}, read {len(data)}")
    first = data.split(b"\n", 1)[0].decode()
    return f"{first} {len(data)}"


def main():
    paths = sys.argv[1:]
    print("parent", first_line(paths[0]), flush=True)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        for line in pool.map(first_line, paths[1:]):
            print("pool", line, flush=True)
    pid = os.fork()
    if pid == 0:
        print("fork", first_line(paths[-1]), flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
