#!/bin/sh
# nopfs-report: merging node reports into the job report, summaries, errors
# that name the file and the key.
set -u
report="${top_builddir:-.}/nopfs-report"
python="${NOPFS_PYTHON:-python3}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect_error "message fragment" args...: exit status 1, message on stderr.
expect_error() {
	fragment=$1
	shift
	"$report" "$@" >"$work/out" 2>"$work/err"
	status=$?
	if [ "$status" -ne 1 ]; then
		fail "nopfs-report $*: exit status $status, not 1"
	elif ! grep -qF -- "$fragment" "$work/err"; then
		fail "nopfs-report $*: stderr lacks '$fragment': $(cat "$work/err")"
	fi
}

# node_report NODE JOB PFS_BYTES PROBE_BYTES RAM_SAMPLES > file: the keys the
# agent writes (RAM samples are staged copies of 100 bytes).
node_report() {
	cat <<JSON
{"job_id": "$2", "host": "h$1", "node": $1,
 "job": {"dataset": "/data", "samples": 1000, "epochs": 3, "world_size": 6,
         "local_ranks": 2, "per_rank": 167},
 "delivered_staged": {"staging": {"samples": 0, "bytes": 0},
   "ram": {"samples": $5, "bytes": $(($5 * 100))}, "ssd": {"samples": 0, "bytes": 0},
   "peer": {"samples": 0, "bytes": 0}, "pfs": {"samples": 0, "bytes": 0}},
 "delivered_on_request": {"staging": {"samples": 0, "bytes": 0},
   "ram": {"samples": 0, "bytes": 0}, "ssd": {"samples": 0, "bytes": 0},
   "peer": {"samples": 10, "bytes": 1000}, "pfs": {"samples": 0, "bytes": 0}},
 "pfs": {"bytes": $3, "reads": 10, "probe_bytes": $4, "vs_dataset": 0.5,
         "vs_naive": 0.1, "dataset_bytes": 100000},
 "stall": {"requests": 10, "seconds": 0.5, "max_seconds": 0.02, "mean_seconds": 0.05},
 "fallbacks": {"unknown_path": 0, "read_error": 0, "timeout": 0, "stopping": 0,
               "malformed": 0},
 "stream": {"mismatched_requests": 0, "matched_deliveries": 10},
 "connections": {"refused": 0, "malformed_messages": 0, "watch_overflows": 0},
 "peers": null}
JSON
}

node_report 0 12 50000 4000 100 >"$work/n0.json"
node_report 1 12 40000 3000 200 >"$work/n1.json"
node_report 2 12 30000 2000 300 >"$work/n2.json"

"$report" --help >"$work/help" || fail "--help failed"
grep -qF "Usage: nopfs-report [--merge OUT] [--expect N] FILE..." "$work/help" ||
	fail "--help: $(cat "$work/help")"

expect_error "no report given" --merge "$work/job.json"
expect_error "2 reports given: merge them with --merge OUT" "$work/n0.json" "$work/n1.json"
expect_error "--expect: '0' is not an integer" --expect 0 --merge "$work/job.json" "$work/n0.json"
expect_error "unknown or incomplete option '--bogus'" --bogus "$work/n0.json"
expect_error "nopfs-report: $work/none.json: " --merge "$work/job.json" "$work/none.json"
printf '{"node": 1,' >"$work/cut.json"
expect_error "nopfs-report: $work/cut.json: line 1" --merge "$work/job.json" "$work/cut.json"

# A report without a key: the file, the node and the key are named, no output.
sed 's/"probe_bytes": 3000, //' "$work/n1.json" >"$work/nokey.json"
expect_error "nopfs-report: $work/nokey.json: node 1: key 'pfs.probe_bytes' is missing" \
	--merge "$work/job.json" "$work/n0.json" "$work/nokey.json"
[ -e "$work/job.json" ] && fail "an output was written despite the error"
# Two reports of node 1: the second file is named.
cp "$work/n1.json" "$work/n1again.json"
expect_error "nopfs-report: $work/n1again.json: node 1 is reported twice" \
	--merge "$work/job.json" "$work/n0.json" "$work/n1.json" "$work/n1again.json"
expect_error "node 2 is not one of the job's 2 nodes" \
	--expect 2 --merge "$work/job.json" "$work/n0.json" "$work/n2.json"

