#!/bin/sh
# Compare nopfs-plan's streams with the real torch DistributedSampler.
# Skips (77) where Debian's python3-torch is absent, unless NOPFS_REQUIRE_TORCH=1.
python=${NOPFS_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
	if [ "${NOPFS_REQUIRE_TORCH:-0}" = 1 ]; then
		echo "torch is required (NOPFS_REQUIRE_TORCH=1) but '$python' cannot import it" >&2
		exit 1
	fi
	echo "torch not importable by $python: skipped (stored vectors still run)"
	exit 77
fi
exec "$python" "${top_srcdir:-.}/tests/lib/plan/sampler_torch.py" compare "${top_builddir:-.}/nopfs-plan"
