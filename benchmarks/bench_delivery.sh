#!/bin/sh
# Local delivery benchmark: an agent for one rank over a generated dataset of
# 110 KB samples, then bench_delivery under the interposer. Prints the
# delivery ratios and the agent's start-up time (probe + plan).
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
python=${NOPFS_PYTHON:-/usr/bin/python3}
samples=${BENCH_SAMPLES:-2000}
# Each rank's whole stream is staged before it is read, so that what is timed
# is delivery alone, not the agent staging concurrently on a small machine.
window=$((samples / 2))
work=$(mktemp -d /tmp/nopfs-bench-delivery.XXXXXX)
job="bench-delivery-$$"
agent_pid=

cleanup() {
	if [ -n "$agent_pid" ]; then
		kill "$agent_pid" 2>/dev/null || true
		wait "$agent_pid" 2>/dev/null || true
	fi
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work" "/dev/shm/nopfs-$job"
}
trap cleanup EXIT

"$python" "$top_srcdir/contrib/make-dataset" "$work/data" --samples "$samples" --classes 20 \
	--mean 110K --sd 0 >/dev/null
"$top_builddir/nopfs-agent" --dataset "$work/data" --seed 42 --epochs 1 --world-size 2 \
	--ranks 0,1 --tier ram:512M --stage-window "$window" --job-id "$job" \
	--runtime-dir "$work/run" \
	--report "$work/report.json" --log "$work/agent.log" &
agent_pid=$!
deadline=$(($(date +%s) + 60))
while [ ! -e "$work/run/ready" ]; do
	if [ "$(date +%s)" -gt "$deadline" ] || ! kill -0 "$agent_pid" 2>/dev/null; then
		echo "bench_delivery: the agent did not get ready" >&2
		cat "$work/agent.log" >&2
		exit 1
	fi
	sleep 0.05
done

NOPFS_SOCKET="$work/run/agent.sock" NOPFS_STAGE_DIR="/dev/shm/nopfs-$job" \
	NOPFS_DATASET="$work/data" NOPFS_RANK=1 \
	LD_PRELOAD="$top_builddir/lib/.libs/libnopfs_preload.so" \
	"$top_builddir/benchmarks/bench_delivery" "$work/data" /dev/shm "$window"

kill -TERM "$agent_pid"
wait "$agent_pid" || true
agent_pid=
"$python" - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["phases"]
print(f"  agent start-up: catalog {p['catalog']:.3f} s, probe {p['probe']:.3f} s, "
      f"plan {p['plan']:.3f} s, tiers {p['tiers']:.3f} s "
      f"(benchmark + plan = {p['probe'] + p['plan']:.3f} s)")
PY
