#!/bin/bash
# Time to a rank's first batch with a contended metadata server, plain
# PyTorch against nopfs, on the 3-node test cluster (3 nodes x 2 ranks): the
# shared PFS is the emulated one (nopfs-pfs) with one metadata server
# answering METADATA_RATE operations a second, each after METADATA_LATENCY
# ms (default 0.2). METADATA_RATES (default "5000 2000") lists the rates to
# measure, one after the other on the same dataset (the cluster is started
# again for each; the dataset is made and removed on an unlimited one).
# The dataset: FILES files (default 100000) in DIRS class folders (default
# 1000), 1 KiB each. Each rank runs torchvision's
# ImageFolder, a DistributedSampler and a DataLoader until its first batch
# (first_batch.py); under nopfs the tasks start at once
# (--nopfs-start=early). Prints, for each of REPEAT runs (default 3) and
# their medians, the slowest rank's time from srun to its first batch and
# the PFS metadata operations of the job (the emulator's counters: the
# ranks' and, with nopfs, the agents' scan, listings and files' stats), and
# the ratio nopfs / plain of each pair of runs, with when the slowest rank
# of each started Python, was done importing and done listing; then, from
# each nopfs run's job report, its ranks' metadata calls served and passed
# (and the report's problems about the metadata, if any). Needs root;
# brings the cluster up with the emulated PFS and down at the end.
set -euo pipefail
FILES=${FILES:-100000}
DIRS=${DIRS:-1000}
REPEAT=${REPEAT:-3}
read -r -a RATES <<<"${METADATA_RATES:-5000 2000}"
emulate() { echo "--metadata-rate $1 --metadata-latency ${METADATA_LATENCY:-0.2}"; }
# The dataset is made (and removed at the end) on an unlimited server.
UNLIMITED="--metadata-latency 0"
NOPFS_CLUSTER_PFS_EMULATE=$UNLIMITED
export NOPFS_CLUSTER_PFS_EMULATE
PLUGIN_NEEDS_TORCH=1
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-$top_srcdir}
# shellcheck source-path=SCRIPTDIR source=../tests/cluster/plugin_test_lib.sh
. "$top_srcdir/tests/cluster/plugin_test_lib.sh"
# The cluster now runs the emulated PFS: take it down at the end whoever started it.
# shellcheck disable=SC2034 # read by cluster_cleanup (cluster_test_lib.sh)
CLUSTER_STARTED=1
[[ -n ${NOPFS_CLUSTER_PFS_STATS:-} ]] || { echo "the cluster's PFS is not emulated"; exit 1; }

cp "$SRCDIR/benchmarks/first_batch.py" "$WORK/first_batch.py"
"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/data" --samples "$FILES" --classes "$DIRS" \
	--mean 1K --sd 0 >/dev/null
chmod -R a+rX "$WORK"

# metadata_ops: the emulator's metadata operations so far, all clients.
metadata_ops() {
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["total"]["metadata"]["total"])' \
		"$NOPFS_CLUSTER_PFS_STATS"
}

# run NAME [SRUN OPTIONS...]: one job to the first batch; prints
# "SECONDS OPERATIONS": the slowest rank's time and the job's metadata ops.
run() {
	local name=$1 before after seconds
	shift
	sleep 1.5 # the counters are rewritten every second: let them settle
	before=$(metadata_ops)
	(cd "$WORK" && "${RUNU[@]}" env BENCH_START="$(date +%s.%N)" \
		srun -N3 --ntasks-per-node=2 "$@" "$PYTHON" "$WORK/first_batch.py" "$WORK/data") \
		>"$WORK/$name.out" 2>"$WORK/$name.err" || {
		echo "$name failed:" >&2
		cat "$WORK/$name.err" >&2
		exit 1
	}
	sleep 1.5
	after=$(metadata_ops)
	seconds=$(awk '$3 == '"$FILES"' { if ($2 > m) m = $2; n++ } END { if (n == 6) print m; else print "missing" }' \
		"$WORK/$name.out")
	[[ $seconds != missing ]] || { echo "$name: not every rank reached its first batch" >&2; cat "$WORK/$name.out" >&2; exit 1; }
	# a nopfs run whose agents were not ready in time measured plain PyTorch
	if grep -q 'nopfs: .*not ready\|read the PFS directly\|agent step:' "$WORK/$name.err"; then
		echo "$name: the agents did not serve this job:" >&2
		cat "$WORK/$name.err" >&2
		exit 1
	fi
	phases=$(awk '$3 == '"$FILES"' && $2 == '"$seconds"' { print "python at " $4 " s, imports done " $5 " s, listed " $6 " s"; exit }' \
		"$WORK/$name.out")
	echo "$seconds $((after - before)) $phases"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[1] " to " v[NR] }'; }
