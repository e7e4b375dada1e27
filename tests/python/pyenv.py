"""Shared by the tests of python/nopfs: the package from the source tree,
libnopfs from the build tree, and the agent test harness
(tests/agent/system/harness.py)."""
import os
import sys

TOP_SRCDIR = os.path.abspath(os.environ.get("top_srcdir", "."))
TOP_BUILDDIR = os.path.abspath(os.environ.get("top_builddir", "."))
sys.path.insert(0, os.path.join(TOP_SRCDIR, "python"))
sys.path.insert(0, os.path.join(TOP_SRCDIR, "tests", "agent", "system"))
os.environ["NOPFS_LIBRARY"] = os.path.join(TOP_BUILDDIR, "lib", ".libs", "libnopfs.so")
# Spawned DataLoader workers import the package too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(TOP_SRCDIR, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
