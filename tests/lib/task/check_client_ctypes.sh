#!/bin/sh
# The C API (libnopfs.so) used from Python through ctypes (client_ctypes.py).
python=${NOPFS_PYTHON:-/usr/bin/python3}
builddir=${top_builddir:-.}
exec "$python" "${top_srcdir:-.}/tests/lib/task/client_ctypes.py" \
	"$builddir/lib/.libs/libnopfs.so" "$builddir/tests/helpers/fake_agent"
