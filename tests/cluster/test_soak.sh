#!/bin/bash
# Many jobs back to back on the real test cluster: 30 jobs of the test user,
# each an srun with --nopfs-dataset on 3 nodes whose tasks read every sample
# through the interposer (cat, checksums compared with the files'). After
# each job nothing of it is left on any node (agents, files, shared memory);
# after all of them the nodes' /tmp and /dev/shm hold what they held before,
# and the agents' peak memory (the node reports' process.max_rss_kib) does
# not grow from the first jobs to the last.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
JOBS=${SOAK_JOBS:-30}
job_dataset 60 3
find "$WORK/data" -name '*.JPEG' | sort >"$WORK/files"
xargs sha256sum <"$WORK/files" | sha256sum >"$WORK/expected"
chmod a+r "$WORK/files"

# what each node holds in its shared places, as names
places() {
	local node
	for node in n1 n2 n3; do
		"$NC" exec-node "$node" sh -c 'ls -A /tmp /dev/shm' | sort | sed "s/^/$node: /"
	done
}
places >"$WORK/before"
fails=0
for i in $(seq 1 "$JOBS"); do
	out=$WORK/job-$i.out
	# shellcheck disable=SC2016 # expanded by the task's shell
	if ! (cd "$WORK" && timeout -k 5 120 "${RUNU[@]}" srun -N3 --ntasks-per-node=1 -J "soak-$i" \
		--nopfs-dataset="$WORK/data" --nopfs-report="$WORK/soak-$i.json" \
		sh -c 'xargs sha256sum <"$0" | sha256sum' "$WORK/files" >"$out" 2>"$WORK/job-$i.err"); then
		echo "not ok - job $i failed: $(tail -n 3 "$WORK/job-$i.err")"
		fails=$((fails + 1))
		continue
	fi
	if [[ $(sort -u "$out") != "$(cat "$WORK/expected")" ]] || [[ $(wc -l <"$out") != 3 ]]; then
		echo "not ok - job $i: a task read other bytes: $(cat "$out")"
		fails=$((fails + 1))
	fi
	job=$(report_job "$WORK/soak-$i.json" 10)
	if [[ -z $job ]]; then
		echo "not ok - job $i wrote no job report"
		fails=$((fails + 1))
		continue
	fi
	wait_gone "$job" && nothing_left "$job" || fails=$((fails + 1))
done
places >"$WORK/after"
if ! cmp -s "$WORK/before" "$WORK/after"; then
	echo "not ok - the nodes' /tmp or /dev/shm changed over $JOBS jobs: $(diff "$WORK/before" "$WORK/after" | head -n 6)"
	fails=$((fails + 1))
fi
if summary=$("$PYTHON" - "$WORK" "$JOBS" <<'PY'
import json, os, statistics, sys
work, jobs = sys.argv[1], int(sys.argv[2])
rss = []
for i in range(1, jobs + 1):
    path = os.path.join(work, f"soak-{i}.json")
    if os.path.exists(path):
        rss.append(max(n["process"]["max_rss_kib"] for n in json.load(open(path))["per_node"]))
assert len(rss) == jobs, f"{len(rss)} job reports of {jobs}"
k = max(1, jobs // 3)
first, last = statistics.median(rss[:k]), statistics.median(rss[-k:])
assert last <= first * 1.2 + 1024, f"agent peak RSS grew: {first} KiB in the first jobs, {last} KiB in the last"
print(f"agent peak RSS median {first / 1024:.1f} MiB over the first {k} jobs, "
      f"{last / 1024:.1f} MiB over the last {k} (min {min(rss) / 1024:.1f}, max {max(rss) / 1024:.1f})")
PY
); then
	echo "ok - $JOBS jobs: every task read the files' bytes, nothing left after each; $summary"
else
	echo "not ok - $summary"
	fails=$((fails + 1))
fi
echo "# $fails failed"
((fails == 0))
