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

NAME_PIECES = [
    "a", "b", "B", "b-x", "b.x", "b x", "b_x", "c", "Z", "0", "10", "9",
    "\u00e9", "e\u0301", "\u00df", "\u03a9", "\u65e5", "\U0001F600",
    "\u212a", "\u0130", "\udcff", "\udce9", "-", ".", "~",
]
EXTENSIONS = [
    ".jpg", ".JPG", ".Jpeg", ".png", ".PnG", ".tiff", ".webp", ".txt", "",
    ".jpg.bak", ".k", ".\u212a", ".\u0130pg", ".ipg", ".jp\u00e9g",
]
CUSTOM = (".k", ".ipg", ".txt")


def name(rng, extension=""):
    while True:
        text = "".join(rng.choice(NAME_PIECES) for _ in range(rng.randint(1, 3)))
        text += extension
        if text not in (".", "..") and "/" not in text:
            return text


def fs(path):
    return os.fsencode(path)


def make_file(rng, path):
    if os.path.lexists(fs(path)):
        return
    with open(fs(path), "wb") as f:
        f.write(b"x" * rng.randint(0, 3000))


def make_symlink(target, path):
    if not os.path.lexists(fs(path)):
        os.symlink(fs(target), fs(path))


def fill_dir(rng, path, depth, outside):
    for _ in range(rng.randint(0, 5)):
        make_file(rng, os.path.join(path, name(rng, rng.choice(EXTENSIONS))))
    if rng.random() < 0.3:
        # a symlink to a file elsewhere in the tree or outside it
        target = os.path.join(outside, name(rng, ".jpg"))
        make_file(rng, target)
        make_symlink(target, os.path.join(path, name(rng, rng.choice(EXTENSIONS))))
    if rng.random() < 0.2:
        # a dangling symlink: a file name to os.walk
        extension = ".jpg" if rng.random() < 0.05 else ".gone"
        make_symlink("/nonexistent/nowhere", os.path.join(path, name(rng, extension)))
    if depth >= 3:
        return
    for _ in range(rng.randint(0, 3)):
        sub = os.path.join(path, name(rng))
        if os.path.lexists(fs(sub)):
            continue
        if rng.random() < 0.15:
            target = tempfile.mkdtemp(dir=outside)
            fill_dir(rng, target, depth + 2, outside)
            make_symlink(target, sub)
        else:
            os.mkdir(fs(sub))
            fill_dir(rng, sub, depth + 1, outside)


def make_tree(rng, base):
    root = os.path.join(base, "root")
    outside = os.path.join(base, "outside")
    os.mkdir(root)
    os.mkdir(outside)
    for _ in range(rng.randint(1, 5)):
        cls = name(rng)
        if rng.random() < 0.2:
            cls = "." + cls
        path = os.path.join(root, cls)
        if os.path.lexists(fs(path)):
            continue
        if rng.random() < 0.2:
            target = tempfile.mkdtemp(dir=outside)
            fill_dir(rng, target, 0, outside)
            make_symlink(target, path)
        else:
            os.mkdir(fs(path))
            fill_dir(rng, path, 0, outside)
        if rng.random() < 0.9:
            # most classes get samples for both extension sets
            make_file(rng, os.path.join(path, name(rng, rng.choice([".jpg", ".PNG"]))))
            make_file(rng, os.path.join(path, name(rng, rng.choice([".txt", ".k", ".\u212a"]))))
    for _ in range(rng.randint(0, 2)):
        make_file(rng, os.path.join(root, name(rng, ".jpg")))
    return root


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
