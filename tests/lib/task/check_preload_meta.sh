#!/bin/sh
# The interposer's metadata calls (opendir, readdir, scandir, stat, statx,
# access, realpath, ...) answered from the dataset's metadata must equal the
# real calls on odd trees, from C and from Python, and reach the file system
# 0 times for paths in the dataset (preload_meta.py).
set -u

builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
python=${NOPFS_PYTHON:-/usr/bin/python3}
preload=$builddir/lib/.libs/libnopfs_preload.so

for f in "$preload" "$builddir/tests/helpers/meta_build" "$builddir/tests/helpers/meta_probe"; do
	[ -e "$f" ] || { echo "missing $f (make check builds it)" >&2; exit 99; }
done
exec "$python" "$srcdir/tests/lib/task/preload_meta.py" "$(realpath "$preload")" \
	"$builddir/tests/helpers/meta_build" "$builddir/tests/helpers/meta_probe" 20
