#!/bin/bash
# Reproduce the NoPFS paper's simulator results (SC'21 section 6: Fig. 8 and
# Fig. 9) and the section 3.1 access-frequency figures with nopfs-sim, and
# print the checks with the paper's figures next to ours.
#
# Usage: benchmarks/sim/run-paper.sh [nopfs-sim paper options]
#   e.g. run-paper.sh --scale 0.01      a quick run on 1% of the samples
#        run-paper.sh --fig9-ours       also our placement on the Fig. 9 grid
# Environment: NOPFS_SIM (the binary, default: the build tree's nopfs-sim),
#              NOPFS_SIM_OUT (output directory, default: nopfs-sim-out).
# The report is also saved as $NOPFS_SIM_OUT/report.txt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sim=${NOPFS_SIM:-$here/../../nopfs-sim}
out=${NOPFS_SIM_OUT:-nopfs-sim-out}

if [ ! -x "$sim" ]; then
	echo "run-paper.sh: $sim is not built; run 'make nopfs-sim' first" >&2
	exit 1
fi
mkdir -p "$out"
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "run-paper.sh: gnuplot not found: CSV and scripts only, no pictures" >&2
fi
start=$(date +%s)
"$sim" paper --out "$out" "$@" | tee "$out/report.txt"
echo "run-paper.sh: done in $(($(date +%s) - start)) s; report, CSV and plots in $out/"
