"""Random odd dataset trees for the tests that compare nopfs with the real thing.

make_tree(rng, base) builds BASE/root (and BASE/outside, which symlinks point
into): nested directories whose names sort differently as paths than
depth-first, mixed-case and non-image extensions, symlinked classes,
directories and files, hidden classes, non-ASCII and non-UTF-8 names,
dangling symlinks, empty directories, files at the root.
"""
import os
import tempfile

NAME_PIECES = [
    "a", "b", "B", "b-x", "b.x", "b x", "b_x", "c", "Z", "0", "10", "9",
    "\u00e9", "e\u0301", "\u00df", "\u03a9", "\u65e5", "\U0001F600",
    "\u212a", "\u0130", "\udcff", "\udce9", "-", ".", "~",
]
EXTENSIONS = [
    ".jpg", ".JPG", ".Jpeg", ".png", ".PnG", ".tiff", ".webp", ".txt", "",
    ".jpg.bak", ".k", ".\u212a", ".\u0130pg", ".ipg", ".jp\u00e9g",
]


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
