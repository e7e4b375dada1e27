#!/bin/bash
# nopfs-pfs, the emulated contended PFS (FUSE): a byte-exact passthrough,
# read-write for a non-root user (owners, modes, renames, links, rm -rf,
# programs and LD_PRELOAD from the mount) or --read-only (EROFS); bandwidth
# shared among network namespaces; latency, noise, injected EIO; per-client
# statistics of reads, writes and metadata operations; a metadata latency
# and a server-wide metadata rate; every bad option named.
# Needs root and /dev/fuse (77: skipped otherwise).
set -u
# A sanitizer build preloads its runtime into scripts: the emulator is
# instrumented itself, and the system tools this runs are better without it.
unset LD_PRELOAD
umask 022
pfs="${top_builddir:-.}/contrib/pfs-emulator/nopfs-pfs"
python="${NOPFS_PYTHON:-python3}"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (FUSE mounts, network namespaces)"
	exit 77
fi
if [ ! -c /dev/fuse ]; then
	echo "SKIP: no /dev/fuse"
	exit 77
fi
for tool in fusermount3 mountpoint unshare setpriv cmp; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is missing (Debian packages fuse3, util-linux, diffutils)"
		exit 77
	fi
done
# The non-root user of the read-write checks.
if ! user_uid=$(id -u nobody 2>/dev/null) || ! user_gid=$(id -g nobody 2>/dev/null); then
	echo "SKIP: no user 'nobody'"
	exit 77
fi

work=$(mktemp -d)
chmod 755 "$work" # the non-root user reaches the mount through it
src="$work/src"
mnt="$work/mnt"
stats="$work/stats.json"
pid=""
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

now_ms() {
	date +%s%3N
}

# stop_pfs: SIGTERM to the nopfs-pfs we started (it unmounts), then make sure.
stop_pfs() {
	local deadline
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		deadline=$(($(now_ms) + 5000))
		while kill -0 "$pid" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do
			sleep 0.05
		done
		if kill -0 "$pid" 2>/dev/null; then
			fail "nopfs-pfs (pid $pid) ignored SIGTERM for 5 s"
			kill -KILL "$pid" 2>/dev/null
		fi
		if wait "$pid"; then
			:
		else
			fail "nopfs-pfs exited with status $? on SIGTERM: $(cat "$work/pfs.err")"
		fi
		pid=""
	fi
	if mountpoint -q "$mnt"; then
		fail "$mnt still mounted after nopfs-pfs ended"
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
}

# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	stop_pfs
	if mountpoint -q "$mnt" 2>/dev/null; then
		umount -l "$mnt"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_pfs OPTIONS...: mount $src at $mnt with the stats file; wait (5 s at
# most) for the mount.
start_pfs() {
	local deadline
	rm -f "$stats"
	"$pfs" --stats "$stats" "$@" "$src" "$mnt" 2>"$work/pfs.err" &
	pid=$!
	deadline=$(($(now_ms) + 5000))
	until mountpoint -q "$mnt"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			echo "FAIL: nopfs-pfs $* exited with status $? before mounting:"
			cat "$work/pfs.err"
			pid=""
			exit 1
		fi
		if [ "$(now_ms)" -ge "$deadline" ]; then
			echo "FAIL: nopfs-pfs $* did not mount within 5 s"
			exit 1
		fi
		sleep 0.05
	done
}

# stat_field CLIENT|total FIELD: from the stats file; CLIENT "count" gives the
# number of clients that opened, read or wrote (this script's own namespace
# also stats the mount point), "min"/"max" FIELD the smallest/largest over
# those clients.
stat_field() {
	"$python" - "$stats" "$1" "$2" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    s = json.load(f)
which, field = sys.argv[2], sys.argv[3]
clients = {k: c for k, c in s["clients"].items() if c["opens"] + c["reads"] + c["writes"]}
if which == "count":
    print(len(clients))
elif which == "total":
    print(s["total"][field])
    assert s["total"][field] == sum(c[field] for c in clients.values()), "total != sum"
elif which == "min":
    print(min(c[field] for c in clients.values()))
elif which == "max":
    print(max(c[field] for c in clients.values()))
EOF
}

# in_range VALUE LOW HIGH (integers)
# A sanitizer build's emulator runs slower: upper bounds of timings x2 there
# (the lower bounds, which show the throttling, stay).
slow=${NOPFS_SANITIZER_RUNTIME:+2}
in_range() {
	[ "$1" -ge "$2" ] && [ "$1" -le $(($3 * ${slow:-1})) ]
}

# The dataset: 20 files of 1 MiB of random bytes, small files in a subfolder,
# files that --fail will match.
mkdir -p "$src/big" "$src/small" "$src/broken" "$mnt"
for i in $(seq -w 1 20); do
	head -c 1048576 /dev/urandom >"$src/big/$i.bin"
done
for i in $(seq -w 1 20); do
	head -c $((100 + 37 * 10#$i)) /dev/urandom >"$src/small/$i.dat"
done
printf 'bad bytes\n' >"$src/broken/bad.bin"
printf 'good bytes\n' >"$src/broken/good.txt"
# The non-root user's home on the mount.
mkdir "$src/home"
chown "$user_uid:$user_gid" "$src/home"
total_size=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
mib20=$((20 * 1048576))

# --- Bad options: exit 2, the option named -------------------------------
expect_usage_error() {
	local fragment=$1 status
	shift
	"$pfs" "$@" >"$work/out" 2>"$work/err"
	status=$?
	if [ "$status" -ne 2 ]; then
		fail "nopfs-pfs $*: exit status $status, not 2"
	elif ! grep -qF -- "$fragment" "$work/err"; then
		fail "nopfs-pfs $*: stderr lacks '$fragment': $(cat "$work/err")"
	fi
}
expect_usage_error "--bandwidth: 'fast'" --bandwidth fast "$src" "$mnt"
expect_usage_error "--bandwidth: rate 'x'" --bandwidth 1:x "$src" "$mnt"
expect_usage_error "--bandwidth: client count '0'" --bandwidth 0:10M "$src" "$mnt"
expect_usage_error "--bandwidth: client counts in '2:10M,1:20M' must increase" \
	--bandwidth 2:10M,1:20M "$src" "$mnt"
expect_usage_error "--bandwidth: curve '1:10M,' is malformed" --bandwidth 1:10M, "$src" "$mnt"
expect_usage_error "--latency: '-1'" --latency -1 "$src" "$mnt"
expect_usage_error "--latency: 'soon'" --latency soon "$src" "$mnt"
expect_usage_error "--noise: '0.1' is not FRACTION:MS" --noise 0.1 "$src" "$mnt"
expect_usage_error "--noise: fraction '2'" --noise 2:10 "$src" "$mnt"
expect_usage_error "--noise: 'x' in '0.5:x'" --noise 0.5:x "$src" "$mnt"
expect_usage_error "--seed: 'abc'" --seed abc "$src" "$mnt"
expect_usage_error "--fail: empty pattern" --fail "" "$src" "$mnt"
expect_usage_error "--stats: empty file name" --stats "" "$src" "$mnt"
expect_usage_error "unknown option '--bogus'" --bogus "$src" "$mnt"
expect_usage_error "-o: bad FUSE options" -o bogus "$src" "$mnt"
expect_usage_error "option '--latency' needs a value" "$src" "$mnt" --latency
expect_usage_error "give SOURCE and MOUNTPOINT" "$src"
expect_usage_error "unexpected argument 'extra'" "$src" "$mnt" extra
expect_usage_error "SOURCE '$work/missing'" "$work/missing" "$mnt"
expect_usage_error "MOUNTPOINT '$work/missing'" "$src" "$work/missing"
for option in "--bandwidth CURVE" "--read-only" "Writes are not paced"; do
	if ! "$pfs" --help | grep -qF -- "$option"; then
		fail "--help does not mention '$option'"
	fi
done
if mountpoint -q "$mnt"; then
	fail "a bad command line left a mount"
	umount -l "$mnt"
fi

# --- Unlimited: byte-exact passthrough, read-only, statistics ------------
start_pfs
if ! diff <(cd "$src" && find . | sort) <(cd "$mnt" && find . | sort) >"$work/diff"; then
	fail "the mount lists other entries than the source: $(cat "$work/diff")"
fi
for file in $(cd "$src" && find . -type f | sort); do
	if ! cmp -s "$src/$file" "$mnt/$file"; then
		fail "$file differs through the mount"
	fi
done
if [ "$(stat -f -c %b "$mnt")" != "$(stat -f -c %b "$src")" ]; then
	fail "statfs: $(stat -f -c %b "$mnt") blocks, the source has $(stat -f -c %b "$src")"
fi
t0=$(now_ms)
cat "$mnt"/big/*.bin >/dev/null
unlimited_ms=$(($(now_ms) - t0))
want_bytes=$((total_size + mib20))
sleep 1.3 # the stats file is rewritten every second while mounted
live_bytes=$(stat_field total bytes)
[ "$live_bytes" = "$want_bytes" ] ||
	fail "stats while mounted: total bytes $live_bytes, $want_bytes were read"
stop_pfs
final_bytes=$(stat_field total bytes)
[ "$final_bytes" = "$want_bytes" ] || fail "stats at unmount: total bytes $final_bytes, want $want_bytes"
[ "$(stat_field count -)" = 1 ] || fail "one reader showed as $(stat_field count -) clients"
opens=$(stat_field total opens)
file_count=$(find "$src" -type f | wc -l)
[ "$opens" -ge $((file_count + 20)) ] || fail "stats: $opens opens, at least $((file_count + 20)) were made"
echo "unlimited: 20 MiB in ${unlimited_ms} ms; stats: $final_bytes bytes, $opens opens, $(stat_field total reads) reads"

# expect_error MESSAGE DESCRIPTION COMMAND...: COMMAND fails, saying MESSAGE.
expect_error() {
	local message=$1 what=$2
	shift 2
	if "$@" >/dev/null 2>"$work/err"; then
		fail "$what succeeded"
	elif ! grep -qF "$message" "$work/err"; then
		fail "$what: not '$message': $(cat "$work/err")"
	fi
}

# as_user COMMAND...: run COMMAND as the non-root user, from /.
as_user() {
	(cd / && setpriv --reuid="$user_uid" --regid="$user_gid" --clear-groups -- "$@")
}

# owner_is NODE: NODE (in the source, not followed) belongs to the non-root user.
owner_is_user() {
	local owner
	owner=$(stat -c %u:%g "$1")
	[ "$owner" = "$user_uid:$user_gid" ] || fail "${1#"$src"/}: owner $owner, not $user_uid:$user_gid"
}

# --- --read-only: every change fails with EROFS --------------------------
find "$src" -printf '%p %s %m %u %Y\n' | sort >"$work/before"
start_pfs --read-only
ro="Read-only file system"
expect_error "$ro" "--read-only: creating a file" touch "$mnt/new.txt"
expect_error "$ro" "--read-only: appending to a file" \
	dd if=/dev/null of="$mnt/small/01.dat" oflag=append conv=notrunc status=none
expect_error "$ro" "--read-only: opening read-write" \
	"$python" -c 'import os, sys; os.open(sys.argv[1], os.O_RDWR)' "$mnt/big/01.bin"
expect_error "$ro" "--read-only: truncating" truncate -s 0 "$mnt/small/02.dat"
expect_error "$ro" "--read-only: mkdir" mkdir "$mnt/newdir"
expect_error "$ro" "--read-only: rm" rm -f "$mnt/small/03.dat"
expect_error "$ro" "--read-only: rename" mv "$mnt/small/04.dat" "$mnt/small/04.moved"
expect_error "$ro" "--read-only: chmod" chmod 600 "$mnt/small/05.dat"
expect_error "$ro" "--read-only: symlink" ln -s 01.dat "$mnt/small/link"
expect_error "$ro" "--read-only: touch" touch "$mnt/small/06.dat"
case "$(stat -c %A "$mnt/small/01.dat")" in
*w*) fail "--read-only: $(stat -c %A "$mnt/small/01.dat") shows write permission" ;;
esac
cmp -s "$src/small/01.dat" "$mnt/small/01.dat" || fail "--read-only: small/01.dat unreadable"
stop_pfs
find "$src" -printf '%p %s %m %u %Y\n' | sort >"$work/after"
diff "$work/before" "$work/after" >"$work/diff" || fail "--read-only changed the source: $(cat "$work/diff")"
[ "$(stat_field total writes)" = 0 ] || fail "--read-only: $(stat_field total writes) writes counted"

# --- Read-write, as a non-root user --------------------------------------
# Its files, their bytes in the source, owners and modes; what the kernel
# refuses it; per-client write counters (bytes_written: exact).
start_pfs -o allow_other
home="$mnt/home"
written=0
as_user mkdir -p "$home/a/b/c" || fail "mkdir -p a/b/c"
printf 'first\n' | as_user dd of="$home/a/b/c/f.txt" status=none || fail "writing a/b/c/f.txt"
printf 'second line\n' | as_user dd of="$home/a/b/c/f.txt" oflag=append conv=notrunc status=none ||
	fail "appending to a/b/c/f.txt"
written=$((written + 6 + 12))
printf 'first\nsecond line\n' >"$work/expect"
cmp -s "$work/expect" "$src/home/a/b/c/f.txt" || fail "a/b/c/f.txt in the source: $(od -c "$src/home/a/b/c/f.txt" | head -3)"
for node in a a/b a/b/c a/b/c/f.txt; do
	owner_is_user "$src/home/$node"
done
head -c 3000000 /dev/urandom >"$work/random.bin"
chmod 644 "$work/random.bin"
as_user cp "$work/random.bin" "$home/random.bin" || fail "cp of 3 MB"
written=$((written + 3000000))
cmp -s "$work/random.bin" "$src/home/random.bin" || fail "random.bin differs in the source"
cmp -s "$work/random.bin" "$home/random.bin" || fail "random.bin differs through the mount"
owner_is_user "$src/home/random.bin"
as_user truncate -s 1000 "$home/random.bin" || fail "truncate -s 1000"
[ "$(stat -c %s "$src/home/random.bin")" = 1000 ] || fail "truncate: $(stat -c %s "$src/home/random.bin") bytes"
cmp -s -n 1000 "$work/random.bin" "$src/home/random.bin" || fail "truncate changed the first 1000 bytes"
# Modes: the caller's umask, chmod.
(umask 002 && as_user touch "$home/umask.txt") || fail "creating umask.txt"
[ "$(stat -c %a "$src/home/umask.txt")" = 664 ] || fail "umask 002: mode $(stat -c %a "$src/home/umask.txt"), not 664"
as_user mkdir -m 750 "$home/private" || fail "mkdir -m 750"
[ "$(stat -c %a "$src/home/private")" = 750 ] || fail "mkdir -m 750: mode $(stat -c %a "$src/home/private")"
as_user chmod 640 "$home/a/b/c/f.txt" || fail "chmod 640"
[ "$(stat -c %a "$src/home/a/b/c/f.txt")" = 640 ] || fail "chmod 640: mode $(stat -c %a "$src/home/a/b/c/f.txt")"
as_user touch -d '2001-02-03 04:05:06 UTC' "$home/umask.txt" || fail "touch -d"
[ "$(stat -c %Y "$src/home/umask.txt")" = 981173106 ] || fail "touch -d: mtime $(stat -c %Y "$src/home/umask.txt")"
# Writing clears set-user-ID and set-group-ID as a local filesystem does.
install -m 6775 -o "$user_uid" -g "$user_gid" /dev/null "$home/setid" || fail "install -m 6775"
printf 'x' | as_user dd of="$home/setid" oflag=append conv=notrunc status=none || fail "appending to setid"
written=$((written + 1))
[ "$(stat -c %a "$src/home/setid")" = 775 ] || fail "a write left setid at mode $(stat -c %a "$src/home/setid")"
chmod 6775 "$home/setid"
as_user truncate -s 0 "$home/setid" || fail "truncating setid"
[ "$(stat -c %a "$src/home/setid")" = 775 ] || fail "truncate left setid at mode $(stat -c %a "$src/home/setid")"
rm "$home/setid"
# Names: rename, symbolic and hard links, mktemp -d.
as_user mv "$home/a/b/c/f.txt" "$home/a/moved.txt" || fail "mv"
if [ -e "$src/home/a/b/c/f.txt" ] || ! cmp -s "$work/expect" "$src/home/a/moved.txt"; then
	fail "mv: a/b/c/f.txt not moved to a/moved.txt in the source"
fi
as_user ln -s moved.txt "$home/a/link" || fail "ln -s"
[ "$(readlink "$src/home/a/link")" = moved.txt ] || fail "ln -s: the source's link reads '$(readlink "$src/home/a/link")'"
owner_is_user "$src/home/a/link"
if ! as_user cat "$home/a/link" >"$work/out" || ! cmp -s "$work/expect" "$work/out"; then
	fail "reading through the symbolic link"
fi
as_user ln "$home/a/moved.txt" "$home/a/hard" || fail "ln"
[ "$(stat -c %i "$src/home/a/hard")" = "$(stat -c %i "$src/home/a/moved.txt")" ] || fail "ln: not a hard link in the source"
tmp=$(as_user mktemp -d "$home/tmp.XXXXXX") || fail "mktemp -d"
if [ ! -d "$src/home/${tmp##*/}" ] || [ "$(stat -c %a "$src/home/${tmp##*/}")" != 700 ]; then
	fail "mktemp -d: ${tmp##*/} is not a 700 directory in the source"
fi
owner_is_user "$src/home/${tmp##*/}"
# A set-group-ID directory gives new nodes its group, not the caller's.
mkdir "$src/home/shared"
chown "$user_uid:0" "$src/home/shared"
chmod 2775 "$src/home/shared"
as_user mkdir "$home/shared/sub" || fail "mkdir in a set-group-ID directory"
as_user touch "$home/shared/file" || fail "creating a file in a set-group-ID directory"
for node in sub file; do
	[ "$(stat -c %u:%g "$src/home/shared/$node")" = "$user_uid:0" ] ||
		fail "shared/$node: owner $(stat -c %u:%g "$src/home/shared/$node"), not $user_uid:0"
done
[ "$(stat -c %a "$src/home/shared/sub")" = 2755 ] || fail "shared/sub: mode $(stat -c %a "$src/home/shared/sub"), not 2755"
# What the kernel refuses the user: root's directories, others' files.
denied="Permission denied"
expect_error "$denied" "the user creating in a root directory" as_user touch "$mnt/small/new.dat"
expect_error "$denied" "the user appending to root's file" \
	as_user dd if=/dev/null of="$mnt/small/01.dat" oflag=append conv=notrunc status=none
expect_error "$denied" "the user removing root's file" as_user rm -f "$mnt/small/01.dat"
[ -e "$src/small/new.dat" ] && fail "a refused create left small/new.dat in the source"
cmp -s "$src/small/01.dat" "$mnt/small/01.dat" || fail "small/01.dat changed"
# tar out and in, then rm -rf of it all.
as_user tar -C "$home" -cf "$home/a.tar" a || fail "tar -cf"
written=$((written + $(stat -c %s "$src/home/a.tar")))
as_user mkdir "$home/untar" || fail "mkdir untar"
as_user tar -C "$home/untar" -xf "$home/a.tar" || fail "tar -xf"
written=$((written + $(stat -c %s "$work/expect"))) # moved.txt (hard: a link in the archive)
diff -r "$src/home/a" "$src/home/untar/a" >"$work/diff" || fail "tar: the copy differs: $(cat "$work/diff")"
as_user rm -rf "$home/a" "$home/untar" "$home/a.tar" "$tmp" "$home/shared" || fail "rm -rf"
left=$(cd "$src/home" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "./private ./random.bin ./umask.txt " ] || fail "after rm -rf the source's home holds: $left"
# renameat2 flags (as root: the flags, not the permissions, are checked).
printf X >"$home/x" || fail "writing x"
printf Y >"$home/y" || fail "writing y"
written=$((written + 2))
"$python" - "$home" >"$work/out" 2>&1 <<'PYTHON' || fail "renameat2: $(cat "$work/out")"
import ctypes, errno, os, sys
os.chdir(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, NOREPLACE, EXCHANGE = -100, 1, 2
assert libc.renameat2(AT_FDCWD, b"x", AT_FDCWD, b"y", NOREPLACE) == -1
assert ctypes.get_errno() == errno.EEXIST, os.strerror(ctypes.get_errno())
assert libc.renameat2(AT_FDCWD, b"x", AT_FDCWD, b"y", EXCHANGE) == 0, os.strerror(ctypes.get_errno())
assert libc.renameat2(AT_FDCWD, b"y", AT_FDCWD, b"z", NOREPLACE) == 0, os.strerror(ctypes.get_errno())
PYTHON
if [ "$(cat "$src/home/x")" != Y ] || [ "$(cat "$src/home/z" 2>&1)" != X ] || [ -e "$src/home/y" ]; then
	fail "renameat2: the source has x='$(cat "$src/home/x")' z='$(cat "$src/home/z" 2>&1)'"
fi
# A file removed while open stays usable until closed (fstat included).
"$python" - "$home/open.bin" >"$work/out" 2>&1 <<'PYTHON' || fail "a file removed while open: $(cat "$work/out")"
import os, sys, time
with open(sys.argv[1], "w+b") as f:
    f.write(b"abc")
    f.flush()
    os.unlink(sys.argv[1])
    f.write(b"def")
    f.flush()
    f.seek(0)
    assert f.read() == b"abcdef"
    assert os.fstat(f.fileno()).st_size == 6
# The hidden name goes at the release, which follows close() shortly.
for _ in range(100):
    if not [n for n in os.listdir(os.path.dirname(sys.argv[1])) if n.startswith(".fuse")]:
        break
    time.sleep(0.01)
else:
    raise AssertionError(os.listdir(os.path.dirname(sys.argv[1])))
PYTHON
written=$((written + 6))
# Another client: 4 writes of 64 KiB from a network namespace of its own.
unshare --net dd if=/dev/zero of="$home/netns.bin" bs=65536 count=4 status=none ||
	fail "writing from another network namespace"
stop_pfs
echo "read-write: $(stat_field total writes) writes of $(stat_field total bytes_written) bytes by $(stat_field count -) clients"
[ "$(stat_field count -)" = 2 ] || fail "writes from two namespaces: $(stat_field count -) clients in the stats"
[ "$(stat_field min bytes_written)" = 262144 ] ||
	fail "the other namespace's bytes_written: $(stat_field min bytes_written), want 262144"
[ "$(stat_field max bytes_written)" = "$written" ] ||
	fail "this namespace's bytes_written: $(stat_field max bytes_written), want $written"
[ "$(stat_field min writes)" -ge 4 ] || fail "the other namespace's writes: $(stat_field min writes), want >= 4"
[ "$(stat_field total bytes_written)" = $((written + 262144)) ] ||
	fail "total bytes_written $(stat_field total bytes_written), want $((written + 262144))"

# --- Paths never lead out of SOURCE ---------------------------------------
# A directory the kernel has cached (for a second) is replaced in the
# source by a symbolic link out of it: the daemon does not follow it.
mkdir "$src/swap" "$work/outside"
echo secret >"$work/outside/secret"
start_pfs
ls "$mnt/swap" >/dev/null || fail "ls swap"
mv "$src/swap" "$src/swap.old"
ln -s "$work/outside" "$src/swap"
if cat "$mnt/swap/secret" >"$work/out" 2>"$work/err"; then
	fail "read $work/outside/secret through a symbolic link in the source: $(cat "$work/out")"
elif ! grep -q "Invalid cross-device link" "$work/err"; then
	fail "reading through a symbolic link in the source: $(cat "$work/err")"
fi
touch "$mnt/swap/new" 2>/dev/null
[ -e "$work/outside/new" ] && fail "created $work/outside/new through a symbolic link in the source"
stop_pfs
rm -r "$src/swap" "$src/swap.old" "$work/outside"

# --- Programs and libraries on the mount ----------------------------------
# Installed by the user and run from the mount (exec and the loader mmap
# the file); a library preloaded from it.
start_pfs -o allow_other
as_user mkdir "$home/bin" "$home/lib" || fail "mkdir bin lib"
as_user install -m 0755 /bin/true "$home/bin/true" || fail "install /bin/true"
cmp -s /bin/true "$src/home/bin/true" || fail "install: bin/true differs in the source"
as_user "$home/bin/true" || fail "running bin/true from the mount as the user"
"$home/bin/true" || fail "running bin/true from the mount as root"
if [ "$(head -c 4 "$pfs" | od -An -c | tr -d ' ')" = '177ELF' ]; then
	install -m 0755 "$pfs" "$home/bin/nopfs-pfs"
	"$pfs" --help >"$work/help.want"
	as_user "$home/bin/nopfs-pfs" --help >"$work/help.got" 2>&1 ||
		fail "running nopfs-pfs from the mount: $(cat "$work/help.got")"
	cmp -s "$work/help.want" "$work/help.got" || fail "nopfs-pfs from the mount printed another help"
fi
library="${top_builddir:-.}/lib/.libs/libnopfs_preload.so"
if [ ! -f "$library" ]; then
	library=$(ldconfig -p | awk '$1 == "libz.so.1" { print $NF; exit }')
fi
if [ -z "$library" ] || [ ! -f "$library" ]; then
	fail "no library to preload (lib/.libs/libnopfs_preload.so, libz.so.1)"
else
	install -m 0644 "$library" "$home/lib/${library##*/}"
	preload="$home/lib/${library##*/}"
	as_user env LD_PRELOAD="$preload" cat /proc/self/maps >"$work/maps" 2>"$work/err" ||
		fail "LD_PRELOAD of ${library##*/} from the mount: $(cat "$work/err")"
	grep -qF "$preload" "$work/maps" || fail "LD_PRELOAD: $preload is not mapped: $(cat "$work/err")"
	[ -s "$work/err" ] && fail "LD_PRELOAD of ${library##*/}: $(cat "$work/err")"
	"$python" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$preload" 2>"$work/err" ||
		fail "dlopen of ${library##*/} from the mount: $(cat "$work/err")"
fi
# Not a check: shared mappings need libfuse 3.17 (see contrib/pfs-emulator/mount.c).
if "$python" -c 'import mmap, sys; f = open(sys.argv[1], "rb"); mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)' "$home/bin/true" 2>"$work/err"; then
	echo "shared mmap: works"
else
	echo "shared mmap: $(tail -1 "$work/err")"
fi
stop_pfs
[ "$(stat_field total reads)" -gt 0 ] || fail "running programs from the mount counted no reads"

# --- The page cache hides no read -----------------------------------------
# A private mapping of a 1 MiB file reads it through the daemon; a read(2)
# of the same file, mapped at the time, is counted again.
start_pfs
"$python" - "$mnt/big/01.bin" >"$work/out" 2>&1 <<'PYTHON' || fail "mmap and read: $(cat "$work/out")"
import mmap, sys
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    mapped = m[:]
    assert f.read() == mapped and len(mapped) == 1048576
PYTHON
stop_pfs
cache_bytes=$(stat_field total bytes)
echo "mmap then read(2) of 1 MiB: $cache_bytes bytes read through the emulation"
in_range "$cache_bytes" $((2 * 1048576)) $((3 * 1048576)) ||
	fail "mmap and read of 1 MiB counted $cache_bytes bytes, want 2-3 MiB"

# --- Writes: the latency, not the bandwidth -------------------------------
start_pfs --latency 50
t0=$(now_ms)
dd if=/dev/zero of="$home/latency.bin" bs=4096 count=10 status=none || fail "dd with --latency"
write_ms=$(($(now_ms) - t0))
stop_pfs
writes=$(stat_field total writes)
requests=$(($(stat_field total opens) + writes))
expected_ms=$((requests * 50))
echo "--latency 50: $requests opens+writes in ${write_ms} ms (expected ${expected_ms} ms)"
[ "$writes" -ge 10 ] || fail "--latency: 10 writes made, $writes counted"
[ "$(stat_field total bytes_written)" = 40960 ] ||
	fail "--latency: bytes_written $(stat_field total bytes_written), want 40960"
in_range "$write_ms" $((expected_ms * 95 / 100)) $((expected_ms + 700)) ||
	fail "--latency 50: ${write_ms} ms for $requests opens+writes, want about ${expected_ms} ms"

# 16 MiB at 4 MiB/s would take 4 s.
start_pfs --bandwidth 1:4M
t0=$(now_ms)
dd if=/dev/zero of="$home/bandwidth.bin" bs=1M count=16 status=none || fail "dd of 16 MiB"
write_ms=$(($(now_ms) - t0))
stop_pfs
echo "--bandwidth 1:4M: 16 MiB written in ${write_ms} ms (not paced)"
[ "$(stat_field total bytes_written)" = $((16 * 1048576)) ] ||
	fail "bytes_written $(stat_field total bytes_written), want $((16 * 1048576))"
[ "$write_ms" -lt 2000 ] || fail "--bandwidth 1:4M paced writes: 16 MiB in ${write_ms} ms"
[ "$(stat_field total reads)" = 0 ] || fail "writing counted $(stat_field total reads) reads"

# --- --bandwidth 1:20M: one reader, 20 MiB in about 1 s -------------------
start_pfs --bandwidth 1:20M
t0=$(now_ms)
cat "$mnt"/big/*.bin >/dev/null
limited_ms=$(($(now_ms) - t0))
stop_pfs
echo "--bandwidth 1:20M: 20 MiB in ${limited_ms} ms (unlimited: ${unlimited_ms} ms)"
in_range "$limited_ms" 800 1600 || fail "--bandwidth 1:20M read 20 MiB in $limited_ms ms, want 800-1600"
[ $((unlimited_ms * 2)) -lt "$limited_ms" ] ||
	fail "unlimited (${unlimited_ms} ms) is not much faster than 20 MiB/s (${limited_ms} ms)"

# --- --latency: every open and read ---------------------------------------
# Milliseconds to read each small file with one open and one read larger
# than the file, in one process: timed without starting a process per file
# (on a loaded machine that cost more than the latency itself).
read_small_files() {
	"$python" - "$mnt"/small/*.dat <<'PYTHON'
import sys, time
start = time.monotonic()
for path in sys.argv[1:]:
    with open(path, "rb", buffering=0) as f:
        f.read(65536)
print(round((time.monotonic() - start) * 1000))
PYTHON
}
start_pfs --latency 50
latency_ms=$(read_small_files) || fail "--latency 50: reading the small files failed"
stop_pfs
requests=$(($(stat_field total opens) + $(stat_field total reads)))
expected_ms=$((requests * 50))
echo "--latency 50: $requests opens+reads in ${latency_ms} ms (expected ${expected_ms} ms)"
[ "$requests" -ge 40 ] || fail "--latency: 20 files read, but only $requests opens+reads counted"
in_range "$latency_ms" $((expected_ms * 95 / 100)) $((expected_ms + 700)) ||
	fail "--latency 50: ${latency_ms} ms for $requests requests, want about ${expected_ms} ms"

# --- --noise: about half the reads 100 ms more ----------------------------
start_pfs --noise 0.5:100 --seed 7
noise_ms=$(read_small_files) || fail "--noise 0.5:100: reading the small files failed"
stop_pfs
reads=$(stat_field total reads)
echo "--noise 0.5:100: $reads reads in ${noise_ms} ms (about $((reads * 50)) ms expected)"
in_range "$noise_ms" $((reads * 100 * 15 / 100)) $((reads * 100 * 85 / 100)) ||
	fail "--noise 0.5:100: ${noise_ms} ms for $reads reads, want 15-85% of $((reads * 100)) ms"

# --- --fail: EIO on matching paths only -----------------------------------
start_pfs --fail 'broken/*.bin' --fail '*/07.dat'
if cat "$mnt/broken/bad.bin" >/dev/null 2>"$work/err"; then
	fail "--fail: reading broken/bad.bin succeeded"
elif ! grep -q "Input/output error" "$work/err"; then
	fail "--fail: broken/bad.bin: $(cat "$work/err")"
fi
if cat "$mnt/small/07.dat" >/dev/null 2>"$work/err"; then
	fail "--fail: reading small/07.dat succeeded"
elif ! grep -q "Input/output error" "$work/err"; then
	fail "--fail: small/07.dat: $(cat "$work/err")"
fi
cmp -s "$src/broken/good.txt" "$mnt/broken/good.txt" || fail "--fail: broken/good.txt unreadable"
cmp -s "$src/small/08.dat" "$mnt/small/08.dat" || fail "--fail: small/08.dat unreadable"
[ -e "$mnt/broken/bad.bin" ] || fail "--fail: broken/bad.bin is not even listed"
expect_error "Input/output error" "--fail: creating broken/new.bin" touch "$mnt/broken/new.bin"
[ -e "$src/broken/new.bin" ] && fail "--fail: broken/new.bin was created in the source"
stop_pfs
errors=$(stat_field total errors)
[ "$errors" = 3 ] || fail "--fail: stats count $errors errors, want 3"

# netns_read first|second: cat the first or second 10 MiB of big/ from a new
# network namespace.
netns_read() {
	local files
	if [ "$1" = first ]; then
		files=$(printf "$mnt/big/%s.bin " 01 02 03 04 05 06 07 08 09 10)
	else
		files=$(printf "$mnt/big/%s.bin " 11 12 13 14 15 16 17 18 19 20)
	fi
	# shellcheck disable=SC2086 # the file list is split on purpose
	unshare --net cat $files >/dev/null
}

# read_pair: both halves of big/ at once, each from its own network
# namespace; pair_ms: how long that took
read_pair() {
	local t0 reader1 reader2
	t0=$(now_ms)
	netns_read first &
	reader1=$!
	netns_read second &
	reader2=$!
	wait "$reader1" || fail "reader 1 in its own network namespace failed"
	wait "$reader2" || fail "reader 2 in its own network namespace failed"
	pair_ms=$(($(now_ms) - t0))
}

# --- Clients are network namespaces, sharing the bandwidth ----------------
# One reader of 20 MiB alone (this script's namespace), then two readers of
# 10 MiB each at once, each in a new network namespace: the 20 MiB/s are
# shared, so both take about as long. (The two namespaces live at the same
# time: a namespace's inode, the client's name, is reused once it is gone.)
start_pfs --bandwidth 1:20M,2:20M
t0=$(now_ms)
cat "$mnt"/big/*.bin >/dev/null
one_ms=$(($(now_ms) - t0))
sleep 0.6 # the first client is no longer reading
read_pair
two_ms=$pair_ms
stop_pfs
clients=$(stat_field count -)
echo "--bandwidth 1:20M,2:20M: one client 20 MiB in ${one_ms} ms, two clients 10 MiB each in ${two_ms} ms; $clients clients in the stats"
[ "$clients" = 3 ] || fail "three network namespaces read, the stats show $clients clients"
if [ "$(stat_field min bytes)" != $((mib20 / 2)) ] || [ "$(stat_field max bytes)" != "$mib20" ]; then
	fail "per-client bytes: min $(stat_field min bytes), max $(stat_field max bytes)"
fi
in_range "$one_ms" 800 1600 || fail "one client: 20 MiB in $one_ms ms, want 800-1600"
# Shared, the 20 MiB of both take about 1000 ms, as one client's do; each
# at its own 20 MiB/s, they would take 500 ms. Measured against the nominal
# time, not the one client's: a busy machine slows either read alone.
in_range "$two_ms" 800 1600 ||
	fail "two clients of 10 MiB took ${two_ms} ms, want 800-1600 (shared 20 MiB/s; one client of 20 MiB: ${one_ms} ms)"

# Interpolation: with 40 MiB/s at two clients, two readers of 10 MiB take
# about half a second.
start_pfs --bandwidth 1:20M,3:60M
read_pair
stop_pfs
[ "$(stat_field count -)" = 2 ] || fail "two namespaces read, the stats show $(stat_field count -) clients"
echo "--bandwidth 1:20M,3:60M: two clients 10 MiB each in ${pair_ms} ms (40 MiB/s: about 500 ms)"
in_range "$pair_ms" 400 800 || fail "two clients at 40 MiB/s took ${pair_ms} ms, want 400-800"

# --- Metadata: counted per client, charged a latency and a server rate ---
# meta_field total|count OPERATION: the stats' metadata counters (count: the
# clients that made 20 such operations or more).
meta_field() {
	"$python" - "$stats" "$1" "$2" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    s = json.load(f)
which, op = sys.argv[2], sys.argv[3]
clients = [c["metadata"] for c in s["clients"].values()]
for c in clients + [s["total"]["metadata"]]:
    assert c["total"] == sum(v for k, v in c.items() if k != "total"), c
if which == "total":
    print(s["total"]["metadata"][op])
    assert s["total"]["metadata"][op] == sum(c[op] for c in clients), "total != sum"
elif which == "count":
    print(sum(1 for c in clients if c[op] >= 20))
EOF
}
expect_usage_error "--metadata-latency: 'x'" --metadata-latency x "$src" "$mnt"
expect_usage_error "--metadata-rate: '0'" --metadata-rate 0 "$src" "$mnt"
# ls -l of a directory: an opendir, readdirs, a lookup of every name.
start_pfs --metadata-latency 20
t0=$(now_ms)
ls -l "$mnt/small" >/dev/null || fail "ls -l on the mount"
meta_ms=$(($(now_ms) - t0))
stop_pfs
ops=$(meta_field total total)
echo "--metadata-latency 20: ls -l of 20 files: $ops metadata operations" \
	"($(meta_field total getattr) getattr, $(meta_field total opendir) opendir," \
	"$(meta_field total readdir) readdir) in ${meta_ms} ms"
[ "$(meta_field total opendir)" -ge 1 ] || fail "ls: no opendir counted"
[ "$(meta_field total readdir)" -ge 1 ] || fail "ls: no readdir counted"
[ "$(meta_field total getattr)" -ge 20 ] || fail "ls -l of 20 files: $(meta_field total getattr) getattr"
in_range "$meta_ms" $((ops * 20 * 90 / 100)) $((ops * 20 + 700)) ||
	fail "--metadata-latency 20: ${meta_ms} ms for $ops operations, want about $((ops * 20)) ms"
# --metadata-rate: one server for every client. Two namespaces stat 20
# names each at once: about 40 operations in line at 40 a second.
netns_stat() {
	# shellcheck disable=SC2086 # the file list is split on purpose
	unshare --net stat -c %s $1 >/dev/null
}
start_pfs --metadata-rate 40
t0=$(now_ms)
netns_stat "$mnt/big/*.bin" &
first=$!
netns_stat "$mnt/small/*.dat" &
second=$!
wait "$first" || fail "stat in a network namespace failed"
wait "$second" || fail "stat in a network namespace failed"
rate_ms=$(($(now_ms) - t0))
stop_pfs
ops=$(meta_field total total)
echo "--metadata-rate 40: two clients, $ops metadata operations in ${rate_ms} ms" \
	"(about $((ops * 1000 / 40)) ms expected)"
[ "$(meta_field count total)" = 2 ] || fail "two namespaces stat'ed, $(meta_field count total) clients counted"
[ "$ops" -ge 40 ] || fail "40 names stat'ed, $ops metadata operations counted"
in_range "$rate_ms" $((ops * 1000 * 85 / 4000)) $((ops * 1000 / 40 + 800)) ||
	fail "--metadata-rate 40: ${rate_ms} ms for $ops operations, want about $((ops * 1000 / 40)) ms"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "PASS"
exit 0