summary=()
for rate in "${RATES[@]}"; do
	if [[ $(emulate "$rate") != "$NOPFS_CLUSTER_PFS_EMULATE" ]]; then
		NOPFS_CLUSTER_PFS_EMULATE=$(emulate "$rate") # the PFS (and the dataset) is kept
		"$NC" up --nodes 3 >/dev/null
		eval "$("$NC" env)"
	fi
	plain_times=() plain_ops=() nopfs_times=() nopfs_ops=() ratios=()
	for i in $(seq 1 "$REPEAT"); do
		read -r t o plain_phases < <(run "plain-$rate-$i")
		plain_times+=("$t") plain_ops+=("$o")
		read -r t o nopfs_phases < <(run "nopfs-$rate-$i" --nopfs-dataset="$WORK/data" --nopfs-tiers=ram:200M \
			--nopfs-start=early --nopfs-report="$WORK/nopfs-$rate-$i.json")
		nopfs_times+=("$t") nopfs_ops+=("$o")
		ratios+=("$(awk -v n="$t" -v p="${plain_times[-1]}" 'BEGIN { printf "%.2f", n / p }')")
		echo "$rate ops/s, run $i: plain ${plain_times[-1]} s, ${plain_ops[-1]} metadata ops;" \
			"nopfs ${nopfs_times[-1]} s, ${nopfs_ops[-1]} metadata ops; nopfs / plain ${ratios[-1]}"
		echo "  the slowest rank: plain: $plain_phases; nopfs: $nopfs_phases"
	done
	summary+=("first batch, 3 nodes x 2 ranks, $FILES files in $DIRS folders, metadata server $(emulate "$rate") (medians of $REPEAT runs):"
		"  plain PyTorch: $(median "${plain_times[@]}") s ($(spread "${plain_times[@]}")), $(median "${plain_ops[@]}") PFS metadata operations per job"
		"  nopfs:         $(median "${nopfs_times[@]}") s ($(spread "${nopfs_times[@]}")), $(median "${nopfs_ops[@]}") PFS metadata operations per job"
		"  nopfs / plain, pairs of runs: median $(median "${ratios[@]}") ($(spread "${ratios[@]}"))")
done
printf '%s\n' "${summary[@]}"
NOPFS_CLUSTER_PFS_EMULATE=$UNLIMITED
"$NC" up --nodes 3 >/dev/null
# The job reports come once the agents have stopped (after srun): 30 s at
# most for the last. Each run's ranks' calls served and passed, with the
# report's problems about the metadata (why a rank had none).
for _ in $(seq 1 150); do
	[[ -s $WORK/nopfs-${RATES[-1]}-$REPEAT.json ]] && break
	sleep 0.2
done
for rate in "${RATES[@]}"; do for i in $(seq 1 "$REPEAT"); do
	report=$WORK/nopfs-$rate-$i.json
	if [[ -s $report ]]; then
		"$PYTHON" - "$report" "$rate ops/s, run $i" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
meta = report["metadata"]
print(f"  nopfs ranks ({sys.argv[2]}): {meta['served']} metadata calls served "
      f"from the catalog, {meta['passed']} reached the PFS"
      + (f" ({meta['passed_absent']} with no metadata from the agent)"
         if meta.get("passed_absent") else ""))
for problem in report.get("problems", []):
    if "metadata" in problem:
        print(f"    problem: {problem}")
PY
	else
		echo "  (no job report of nopfs run $i at $rate ops/s: its ranks' counts are not shown)"
	fi
done; done
