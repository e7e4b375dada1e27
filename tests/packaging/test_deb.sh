#!/bin/bash
# The Debian packages: from a clean copy of the sources (make distdir),
# dpkg-buildpackage -b -us -uc builds nopfs and nopfs-dev; lintian finds no
# error in them; nopfs puts the plugin where Debian's Slurm loads plugins
# from and holds the programs, libraries, manual pages and documentation,
# nopfs-dev the headers, nopfs.pc and the link library, neither a libtool
# archive; the unpacked programs run. About a minute on 2 cores.
set -euo pipefail
# The packages build their own way, whatever this build's configuration:
# make distcheck's sanitizer build leaves them to make check's.
if [[ -n ${NOPFS_SANITIZER_RUNTIME:-} ]]; then
	echo "skipped: a sanitizer build (make check builds the packages)" >&2
	exit 77
fi
umask 022
builddir=$(cd "${top_builddir:-.}" && pwd)
for tool in dpkg-buildpackage dh lintian fakeroot dpkg-architecture; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is missing (Debian packages dpkg-dev, debhelper, lintian, fakeroot)"
		exit 77
	fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/nopfs-deb-test.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
failed=0
ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failed=1
}

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
make -s -C "$builddir" distdir distdir="$work/nopfs-$version" >"$work/distdir.log" 2>&1 ||
	{ cat "$work/distdir.log"; not_ok "make distdir failed"; exit 1; }
if ! (cd "$work/nopfs-$version" && DEB_BUILD_OPTIONS="parallel=2 nocheck" \
	dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	not_ok "dpkg-buildpackage -b -us -uc failed"
	exit 1
fi
debver=$(dpkg-parsechangelog -l "$work/nopfs-$version/debian/changelog" -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb=$work/nopfs_${debver}_$arch.deb
dev=$work/nopfs-dev_${debver}_$arch.deb
for file in "$deb" "$dev"; do
	if [[ -f $file ]]; then ok "built ${file##*/}"; else not_ok "${file##*/} was not built"; fi
done
[[ -f $deb && -f $dev ]] || exit 1

if lintian --fail-on error "$work/nopfs_${debver}_$arch.changes" >"$work/lintian.log" 2>&1; then
	ok "lintian: no error ($(grep -c '^W:' "$work/lintian.log") warnings)"
else
	cat "$work/lintian.log"
	not_ok "lintian reports errors"
fi

# has PACKAGE PATH...: each PATH is in the package
has() {
	local package=$1 path files
	shift
	files=$(dpkg-deb -c "$package" | awk '{ print $6 }')
	for path in "$@"; do
		if grep -qxF "./${path#/}" <<<"$files"; then
			ok "${package##*/} has $path"
		else
			not_ok "${package##*/} lacks $path"
		fi
	done
}
has "$deb" "/usr/lib/$multiarch/slurm-wlm/spank_nopfs.so" /usr/bin/nopfs-agent \
	/usr/bin/nopfs-report /usr/bin/nopfs-plan /usr/bin/nopfs-sim \
	"/usr/lib/$multiarch/libnopfs_preload.so" "/usr/lib/$multiarch/libnopfs.so.0" \
	/usr/share/man/man8/spank_nopfs.8.gz /usr/share/man/man8/nopfs-agent.8.gz \
	/usr/share/man/man1/nopfs-plan.1.gz /usr/share/doc/nopfs/user-guide.md.gz \
	/usr/share/doc/nopfs/examples/plugstack.conf.d/nopfs.conf \
	/usr/lib/python3/dist-packages/nopfs/dataset.py
has "$dev" /usr/include/nopfs/nopfs.h /usr/include/nopfs/status.h \
	"/usr/lib/$multiarch/libnopfs.so" "/usr/lib/$multiarch/pkgconfig/nopfs.pc" \
	/usr/share/man/man3/nopfs.3.gz
if grep -q '\.la$' <<<"$(dpkg-deb -c "$deb"; dpkg-deb -c "$dev")"; then
	not_ok "a libtool archive is packaged"
else
	ok "no libtool archive is packaged"
fi
if grep -qF "nopfs (= $debver)" <<<"$(dpkg-deb -f "$dev" Depends)"; then
	ok "nopfs-dev depends on nopfs of its version"
else
	not_ok "nopfs-dev's Depends: $(dpkg-deb -f "$dev" Depends)"
fi

# The packaged programs run, and the example names the packaged plugin.
dpkg-deb -x "$deb" "$work/root"
if out=$(LD_LIBRARY_PATH="$work/root/usr/lib/$multiarch" "$work/root/usr/bin/nopfs-plan" \
	--synthetic 1000:100K --nodes 2 --epochs 2 --tier ram:60M 2>&1) &&
	grep -q owner-first <<<"$out"; then
	ok "the packaged nopfs-plan runs"
else
	echo "$out"
	not_ok "the packaged nopfs-plan does not run"
fi
plugin=$(awk '$1 == "optional" { print $2 }' \
	"$work/root/usr/share/doc/nopfs/examples/plugstack.conf.d/nopfs.conf")
if [[ $plugin == "/usr/lib/$multiarch/slurm-wlm/spank_nopfs.so" ]]; then
	ok "the example plugstack.conf.d/nopfs.conf names $plugin"
else
	not_ok "the example names '$plugin'"
fi
exit "$failed"
