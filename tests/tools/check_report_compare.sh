#!/bin/sh
# nopfs-report --compare and --plot on job reports merged from node reports
# with deliveries per epoch and the request-wait histogram: the sums, the
# ratios, the plotted data and PNG files, and the errors.
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

# node_reports DIR JOB SCALE: the node reports of a 2-node, 3-epoch job; per
# epoch, node N delivers SCALE x (N + 1) x 100 samples of 1000 bytes from RAM,
# epoch 0 also 50 from the PFS; its requests waited 3 x 1-2 us and 1 x 1-2 ms.
node_reports() {
	"$python" - "$1" "$2" "$3" <<'PY'
import json, sys
out, job, scale = sys.argv[1], sys.argv[2], int(sys.argv[3])
sources = ["staging", "ram", "ssd", "peer", "pfs"]
for node in (0, 1):
    per_epoch = []
    for epoch in range(3):
        e = {s: {"samples": 0, "bytes": 0} for s in sources}
        ram = scale * (node + 1) * 100
        e["ram"] = {"samples": ram, "bytes": ram * 1000}
        if epoch == 0:
            e["pfs"] = {"samples": 50, "bytes": 50000}
        per_epoch.append(e)
    total = {s: {"samples": sum(e[s]["samples"] for e in per_epoch),
                 "bytes": sum(e[s]["bytes"] for e in per_epoch)} for s in sources}
    histogram = [0] * 32
    histogram[1] = 3
    histogram[11] = 1
    pfs = 100000 * scale + 50000
    report = {
        "job_id": job, "host": f"h{node}", "node": node,
        "job": {"dataset": "/data", "samples": 2000, "epochs": 3, "world_size": 4,
                "local_ranks": 2, "per_rank": 500},
        "delivered_staged": total,
        "delivered_on_request": {s: {"samples": 0, "bytes": 0} for s in sources},
        "pfs": {"bytes": pfs, "reads": 10, "probe_bytes": 0, "vs_dataset": 0.1,
                "vs_naive": 0.1, "dataset_bytes": 2000000},
        "stall": {"requests": 4, "seconds": 0.002, "max_seconds": 0.0015,
                  "mean_seconds": 0.0005, "histogram_us_log2": histogram},
        "fallbacks": {"unknown_path": 0, "read_error": 0, "timeout": 0, "stopping": 0,
                      "malformed": 0},
        "stream": {"mismatched_requests": 0, "matched_deliveries": 10},
        "connections": {"refused": 0, "malformed_messages": 0, "watch_overflows": 0},
        "peers": None, "per_epoch": per_epoch,
        "unattributed": {s: {"samples": 0, "bytes": 0} for s in sources},
    }
    json.dump(report, open(f"{out}/{job}-n{node}.json", "w"))
PY
}

node_reports "$work" 21 1
node_reports "$work" 22 2
"$report" --merge "$work/a.json" "$work/21-n0.json" "$work/21-n1.json" 2>/dev/null ||
	fail "merge of job 21"
"$report" --merge "$work/b.json" "$work/22-n0.json" "$work/22-n1.json" 2>/dev/null ||
	fail "merge of job 22"

# The merge sums deliveries per epoch and the histograms; p50 and p99 follow.
"$python" - "$work/a.json" <<'PY' || fail "merged per_epoch and stall"
import json, sys
job = json.load(open(sys.argv[1]))
assert len(job["per_epoch"]) == 3, job["per_epoch"]
assert job["per_epoch"][0]["ram"] == {"samples": 300, "bytes": 300000}, job["per_epoch"][0]
assert job["per_epoch"][0]["pfs"] == {"samples": 100, "bytes": 100000}, job["per_epoch"][0]
assert job["per_epoch"][2]["pfs"] == {"samples": 0, "bytes": 0}, job["per_epoch"][2]
h = job["stall"]["histogram_us_log2"]
assert h[1] == 6 and h[11] == 2 and sum(h) == 8, h
assert job["stall"]["p50_seconds"] == 2e-6, job["stall"]
assert job["stall"]["p99_seconds"] == 2048e-6, job["stall"]
PY

# --compare: the rows and the B / A ratios.
"$report" --compare "$work/a.json" "$work/b.json" >"$work/cmp" 2>"$work/err" ||
	fail "--compare: $(cat "$work/err")"
row() { grep -E "^$1 +[-0-9]" "$work/cmp" | tr -s ' '; }
# PFS bytes: A 2 x 150000 - probe 0 = 300000, B 2 x 250000 = 500000: ratio 1.67.
[ "$(row 'PFS read')" = "PFS read 292.97 KiB 488.28 KiB 1.67" ] ||
	fail "PFS row: $(row 'PFS read')"
