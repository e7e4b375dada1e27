#!/bin/bash
# The RPM spec (contrib/rpm/nopfs.spec): rpmbuild -tb builds nopfs and
# nopfs-devel from the source distribution's tarball, the plugin in
# Slurm's plugin directory (LIBDIR/slurm by default, or slurm_plugindir),
# the programs, libraries, manual pages and documentation in nopfs, the
# C API's headers, nopfs.pc and link library in nopfs-devel, no libtool
# archive. Run with Debian's rpm: its database knows none of the
# BuildRequires (Debian packages provide them), so rpmbuild runs with
# --nodeps. About a minute on 2 cores.
set -euo pipefail
# The packages build their own way, whatever this build's configuration:
# make distcheck's sanitizer build leaves them to make check's.
if [[ -n ${NOPFS_SANITIZER_RUNTIME:-} ]]; then
	echo "skipped: a sanitizer build (make check builds the packages)" >&2
	exit 77
fi
umask 022
builddir=$(cd "${top_builddir:-.}" && pwd)
if ! command -v rpmbuild >/dev/null 2>&1; then
	echo "SKIP: rpmbuild is missing (Debian package rpm)"
	exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/nopfs-rpm-test.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
failed=0
ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failed=1
}

# The tarball "make dist" makes (the same tree, tarred the same way), here.
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
make -s -C "$builddir" distdir distdir="$work/nopfs-$version" >"$work/distdir.log" 2>&1 ||
	{ cat "$work/distdir.log"; not_ok "make distdir failed"; exit 1; }
(cd "$work" && tar --format=ustar -chf - "nopfs-$version" | gzip -9 >"nopfs-$version.tar.gz")
rm -rf "${work:?}/nopfs-$version"
plugindir=/usr/lib64/slurm-test-plugins
if ! rpmbuild -tb --nodeps --define "_topdir $work/top" --define '_smp_mflags -j2' \
	--define "slurm_plugindir $plugindir" "$work/nopfs-$version.tar.gz" >"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	not_ok "rpmbuild -tb failed"
	exit 1
fi
if grep -A5 'RPM build warnings' "$work/build.log"; then
	not_ok "rpmbuild warns"
fi
arch=$(rpm --eval '%{_arch}')
libdir=$(rpm --eval '%{_libdir}')
rpm=$work/top/RPMS/$arch/nopfs-$version-1.$arch.rpm
devel=$work/top/RPMS/$arch/nopfs-devel-$version-1.$arch.rpm
for file in "$rpm" "$devel"; do
	if [[ -f $file ]]; then ok "built ${file##*/}"; else not_ok "${file##*/} was not built"; fi
done
[[ -f $rpm && -f $devel ]] || exit 1

# has PACKAGE PATTERN...: each (grep -x) PATTERN names a file of the package
has() {
	local package=$1 pattern files
	shift
	files=$(rpm -qlp "$package" 2>/dev/null)
	for pattern in "$@"; do
		if grep -qx "$pattern" <<<"$files"; then
			ok "${package##*/} has $pattern"
		else
			not_ok "${package##*/} lacks $pattern"
		fi
	done
}
has "$rpm" "$plugindir/spank_nopfs.so" /usr/bin/nopfs-agent /usr/bin/nopfs-report \
	/usr/bin/nopfs-plan /usr/bin/nopfs-sim "$libdir/libnopfs_preload.so" \
	"$libdir/libnopfs\.so\.0" '/usr/share/man/man8/spank_nopfs\.8.*' \
	'/usr/share/man/man1/nopfs-sim\.1.*' /usr/share/doc/nopfs/user-guide.md \
	/usr/share/doc/nopfs/examples/plugstack.conf.d/nopfs.conf \
	'/usr/lib/python3.*/nopfs/dataset\.py'
has "$devel" /usr/include/nopfs/nopfs.h "$libdir/libnopfs\.so" "$libdir/pkgconfig/nopfs.pc" \
	'/usr/share/man/man3/nopfs\.3.*'
if grep -q '\.la$' <<<"$(rpm -qlp "$rpm" "$devel" 2>/dev/null)"; then
	not_ok "a libtool archive is packaged"
else
	ok "no libtool archive is packaged"
fi
if grep -q "^nopfs(.*) = $version-1" <<<"$(rpm -qp --requires "$devel" 2>/dev/null)"; then
	ok "nopfs-devel requires nopfs of its version"
else
	not_ok "nopfs-devel requires: $(rpm -qp --requires "$devel" 2>/dev/null | tr '\n' ' ')"
fi

# The packaged planner runs; the example names the packaged plugin.
mkdir "$work/root"
rpm2archive -n <"$rpm" | tar -x -C "$work/root"
if out=$(LD_LIBRARY_PATH="$work/root$libdir" "$work/root/usr/bin/nopfs-plan" \
	--synthetic 1000:100K --nodes 2 --epochs 2 --tier ram:60M 2>&1) &&
	grep -q owner-first <<<"$out"; then
	ok "the packaged nopfs-plan runs"
else
	echo "$out"
	not_ok "the packaged nopfs-plan does not run"
fi
plugin=$(awk '$1 == "optional" { print $2 }' \
	"$work/root/usr/share/doc/nopfs/examples/plugstack.conf.d/nopfs.conf")
if [[ $plugin == "$plugindir/spank_nopfs.so" ]]; then
	ok "the example plugstack.conf.d/nopfs.conf names $plugin"
else
	not_ok "the example names '$plugin'"
fi
exit "$failed"
