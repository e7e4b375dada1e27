#!/bin/sh
# Compare the imagefolder catalog with torchvision's ImageFolder on random
# messy trees (catalog_torch.py). Skips (77) where Debian's torchvision is
# absent, unless NOPFS_REQUIRE_TORCH=1.
python=${NOPFS_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torchvision' 2>/dev/null; then
	if [ "${NOPFS_REQUIRE_TORCH:-0}" = 1 ]; then
		echo "torchvision is required (NOPFS_REQUIRE_TORCH=1) but '$python' cannot import it" >&2
		exit 1
	fi
	echo "torchvision not importable by $python: skipped"
	exit 77
fi
exec "$python" "${top_srcdir:-.}/tests/lib/catalog/catalog_torch.py" \
	"${top_builddir:-.}/tests/helpers/catalog_dump"