# Delivered: A 3 x 300 + 100 = 1000, B 3 x 600 + 100 = 1900.
[ "$(row 'samples delivered')" = "samples delivered 1000 1900 1.90" ] ||
	fail "delivered row: $(row 'samples delivered')"
# Share from node RAM: A 90.0%, B 94.7% (1800 / 1900): +4.7 points.
[ "$(row 'share from node RAM')" = "share from node RAM 90.0% 94.7% +4.7 pt" ] ||
	fail "RAM row: $(row 'share from node RAM')"
[ "$(row 'stall p99')" = "stall p99 0.002 s 0.002 s 1.00" ] ||
	fail "p99 row: $(row 'stall p99')"
grep -q "^A: $work/a.json (job 21)" "$work/cmp" || fail "A line: $(head -1 "$work/cmp")"

# Against a plain loader: 3 x the dataset from the PFS, every sample from it.
"$report" --compare "$work/a.json" naive >"$work/cmp" 2>"$work/err" ||
	fail "--compare naive: $(cat "$work/err")"
[ "$(row 'PFS read / dataset')" = "PFS read / dataset 0.15 x 3.00 x 20.00" ] ||
	fail "naive PFS row: $(row 'PFS read / dataset')"
[ "$(row 'share from the PFS')" = "share from the PFS 10.0% 100.0% +90.0 pt" ] ||
	fail "naive PFS share: $(row 'share from the PFS')"
grep -q "computed from A" "$work/cmp" || fail "naive side not said to be computed"

# --plot: the data is the report's, the PNG files are PNG files of the size asked.
"$report" --plot "$work/plots" "$work/b.json" 2>"$work/err" || fail "--plot: $(cat "$work/err")"
grep -v '^#' "$work/plots/epochs.dat" >"$work/rows"
[ "$(sed -n 1p "$work/rows")" = "0 0.000000 0.600000 0.000000 0.000000 0.100000" ] ||
	fail "epochs.dat: $(cat "$work/rows")"
[ "$(wc -l <"$work/rows")" -eq 3 ] || fail "epochs.dat rows: $(cat "$work/rows")"
grep -q '^2 <2us 6$' "$work/plots/stalls.dat" || fail "stalls.dat: $(cat "$work/plots/stalls.dat")"
grep -q '^2048 <2.05ms 2$' "$work/plots/stalls.dat" ||
	fail "stalls.dat: $(cat "$work/plots/stalls.dat")"
"$python" - "$work/plots" <<'PY' || fail "PNG files"
import struct, sys, zlib
for name in ("epochs.png", "stalls.png"):
    data = open(f"{sys.argv[1]}/{name}", "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", name
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, name
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (900, 500), (name, width, height)
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], name
    assert data[-8:-4] == b"IEND", name
PY

# Errors name the culprit.
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
expect_error "--compare takes two reports" --compare "$work/a.json"
expect_error "nopfs-report: $work/none.json: " --compare "$work/a.json" "$work/none.json"
expect_error "--merge, --compare, --plot, --live and --live-node go alone" \
	--compare --plot "$work/p" "$work/a.json" "$work/b.json"
expect_error "--plot DIR takes one job report" --plot "$work/p" "$work/a.json" "$work/b.json"
expect_error "--once, --json, --interval and --srun go with --live" --once "$work/a.json"
expect_error "--live: 'x1' is not a Slurm job id" --live x1 --once
"$python" -c 'import json, sys
job = json.load(open(sys.argv[1])); del job["per_epoch"]; json.dump(job, open(sys.argv[2], "w"))' \
	"$work/a.json" "$work/old.json"
expect_error "$work/old.json has no 'per_epoch'" --plot "$work/p" "$work/old.json"
mkdir "$work/nognuplot"
PATH="$work/nognuplot" "$report" --plot "$work/p" "$work/a.json" 2>"$work/err" &&
	fail "--plot without gnuplot succeeded"
grep -qF "gnuplot is not in PATH; install it (Debian: apt-get install gnuplot-nox)" \
	"$work/err" || fail "--plot without gnuplot: $(cat "$work/err")"
sed 's/"histogram_us_log2": \[0, 3/"histogram_us_log2": [0, -3/' "$work/21-n1.json" >"$work/bad.json"
expect_error "nopfs-report: $work/bad.json: node 1: key 'stall.histogram_us_log2[1]' is not a count" \
	--merge "$work/c.json" "$work/21-n0.json" "$work/bad.json"

[ "$failures" -eq 0 ] || exit 1
echo "nopfs-report --compare and --plot: all checks passed"
