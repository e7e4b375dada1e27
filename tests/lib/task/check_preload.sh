#!/bin/sh
# The interposer (libnopfs_preload.so) under LD_PRELOAD, against fake_agent.
#
# Every file exists in up to three copies whose first line says which one it
# is: "PFS <name>" in the dataset, "STAGED <name>" in the staging directory
# (only some files), "AGENT <name>" in the fake agent's local copies. The
# probe (preload_probe) and Python print the first line of what they read.
set -u

builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
python=${NOPFS_PYTHON:-/usr/bin/python3}
preload=$builddir/lib/.libs/libnopfs_preload.so
probe=$builddir/tests/helpers/preload_probe
fake_agent=$builddir/tests/helpers/fake_agent

for f in "$preload" "$probe" "$fake_agent"; do
	[ -e "$f" ] || { echo "missing $f (make check builds it)" >&2; exit 99; }
done
# a sanitizer build: the instrumented interposer loads after the runtime
preload=${NOPFS_SANITIZER_RUNTIME:+$NOPFS_SANITIZER_RUNTIME:}$preload

work=$(mktemp -d /tmp/nopfs-preload-XXXXXX) || exit 99
agent_pid=
failures=0
checks=0

cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

dataset=$work/pfs
stage=$work/stage
copies=$work/copies
socket=$work/agent.sock
# A relative path whose staged name is over NAME_MAX: only the agent serves it.
long_name=$(printf 'd%.0s' $(seq 1 200))/$(printf 'f%.0s' $(seq 1 60)).bin

