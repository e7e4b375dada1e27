#!/bin/bash
# Start-up cost of nopfs on the 3-node test cluster: how much later the tasks
# of `srun --nopfs-dataset=...` start than those of the same plain srun
# (they wait until every node's agent has its catalog, measurements, plan and
# tiers), with and without the agents' benchmark cache (plugstack.conf
# probe_cache), and the agents' own phase times from the job report.
# Figures from one run, side by side; target: <= 5 s. Needs root.
set -euo pipefail
# shellcheck disable=SC2034 # read by plugin_test_lib.sh
PLUGIN_EXTRA_ARGS="probe_cache=${NOPFS_CLUSTER_STATE:-/tmp/nopfs-cluster}/pfs/nopfs/probe-cache"
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-$top_srcdir}
# shellcheck source-path=SCRIPTDIR source=../tests/cluster/plugin_test_lib.sh
. "$top_srcdir/tests/cluster/plugin_test_lib.sh"
install -d -m 1777 "$PLUGIN_PREFIX/probe-cache"
rm -rf "${PLUGIN_PREFIX:?}/probe-cache/"*
"$PYTHON" "$SRCDIR/contrib/make-dataset" "$WORK/data" --samples 3000 --classes 30 >/dev/null
chmod -R a+rX "$WORK"

# start_delay [SRUN OPTIONS...]: seconds from srun's start to its last task's
cat >"$WORK/stamp" <<'SH'
#!/bin/sh
date +%s.%N
SH
chmod 755 "$WORK/stamp"
start_delay() {
	local t0 last
	t0=$(date +%s.%N)
	last=$(cd "$WORK" && "${RUNU[@]}" srun -N3 --ntasks-per-node=2 "$@" "$WORK/stamp" | sort -n | tail -1)
	awk -v a="$last" -v b="$t0" 'BEGIN { printf "%.3f", a - b }'
}
phases() { # phases REPORT: the slowest node's catalog+benchmark+plan+tiers
	"$PYTHON" - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
worst = max(r["per_node"], key=lambda n: sum(n["phases"].get(k, 0) for k in ("catalog", "probe", "plan", "tiers")))
p = worst["phases"]
print(f"node {worst['node']}: catalog {p['catalog']:.2f} s, benchmark {p['benchmark']:.2f} s, "
      f"plan {p['plan']:.2f} s, tiers {p['tiers']:.2f} s")
PY
}
N="--nopfs-dataset=$WORK/data --nopfs-tiers=ram:200M"
plain=$(start_delay)
# shellcheck disable=SC2086 # N is a word list
cold=$(start_delay $N --nopfs-report="$WORK/cold.json" 2>/dev/null)
# shellcheck disable=SC2086
warm=$(start_delay $N --nopfs-report="$WORK/warm.json" 2>/dev/null)
printf 'start-up, 3 nodes x 2 tasks, 3000 samples (%s):\n' "$(du -sh "$WORK/data" | cut -f1)"
printf '  plain srun: tasks start after %.2f s\n' "$plain"
printf '  --nopfs-dataset, no benchmark cache: %.2f s (+%.2f s); %s\n' "$cold" \
	"$(awk -v a="$cold" -v b="$plain" 'BEGIN { print a - b }')" "$(phases "$WORK/cold.json")"
printf '  --nopfs-dataset, benchmark cached:   %.2f s (+%.2f s); %s\n' "$warm" \
	"$(awk -v a="$warm" -v b="$plain" 'BEGIN { print a - b }')" "$(phases "$WORK/warm.json")"
