#!/bin/bash
# nopfs-pfs, the emulated contended PFS (FUSE): a byte-exact read-only
# passthrough; bandwidth shared among network namespaces; latency, noise,
# injected EIO; per-client statistics; every bad option named.
# Needs root and /dev/fuse (77: skipped otherwise).
set -u
pfs="${top_builddir:-.}/contrib/pfs/nopfs-pfs"
python="${NOPFS_PYTHON:-python3}"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (FUSE mounts, network namespaces)"
	exit 77
fi
if [ ! -c /dev/fuse ]; then
	echo "SKIP: no /dev/fuse"
	exit 77
fi
for tool in fusermount3 mountpoint unshare cmp; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is missing (Debian packages fuse3, util-linux, diffutils)"
		exit 77
	fi
done

work=$(mktemp -d)
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
# number of clients, "min"/"max" FIELD the smallest/largest over clients.
stat_field() {
	"$python" - "$stats" "$1" "$2" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    s = json.load(f)
which, field = sys.argv[2], sys.argv[3]
clients = s["clients"]
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
in_range() {
	[ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
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
if ! "$pfs" --help | grep -qF -- "--bandwidth CURVE"; then
	fail "--help does not describe --bandwidth"
fi
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
if (echo x >"$mnt/new.txt") 2>"$work/err"; then
	fail "creating a file succeeded"
elif ! grep -q "Read-only file system" "$work/err"; then
	fail "creating a file: $(cat "$work/err")"
fi
if (echo x >>"$mnt/small/01.dat") 2>"$work/err"; then
	fail "appending to a file succeeded"
elif ! grep -q "Read-only file system" "$work/err"; then
	fail "appending to a file: $(cat "$work/err")"
fi
if "$python" -c 'import os, sys; os.open(sys.argv[1], os.O_RDWR)' "$mnt/big/01.bin" 2>"$work/err"; then
	fail "opening a file read-write succeeded"
elif ! grep -q "Read-only file system" "$work/err"; then
	fail "opening read-write: $(cat "$work/err")"
fi
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
# dd with a block larger than the file: one open and one read per file.
start_pfs --latency 50
t0=$(now_ms)
for file in "$mnt"/small/*.dat; do
	dd if="$file" of=/dev/null bs=64K count=1 status=none
done
latency_ms=$(($(now_ms) - t0))
stop_pfs
requests=$(($(stat_field total opens) + $(stat_field total reads)))
expected_ms=$((requests * 50))
echo "--latency 50: $requests opens+reads in ${latency_ms} ms (expected ${expected_ms} ms)"
[ "$requests" -ge 40 ] || fail "--latency: 20 files read, but only $requests opens+reads counted"
in_range "$latency_ms" $((expected_ms * 95 / 100)) $((expected_ms + 700)) ||
	fail "--latency 50: ${latency_ms} ms for $requests requests, want about ${expected_ms} ms"

# --- --noise: about half the reads 100 ms more ----------------------------
start_pfs --noise 0.5:100 --seed 7
t0=$(now_ms)
for file in "$mnt"/small/*.dat; do
	dd if="$file" of=/dev/null bs=64K count=1 status=none
done
noise_ms=$(($(now_ms) - t0))
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
stop_pfs
errors=$(stat_field total errors)
[ "$errors" = 2 ] || fail "--fail: stats count $errors errors, want 2"

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
t0=$(now_ms)
netns_read first &
reader1=$!
netns_read second &
reader2=$!
wait "$reader1" || fail "reader 1 in its own network namespace failed"
wait "$reader2" || fail "reader 2 in its own network namespace failed"
two_ms=$(($(now_ms) - t0))
stop_pfs
clients=$(stat_field count -)
echo "--bandwidth 1:20M,2:20M: one client 20 MiB in ${one_ms} ms, two clients 10 MiB each in ${two_ms} ms; $clients clients in the stats"
[ "$clients" = 3 ] || fail "three network namespaces read, the stats show $clients clients"
if [ "$(stat_field min bytes)" != $((mib20 / 2)) ] || [ "$(stat_field max bytes)" != "$mib20" ]; then
	fail "per-client bytes: min $(stat_field min bytes), max $(stat_field max bytes)"
fi
in_range "$one_ms" 800 1600 || fail "one client: 20 MiB in $one_ms ms, want 800-1600"
in_range $((two_ms * 100 / one_ms)) 75 135 ||
	fail "two clients of 10 MiB took ${two_ms} ms, one of 20 MiB ${one_ms} ms: not shared"

# Interpolation: with 40 MiB/s at two clients, two readers of 10 MiB take
# about half a second.
start_pfs --bandwidth 1:20M,3:60M
t0=$(now_ms)
netns_read first &
reader1=$!
netns_read second &
reader2=$!
wait "$reader1" || fail "reader 1 failed"
wait "$reader2" || fail "reader 2 failed"
pair_ms=$(($(now_ms) - t0))
stop_pfs
[ "$(stat_field count -)" = 2 ] || fail "two namespaces read, the stats show $(stat_field count -) clients"
echo "--bandwidth 1:20M,3:60M: two clients 10 MiB each in ${pair_ms} ms (40 MiB/s: about 500 ms)"
in_range "$pair_ms" 400 800 || fail "two clients at 40 MiB/s took ${pair_ms} ms, want 400-800"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "PASS"
exit 0