# make_copy DIR NAME ORIGIN: NAME's copy in DIR, first line "ORIGIN NAME".
make_copy() {
	mkdir -p "$(dirname "$1/$2")"
	{ echo "$3 $2"; head -c $((${#2} * 997 + 3000)) /dev/zero | tr '\0' "$(printf '%s' "$3" | cut -c1)"; } >"$1/$2"
}

# staged_name NAME: "p2." (staged for rank 2) + NAME with % -> %25 and / -> %2F.
staged_name() {
	printf 'p2.%s' "$(printf '%s' "$1" | sed -e 's/%/%25/g' -e 's|/|%2F|g')"
}

mkdir -p "$dataset" "$stage" "$copies"
chmod 700 "$stage" # the interposer uses only a private staging directory
for n in a/one.bin a/two.bin a/three.bin b/four.bin b/five.bin "100%/x y.bin" "c/$long_name"; do
	make_copy "$dataset" "$n" PFS
	make_copy "$copies" "$n" AGENT
done
: >"$dataset/a/empty.bin"
: >"$copies/a/empty.bin"
make_copy "$work" outside.bin OUTSIDE
# Staged: a/one.bin and the name with '%' and ' '.
make_copy "$work/tmp" a/one.bin STAGED
mv "$work/tmp/a/one.bin" "$stage/$(staged_name a/one.bin)"
make_copy "$work/tmp" "100%/x y.bin" STAGED
mv "$work/tmp/100%/x y.bin" "$stage/$(staged_name '100%/x y.bin')"

ok() {
	checks=$((checks + 1))
	echo "ok $checks - $1"
}

not_ok() {
	checks=$((checks + 1))
	failures=$((failures + 1))
	echo "not ok $checks - $1"
}

# expect DESCRIPTION EXPECTED ACTUAL
expect() {
	if [ "$2" = "$3" ]; then ok "$1"; else
		not_ok "$1"
		printf '  expected: %s\n  actual:   %s\n' "$2" "$3"
	fi
}

start_agent() {
	rm -f "$work/agent.log"
	"$fake_agent" --socket "$socket" --copies "$copies" "$@" >"$work/agent.log" 2>&1 &
	agent_pid=$!
	i=0
	while [ ! -S "$socket" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -S "$socket" ] || { echo "fake agent did not start" >&2; cat "$work/agent.log"; exit 99; }
}

stop_agent() {
	kill "$agent_pid" 2>/dev/null
	wait "$agent_pid" 2>/dev/null
	agent_pid=
}

requests() {
	grep -c "^$1 " "$work/agent.log"
}

# run MODE FILE...: the probe under the interposer; the first lines, one per line.
run() {
	mode=$1
	shift
	NOPFS_DATASET=$dataset NOPFS_STAGE_DIR=$stage NOPFS_SOCKET=$socket NOPFS_RANK=2 \
		NOPFS_TIMEOUT_MS=${timeout_ms:-2000} LD_PRELOAD=$preload \
		"$probe" "$mode" "$@" 2>"$work/probe.err" | sed -e 's/ size=.*//' -e "s/^$mode //"
	if [ -s "$work/probe.err" ]; then sed 's/^/  probe: /' "$work/probe.err"; fi
}

joined() {
	tr '\n' '|'
}

now_ms() {
	date +%s%3N
}

# --- no agent at all ----------------------------------------------------------
start=$(now_ms)
expect "no agent: unstaged file read from the PFS" "PFS a/two.bin|" "$(run open "$dataset/a/two.bin" | joined)"
expect "no agent: staged file still served" "STAGED a/one.bin|" "$(run open "$dataset/a/one.bin" | joined)"
expect "no agent: a missing file fails as the real open does" \
	"  probe: preload_probe: $dataset/a/missing.bin: open: No such file or directory|" \
	"$(run open "$dataset/a/missing.bin" | joined)"
elapsed=$(($(now_ms) - start))
[ $elapsed -lt 2000 ] && ok "no agent costs nothing (${elapsed} ms)" || not_ok "no agent took ${elapsed} ms"

# --- the fast path, every entry point ----------------------------------------------
start_agent --mode serve
for mode in open open64 open_2 open64_2 openat openat64 openat_2 openat64_2 fopen fopen64 fopen_e freopen relative; do
	expect "$mode: staged copy served" "STAGED a/one.bin|STAGED 100%/x y.bin|" \
		"$(run $mode "$dataset/a/one.bin" "$dataset/100%/x y.bin" | joined)"
done
expect "fast path asks the agent nothing" 0 "$(requests OPEN)"
expect "normalized path (a//./one.bin) served" "STAGED a/one.bin|" \
	"$(run open "$dataset/a//./one.bin" | joined)"
# ".." after a symbolic link climbs from the link's target, not from the link:
# a path with ".." inside the dataset goes to the file system as it is.
mkdir -p "$work/elsewhere/sub"
make_copy "$work/elsewhere" one.bin OUTSIDE
ln -s "$work/elsewhere/sub" "$dataset/a/lnk"
expect "a/lnk/../one.bin is the file the kernel opens, not a/one.bin" "OUTSIDE one.bin|" \
	"$(run open "$dataset/a/lnk/../one.bin" | joined)"
expect "a/../a/one.bin passes through to the file system" "PFS a/one.bin|" \
	"$(run open "$dataset/a/../a/one.bin" | joined)"

# --- the slow path: OPEN, descriptor passed --------------------------------------------
for mode in open openat_2 fopen freopen relative; do
	expect "$mode: agent's copy served" "AGENT a/two.bin|AGENT b/four.bin|" \
		"$(run $mode "$dataset/a/two.bin" "$dataset/b/four.bin" | joined)"
done
expect "empty file served by the agent" "|" "$(run open "$dataset/a/empty.bin" | joined)"
expect "a missing file fails as the real open does (agent refuses it)" \
	"  probe: preload_probe: $dataset/a/missing.bin: open: No such file or directory|" \
	"$(run open "$dataset/a/missing.bin" | joined)"
expect "name too long to stage: agent serves it" "AGENT c/$long_name|" \
	"$(run open "$dataset/c/$long_name" | joined)"
expect "agent asked once per open" 13 "$(requests OPEN)"
expect "one connection per process" 8 "$(requests HELLO)"
expect "threads: agent and staged copies, consistent" \
	"threads STAGED a/one.bin|threads AGENT a/two.bin|threads AGENT b/five.bin|" \
	"$(run threads "$dataset/a/one.bin" "$dataset/a/two.bin" "$dataset/b/five.bin" | sed 's/^/threads /' | joined)"

# --- what is never served ---------------------------------------------------------
before=$(requests OPEN)
expect "O_RDWR passes through" "PFS a/two.bin|" "$(run rdwr "$dataset/a/two.bin" | joined)"
expect "O_CREAT passes through (file created in the dataset)" "CREATED|" \
	"$(run create "$dataset/a/new.bin" | joined)"
[ -f "$dataset/a/new.bin" ] && ok "created file is in the dataset" || not_ok "created file missing"
expect "outside the dataset passes through" "OUTSIDE outside.bin|" \
	"$(run open "$work/outside.bin" | joined)"
expect "escaping the dataset with .. passes through" "OUTSIDE outside.bin|" \
	"$(run open "$dataset/../outside.bin" | joined)"
expect "writes and outside paths ask the agent nothing" "$before" "$(requests OPEN)"
expect "NULL paths fail with EFAULT as the real open does" "STAGED a/one.bin|" \
	"$(run null "$dataset/a/one.bin" | joined)"
expect "NOPFS_DISABLE=1 turns it off" "PFS a/one.bin|PFS a/two.bin|" \
	"$(NOPFS_DISABLE=1 run open "$dataset/a/one.bin" "$dataset/a/two.bin" | joined)"
expect "without LD_PRELOAD nothing changes" "open PFS a/one.bin" \
	"$("$probe" open "$dataset/a/one.bin" | sed 's/ size=.*//')"

# --- Python, with forked children -----------------------------------------------------
if "$python" -c 'import multiprocessing' 2>/dev/null; then
	hellos=$(requests HELLO)
	out=$(NOPFS_DATASET=$dataset NOPFS_STAGE_DIR=$stage NOPFS_SOCKET=$socket NOPFS_RANK=2 LD_PRELOAD=$preload \
		"$python" "$srcdir/tests/lib/task/preload_python.py" "$dataset/a/two.bin" \
		"$dataset/a/one.bin" "$dataset/a/three.bin" "$dataset/b/four.bin" "$dataset/b/five.bin" 2>&1 |
		sed 's/ [0-9]*$//' | sort | joined)
	expect "python: parent, pool workers and a forked child read served copies" \
		"fork AGENT b/five.bin|parent AGENT a/two.bin|pool AGENT a/three.bin|pool AGENT b/five.bin|pool AGENT b/four.bin|pool STAGED a/one.bin|" \
		"$out"
	new_pids=$(sed -n "$((hellos + 1)),\$p" "$work/agent.log" | awk '$1 == "HELLO" { print $2 }' | sort -u | wc -l)
	[ "$new_pids" -ge 3 ] && ok "forked children connect on their own ($new_pids processes)" ||
		not_ok "forked children did not connect on their own ($new_pids processes)"
else
	echo "# $python has no multiprocessing: python checks skipped"
fi
stop_agent

# --- the agent refuses -----------------------------------------------------------
start_agent --mode error
expect "ERROR reply: PFS" "PFS a/two.bin|PFS b/four.bin|" \
	"$(run fopen "$dataset/a/two.bin" "$dataset/b/four.bin" | joined)"
expect "ERROR reply: staged copy still served" "STAGED a/one.bin|" "$(run open "$dataset/a/one.bin" | joined)"
stop_agent

# --- the agent talks nonsense, or closes ---------------------------------------------
for mode in garbage no-fd bad-size wrong-id close; do
	start_agent --mode $mode
	expect "$mode: PFS" "PFS a/two.bin|PFS b/four.bin|" \
		"$(run open "$dataset/a/two.bin" "$dataset/b/four.bin" | joined)"
	stop_agent
done

# --- the agent dies mid-run ------------------------------------------------------------
start_agent --mode serve --exit-after 2
expect "agent dies after two: the rest from the PFS" \
	"AGENT a/two.bin|AGENT a/three.bin|PFS b/four.bin|PFS b/five.bin|PFS a/two.bin|" \
	"$(run open "$dataset/a/two.bin" "$dataset/a/three.bin" "$dataset/b/four.bin" \
		"$dataset/b/five.bin" "$dataset/a/two.bin" | joined)"
wait "$agent_pid" 2>/dev/null
agent_pid=

# --- the agent hangs: one bounded wait, then backing off -----------------------------------
start_agent --mode hang
start=$(now_ms)
out=$(timeout_ms=300 run open "$dataset/a/two.bin" "$dataset/a/three.bin" "$dataset/b/four.bin" \
	"$dataset/b/five.bin" | joined)
elapsed=$(($(now_ms) - start))
expect "hanging agent: PFS" "PFS a/two.bin|PFS a/three.bin|PFS b/four.bin|PFS b/five.bin|" "$out"
[ $elapsed -ge 300 ] && [ $elapsed -lt 1500 ] && ok "hanging agent: one timeout (${elapsed} ms)" ||
	not_ok "hanging agent: ${elapsed} ms for four opens"
expect "hanging agent: asked once, then backing off" 1 "$(requests OPEN)"
stop_agent

# --- nothing planted in the staging directory is served ------------------------------
# The interposer runs as the user (here root); another user (65534) may plant
# files where the environment points. A copy that is not a regular file of the
# user's, or a staging directory that is not private, is never used: the agent
# serves instead, with the agent's bytes, without blocking, and one warning.
staged_one=$stage/$(staged_name a/one.bin)
agent_sum=$("$probe" open "$copies/a/one.bin" | sed 's/.* size=/size=/')
mv "$staged_one" "$work/saved"
make_copy "$work/evil" a/one.bin EVIL

# planted DESCRIPTION: a/one.bin must be the agent's copy, and said once.
planted() {
	out=$(timeout 10 env NOPFS_DATASET=$dataset NOPFS_STAGE_DIR=$stage NOPFS_SOCKET=$socket \
		NOPFS_RANK=2 LD_PRELOAD=$preload "$probe" open "$dataset/a/one.bin" "$dataset/a/one.bin" \
		2>"$work/probe.err" | sed 's/^open //' | joined)
	expect "$1: the agent's bytes" "AGENT a/one.bin $agent_sum|AGENT a/one.bin $agent_sum|" "$out"
	expect "$1: one warning" 1 "$(grep -c 'not used' "$work/probe.err")"
}

start_agent --mode serve
ln -s "$work/evil/a/one.bin" "$staged_one"
planted "staged copy is a symbolic link"
rm -f "$staged_one"
mkfifo "$staged_one"
planted "staged copy is a FIFO"
rm -f "$staged_one"
if [ "$(id -u)" = 0 ]; then
	cp "$work/evil/a/one.bin" "$staged_one"
	chown 65534 "$staged_one"
	planted "staged copy of another user"
	rm -f "$staged_one"
fi
mv "$work/saved" "$staged_one"
chmod 755 "$stage"
planted "staging directory of mode 0755"
chmod 700 "$stage"
if [ "$(id -u)" = 0 ]; then
	chown 65534 "$stage"
	planted "staging directory of another user"
	chown 0 "$stage"
fi
expect "the staged copy is served again" "STAGED a/one.bin|" "$(run open "$dataset/a/one.bin" | joined)"
expect "fork after the program reused the socket's number: the child keeps its file" \
	"AGENT a/two.bin|" "$(run fork_reuse "$dataset/a/two.bin" | joined)"
stop_agent

# --- nobody else's agent is used -------------------------------------------------------
# notmine DESCRIPTION: a/two.bin comes from the PFS, and it is said once.
notmine() {
	out=$(timeout 10 env NOPFS_DATASET=$dataset NOPFS_STAGE_DIR=$stage NOPFS_SOCKET=$socket \
		NOPFS_RANK=2 LD_PRELOAD=$preload "$probe" open "$dataset/a/two.bin" "$dataset/b/four.bin" \
		2>"$work/probe.err" | sed -e 's/ size=.*//' -e 's/^open //' | joined)
	expect "$1: PFS" "PFS a/two.bin|PFS b/four.bin|" "$out"
	expect "$1: one warning" 1 "$(grep -c "agent at $socket not used" "$work/probe.err")"
	expect "$1: the agent is never asked" 0 "$(requests OPEN)"
}

start_agent --mode serve --ready-pid 1
notmine "the agent's pid is not the ready file's"
stop_agent
start_agent --mode serve --ready-pid -1
notmine "no ready file"
stop_agent
start_agent --mode serve
chmod 755 "$work"
notmine "the socket's directory is open to others"
chmod 700 "$work"
stop_agent
if [ "$(id -u)" = 0 ]; then
	start_agent --mode serve --listen-as 65534
	notmine "the agent runs as another user"
	stop_agent
fi

# --- debug log ----------------------------------------------------------------------
NOPFS_DEBUG=1 NOPFS_DATASET=$dataset NOPFS_STAGE_DIR=$stage NOPFS_SOCKET=$socket NOPFS_RANK=2 LD_PRELOAD=$preload \
	"$probe" open "$dataset/a/one.bin" "$dataset/a/two.bin" >/dev/null 2>"$work/debug.log"
grep -q 'served 1 staged, 0 by the agent; fallbacks to the PFS: 0 backing off, 0 refused, 1 agent failures' \
	"$work/debug.log" && ok "NOPFS_DEBUG=1 counts fallbacks" ||
	{ not_ok "NOPFS_DEBUG=1 counts fallbacks"; sed 's/^/  /' "$work/debug.log"; }

echo "1..$checks"
[ $failures -eq 0 ]
