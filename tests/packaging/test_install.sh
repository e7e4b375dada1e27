#!/bin/bash
# make install (DESTDIR) puts every part of nopfs in place: the programs, the
# plugin, the libraries, the headers, nopfs.pc (a program built with it links
# and runs), the manual pages, the documentation and the example
# plugstack.conf.d/nopfs.conf, which names the installed plugin; make
# uninstall leaves no file. configure puts the plugin where Slurm loads
# plugins from when that is under the prefix (--prefix=/usr), else in
# LIBDIR/slurm, and --with-slurm-plugindir chooses.
set -euo pipefail
umask 022
builddir=$(cd "${top_builddir:-.}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/nopfs-install-test.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
dest=$work/dest
failed=0
ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failed=1
}
# is GOT WANT WHAT
is() {
	if [[ $1 == "$2" ]]; then ok "$3"; else not_ok "$3: got '$1', expected '$2'"; fi
}

make -s -C "$builddir" install DESTDIR="$dest" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; not_ok "make install DESTDIR failed"; exit 1; }

# find_one NAME: the one installed file called NAME
find_one() {
	local found
	found=$(find "$dest" -name "$1" ! -type d)
	if [[ -z $found || $found == *$'\n'* ]]; then
		not_ok "installed '$1': expected once, found: ${found:-nothing}"
		return 1
	fi
	echo "$found"
}
for name in nopfs-agent nopfs-report nopfs-plan nopfs-sim; do
	file=$(find_one "$name") && [[ -x $file && $file == */bin/$name ]] && ok "program $name"
done
for name in libnopfs.so libnopfs_preload.so spank_nopfs.so nopfs.h status.h nopfs.pc \
	nopfs-plan.1 nopfs-report.1 nopfs-sim.1 nopfs.3 nopfs-agent.8 spank_nopfs.8 \
	README.md admin-guide.md user-guide.md security.md nopfs.conf imagenet-1k-16-nodes.json; do
	find_one "$name" >/dev/null && ok "installed $name"
done
[[ $(find_one nopfs.h) == */include/nopfs/nopfs.h ]] && ok "headers in INCLUDEDIR/nopfs"
for page in nopfs-plan.1 nopfs-agent.8 nopfs.3; do
	[[ $(find_one "$page") == */man/man${page##*.}/$page ]] && ok "$page in its section"
done

# The example names the installed plugin, and the plugin exports Slurm's symbols.
conf=$(find_one nopfs.conf)
[[ $conf == */examples/plugstack.conf.d/nopfs.conf ]] && ok "example in DOCDIR/examples"
plugin=$(awk '$1 == "optional" { print $2 }' "$conf")
if [[ $plugin == /*/spank_nopfs.so && -f $dest$plugin ]]; then
	ok "the example's plugin path $plugin is installed"
else
	not_ok "the example names '$plugin', which is not installed"
fi
if grep -qw slurm_spank_init <<<"$(nm -D --defined-only "$dest$plugin")"; then
	ok "the installed plugin defines slurm_spank_init"
else
	not_ok "the installed plugin does not define slurm_spank_init"
fi

# nopfs.pc: a C API program builds against the installed tree alone.
pc=$(find_one nopfs.pc)
version=$(PKG_CONFIG_PATH=${pc%/*} pkg-config --modversion nopfs)
expected=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
is "$version" "$expected" "pkg-config --modversion nopfs is configure's version"
cat >"$work/probe.c" <<'PROBE'
#include <stdio.h>
#include <nopfs.h>

int main(void)
{
	struct nopfs_client *client;
	nopfs_status status = nopfs_client_connect(NULL, 0, &client);

	printf("%d %s\n", (int)status, nopfs_status_string(status));
	return status == NOPFS_ERR_NOT_FOUND ? 0 : 1;
}
PROBE
read -r -a flags < <(PKG_CONFIG_PATH=${pc%/*} PKG_CONFIG_SYSROOT_DIR=$dest \
	pkg-config --cflags --libs nopfs)
if cc -o "$work/probe" "$work/probe.c" -I/nonexistent "${flags[@]}" 2>"$work/cc.log"; then
	ok "a program builds with pkg-config --cflags --libs nopfs"
	lib=$(find_one libnopfs.so)
	if out=$(env -u NOPFS_SOCKET LD_LIBRARY_PATH="${lib%/*}" "$work/probe" 2>/dev/null); then
		ok "it runs on the installed libnopfs: without an agent, status $out"
	else
		not_ok "the program on the installed libnopfs printed '$out'"
	fi
else
	cat "$work/cc.log"
	not_ok "a program does not build with nopfs.pc"
fi

make -s -C "$builddir" uninstall DESTDIR="$dest" >"$work/uninstall.log" 2>&1 ||
	{ cat "$work/uninstall.log"; not_ok "make uninstall failed"; }
left=$(find "$dest" ! -type d)
is "$left" "" "make uninstall leaves no file"

# Where configure puts the plugin, from a clean copy of the sources.
make -s -C "$builddir" distdir distdir="$work/src" >"$work/distdir.log" 2>&1 ||
	{ cat "$work/distdir.log"; not_ok "make distdir failed"; exit 1; }
# plugin_dir OPTIONS...: SPANK_PLUGIN_DIR as configure sets it
plugin_dir() {
	rm -rf "$work/b" && mkdir "$work/b"
	(cd "$work/b" && "$work/src/configure" -q "$@" >/dev/null 2>"$work/configure.log") ||
		{ cat "$work/configure.log" >&2; return 1; }
	sed -n 's/^SPANK_PLUGIN_DIR = //p' "$work/b/Makefile"
}
slurm=
for dir in "$(gcc -print-multiarch 2>/dev/null)" ""; do
	candidate=/usr/lib${dir:+/$dir}/slurm-wlm
	if compgen -G "$candidate/spank_*.so" >/dev/null || compgen -G "$candidate/select_*.so" >/dev/null; then
		slurm=$candidate
		break
	fi
done
if [[ -n $slurm && ! -r ${SLURM_CONF:-/etc/slurm/slurm.conf} ]]; then
	got=$(plugin_dir --prefix=/usr) || true
	is "$got" "\${prefix}${slurm#/usr}" "--prefix=/usr: the plugin goes to Slurm's $slurm"
else
	echo "# no Debian Slurm plugin directory here (or a slurm.conf names one): --prefix=/usr not checked"
fi
got=$(plugin_dir --prefix="$work/opt") || true
is "$got" "\${libdir}/slurm" "--prefix outside Slurm's plugin directory: LIBDIR/slurm"
got=$(plugin_dir --prefix=/usr --with-slurm-plugindir=/srv/slurm/plugins) || true
is "$got" /srv/slurm/plugins "--with-slurm-plugindir chooses"
exit "$failed"
