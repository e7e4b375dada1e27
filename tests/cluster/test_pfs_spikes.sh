#!/bin/bash
# PFS latency spikes on the real test cluster, with the emulated PFS: 3% of
# the reads take 6 s more, longer than the agents' wait for a sample being
# staged (--serve-timeout-ms, 5 s) and within the tasks' wait for an answer
# (NOPFS_TIMEOUT_MS, 10 s). An
# unchanged PyTorch script runs 2 epochs on 3 nodes x 2 ranks, plain and
# under --nopfs-dataset: every rank prints the same samples with the same
# bytes (SHA-256 of each) both ways, the job ends, the report says how long the tasks waited
# for the agents and how many requests gave up on them (they read the PFS
# themselves), and nothing of the job is left on any node.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
export NOPFS_CLUSTER_PFS_EMULATE="--noise 0.03:6000 --seed 7"
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

job_dataset 600 6
fails=0

# train NAME [SRUN OPTIONS...]: 2 epochs on 3 nodes x 2 ranks; the lines of
# all ranks, sorted, in $WORK/NAME.lines, the seconds it took in $WORK/NAME.time
train() {
	local name=$1 start
	shift
	start=$(date +%s%N)
	(cd "$WORK" && timeout -k 5 400 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 -J "$name" "$@" \
		"$PYTHON" "$WORK/train.py" --data "$WORK/data" --seed 3 --epochs 2 --workers 2 \
		--out "$WORK/$name.%r") >"$WORK/$name.log" 2>&1 || {
		cat "$WORK/$name.log"
		return 1
	}
	echo $((($(date +%s%N) - start) / 1000000)) >"$WORK/$name.time" # ms
	cat "$WORK/$name".? | sort >"$WORK/$name.lines"
}

if train plain && train spikes --nopfs-dataset="$WORK/data" --nopfs-epochs=2 --nopfs-seed=3 \
	--nopfs-report="$WORK/spikes.json"; then
	if cmp -s "$WORK/plain.lines" "$WORK/spikes.lines" && [[ $(wc -l <"$WORK/spikes.lines") == 1200 ]]; then
		echo "ok - spikes: every rank read the same 1200 samples with the same bytes as plain PyTorch"
	else
		echo "not ok - spikes: plain and nopfs differ: $(diff "$WORK/plain.lines" "$WORK/spikes.lines" | head -n 6)"
		fails=$((fails + 1))
	fi
	wait_report "$WORK/spikes.json" || true
	if summary=$("$PYTHON" - "$WORK/spikes.json" "$(cat "$WORK/plain.time")" "$(cat "$WORK/spikes.time")" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
nodes = report["per_node"]
assert len(nodes) == 3, [n["node"] for n in nodes]
timeouts = sum(n["fallbacks"].get("timeout", 0) for n in nodes)
waited = sum(n["stall"]["seconds"] for n in nodes)
longest = max(n["stall"]["max_seconds"] for n in nodes)
# a request the agent answers from a spiking PFS read takes that read's time;
# the task gives up at its own timeout (NOPFS_TIMEOUT_MS, 10 s) and reads the PFS
assert longest <= 10.5, f"a request waited {longest:.2f} s, past the tasks' 10 s timeout"
print(f"plain {int(sys.argv[2]) / 1000:.1f} s, nopfs {int(sys.argv[3]) / 1000:.1f} s; "
      f"the tasks waited {waited:.1f} s for the agents in all, {longest:.2f} s at most; "
      f"{timeouts} requests gave up on them at the serve timeout; "
      f"PFS {report['vs_dataset']:.2f} x S")
PY
	); then
		echo "ok - spikes: $summary"
	else
		echo "not ok - spikes: the report: $summary"
		fails=$((fails + 1))
	fi
	job=$(report_job "$WORK/spikes.json")
	[[ -z $job ]] || { wait_gone "$job" && nothing_left "$job" || fails=$((fails + 1)); }
else
	echo "not ok - spikes: a run failed"
	fails=$((fails + 1))
fi
echo "# $fails failed"
((fails == 0))