# Three nodes merged: the file, its mode, its figures; the summary on stderr.
"$report" --merge "$work/job.json" "$work/n2.json" "$work/n0.json" "$work/n1.json" \
	>"$work/out" 2>"$work/summary" || fail "merge failed: $(cat "$work/summary")"
[ -s "$work/out" ] && fail "stdout not empty: $(cat "$work/out")"
[ "$(stat -c %a "$work/job.json")" = 644 ] || fail "mode $(stat -c %a "$work/job.json")"
for left in "$work"/*.tmp; do
	[ -e "$left" ] && fail "temporary file left: $left"
done
"$python" - "$work/job.json" <<'PY' || fail "merged JSON checks"
import json, sys
job = json.load(open(sys.argv[1]))
assert job["job_id"] == "12" and job["epochs"] == 3 and job["dataset_bytes"] == 100000, job
assert job["nodes_expected"] == 3 and job["nodes_reported"] == [0, 1, 2], job
assert job["nodes_missing"] == [] and job["problems"] == [], job
assert job["pfs_bytes"] == 111000 and job["probe_bytes"] == 9000, job
assert abs(job["vs_dataset"] - 1.11) < 1e-9 and abs(job["vs_naive"] - 0.37) < 1e-9, job
assert job["delivered"]["ram"] == {"samples": 600, "bytes": 60000}, job["delivered"]
assert job["delivered"]["peer"] == {"samples": 30, "bytes": 3000}, job["delivered"]
assert job["delivered_total"] == {"samples": 630, "bytes": 63000}, job
assert job["delivered_staged"]["samples"] == 600, job
assert job["stall"]["requests"] == 30 and abs(job["stall"]["seconds"] - 1.5) < 1e-9, job
assert [n["node"] for n in job["per_node"]] == [0, 1, 2], job["per_node"]
PY
grep -v '^nopfs: ' "$work/summary" && fail "unprefixed summary lines"
grep -qF "nopfs: job 12 on 3 nodes: 1000 samples, 100.0 kB, 3 epochs" "$work/summary" ||
	fail "summary: $(cat "$work/summary")"
grep -qF "nopfs: PFS read 111.0 kB = 1.11 x dataset" "$work/summary" ||
	fail "summary: $(cat "$work/summary")"
grep -qF "nopfs: delivered 630 samples: 95.2% node RAM" "$work/summary" ||
	fail "summary: $(cat "$work/summary")"
grep -qF "nopfs: problems: none" "$work/summary" || fail "summary: $(cat "$work/summary")"

# The job report's summary alone is the same; a job report cannot be merged again.
"$report" "$work/job.json" 2>"$work/again" || fail "summary of the job report failed"
cmp -s "$work/summary" "$work/again" || fail "summaries differ: $(cat "$work/again")"
expect_error "nopfs-report: $work/job.json: a job report, not a node report" \
	--merge "$work/job2.json" "$work/job.json"

# A node missing: named in the problems, not an error.
"$report" --expect 3 --merge "$work/job2.json" "$work/n0.json" "$work/n2.json" \
	2>"$work/summary" || fail "merge with a node missing failed"
grep -qF "nopfs: problem: no report from node 1" "$work/summary" ||
	fail "summary: $(cat "$work/summary")"
grep -qF "on 3 nodes (2 reported)" "$work/summary" || fail "summary: $(cat "$work/summary")"

# One node's report alone, no --merge: merged on the fly.
"$report" "$work/n1.json" 2>"$work/summary" || fail "summary of a node report failed"
grep -qF "nopfs: job 12 on 2 nodes (1 reported)" "$work/summary" ||
	fail "summary: $(cat "$work/summary")"

# A job report without a key; an output that cannot be written.
"$python" -c 'import json, sys
job = json.load(open(sys.argv[1])); del job["vs_naive"]; json.dump(job, open(sys.argv[2], "w"))' \
	"$work/job.json" "$work/broken.json"
expect_error "nopfs-report: $work/broken.json: key 'vs_naive' is missing" "$work/broken.json"
expect_error "nopfs-report: $work/nodir/job.json: cannot create" \
	--merge "$work/nodir/job.json" "$work/n0.json"

[ "$failures" -eq 0 ] || exit 1
echo "nopfs-report CLI: all checks passed"
