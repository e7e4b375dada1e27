"""Compare nopfs's imagefolder catalog with torchvision's on random messy trees.

usage: catalog_torch.py CATALOG_DUMP [TREES]

Builds TREES random dataset trees (nested directories whose names sort
differently as paths than depth-first, mixed-case and non-image extensions,
symlinked classes, directories and files, hidden classes, non-ASCII and
non-UTF-8 names, dangling symlinks, files at the root) and checks that
catalog_dump prints exactly torchvision.datasets.ImageFolder's samples and
targets (and a DatasetFolder's with other extensions), with the sizes os.stat
reports; where torchvision refuses a tree, catalog_dump must fail too.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

from torchvision.datasets import DatasetFolder, ImageFolder

from odd_tree import fs, make_tree

CUSTOM = (".k", ".ipg", ".txt")

def torch_samples(root, extensions):
    """[(relative path as bytes, target, size)], or None where nopfs must refuse:
    torchvision raises, or lists a sample that does not exist."""
    try:
        if extensions is None:
            samples = ImageFolder(root).samples
        else:
            samples = DatasetFolder(root, loader=lambda p: p, extensions=extensions).samples
    except (FileNotFoundError, OSError):
        return None
    prefix = os.path.join(root, "")
    result = []
    for path, target in samples:
        assert path.startswith(prefix), path
        try:
            size = os.stat(fs(path)).st_size
        except FileNotFoundError:
            return None  # a dangling symlink sample, which nopfs refuses
        result.append((fs(path[len(prefix):]), target, size))
    return result


def our_samples(dump, root, extensions):
    command = [dump]
    if extensions is not None:
        command += ["-e", ",".join(extensions)]
    command.append(fs(root))
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if run.returncode != 0:
        return None, run.stderr.decode(errors="replace")
    result = []
    for index, line in enumerate(run.stdout.split(b"\n")[:-1]):
        fields = line.split(b"\t", 3)
        assert int(fields[0]) == index, line
        result.append((fields[3], int(fields[1]), int(fields[2])))
    return result, run.stderr.decode(errors="replace")


def compare(dump, root, extensions, what, stats):
    expected = torch_samples(root, extensions)
    ours, stderr = our_samples(dump, root, extensions)
    if expected is None:
        stats["refused"] += 1
        if ours is not None:
            print(f"{what}: nopfs accepted a tree it must refuse")
            return False
        return True
    stats["samples"] += len(expected)
    if ours != expected:
        print(f"{what}: catalogs differ ({len(ours or [])} vs torchvision {len(expected)})")
        print(stderr)
        for i, (a, b) in enumerate(zip(ours or [], expected)):
            if a != b:
                print(f"  first difference at {i}: nopfs {a!r} torchvision {b!r}")
                break
        return False
    return True


def main():
    dump = sys.argv[1]
    trees = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    failures = 0
    compared = 0
    stats = {"refused": 0, "samples": 0}
    for seed in range(trees):
        rng = random.Random(seed)
        base = tempfile.mkdtemp(prefix="nopfs-catalog-torch-")
        try:
            root = make_tree(rng, base)
            for extensions in (None, CUSTOM):
                what = f"tree {seed} extensions {extensions}"
                ok = compare(dump, root, extensions, what, stats)
                failures += not ok
                compared += 1
                if not ok:
                    subprocess.run(["find", fs(base), "-printf", "%y %p -> %l\n"])
        finally:
            shutil.rmtree(fs(base))
    print(f"{compared - failures}/{compared} catalogs match torchvision "
          f"({stats['samples']} samples; {stats['refused']} trees refused by both)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
