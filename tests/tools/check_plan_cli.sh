#!/bin/sh
# nopfs-plan: every bad argument is named; JSON, catalog and stream output.
set -u
plan="${top_builddir:-.}/nopfs-plan"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect_error "message fragment" args...: exit status non-zero, message on stderr.
expect_error() {
	fragment=$1
	shift
	if "$plan" "$@" >"$work/out" 2>"$work/err"; then
		fail "nopfs-plan $* succeeded"
	elif ! grep -qF -- "$fragment" "$work/err"; then
		fail "nopfs-plan $*: stderr lacks '$fragment': $(cat "$work/err")"
	fi
}

mkdir -p "$work/data/cat" "$work/data/dog" "$work/empty"
printf 'aaaa' >"$work/data/cat/1.jpg"
printf 'bbbbbbbb' >"$work/data/cat/2.png"
printf 'cc' >"$work/data/dog/3.JPEG"
printf 'not an image' >"$work/data/dog/notes.txt"
printf 'x' >"$work/afile"

expect_error "give exactly one of --dataset, --list and --synthetic" --nodes 2
expect_error "give exactly one of" --dataset "$work/data" --synthetic 10:1K
expect_error "--nodes: 'zero'" --synthetic 10:1K --nodes zero
expect_error "--nodes: '0'" --synthetic 10:1K --nodes 0
expect_error "--epochs: '-1'" --synthetic 10:1K --epochs -1
expect_error "seed '4x2' is not a decimal integer" --synthetic 10:1K --seed 4x2
expect_error "outside torch's range" --synthetic 10:1K --seed 18446744073709551616
expect_error "exceeds 2^64-1" --synthetic 10:1K --seed 18446744073709551615 --epochs 2
expect_error "--tier: unknown tier kind 'tape'" --synthetic 10:1K --tier tape:1G
expect_error "--tier: tier size 'lots'" --synthetic 10:1K --tier ram:lots
expect_error "--synthetic: '10' is not COUNT:MEAN" --synthetic 10
expect_error "distribution 'diagonal' is not supported" --synthetic 10:1K --distribution diagonal
expect_error "task count list '2,,1' is malformed" --synthetic 10:1K --tasks-per-node 2,,1
expect_error "lists 3 nodes, --nodes says 2" --synthetic 10:1K --nodes 2 --tasks-per-node 1,1,1
expect_error "--node 5: the job has nodes 0 .. 1" --synthetic 10:1K --nodes 2 --node 5
expect_error "--print-stream 9: the job has ranks 0 .. 1" --synthetic 10:1K --tasks-per-node 2 --print-stream 9
expect_error "unknown or incomplete option '--bogus'" --bogus
expect_error "unexpected argument 'extra'" --synthetic 10:1K extra
expect_error "$work/missing" --dataset "$work/missing"
expect_error "$work/afile" --dataset "$work/afile"
expect_error "$work/empty" --dataset "$work/empty"
expect_error "drop_last" --synthetic 3:1K --tasks-per-node 4 --drop-last

# The catalog in torchvision order: classes sorted, files sorted, .txt skipped.
"$plan" --dataset "$work/data" --print-catalog >"$work/catalog" || fail "--print-catalog failed"
printf '0\t0\t4\tcat/1.jpg\n1\t0\t8\tcat/2.png\n2\t1\t2\tdog/3.JPEG\n' >"$work/want"
cmp -s "$work/catalog" "$work/want" || fail "catalog: $(cat "$work/catalog")"

# Streams: no shuffle makes them computable by hand (rank 1 of 2 over 5: 1 3 0).
"$plan" --synthetic 5:1K --tasks-per-node 2 --no-shuffle --print-stream 1 >"$work/stream"
[ "$(cat "$work/stream")" = "1 3 0" ] || fail "stream: $(cat "$work/stream")"

# JSON is valid and adds up: every read is local, peer or PFS.
"$plan" --synthetic 1998:10K:2K --nodes 3 --tasks-per-node 2 --epochs 4 --seed 7 \
	--tier ram:4M --tier ssd:4M --json >"$work/plan.json" || fail "--json failed"
"${NOPFS_PYTHON:-python3}" - "$work/plan.json" <<'PY' || fail "JSON checks"
import json, sys
plan = json.load(open(sys.argv[1]))
policies = {p["policy"]: p for p in plan["policies"]}
assert set(policies) == {"owner-first", "greedy", "naive"}, policies.keys()
for p in policies.values():
    assert abs(sum(p["read_shares"].values()) - 1) < 1e-9, p
assert policies["naive"]["pfs_bytes_vs_dataset"] == 4.0
assert policies["owner-first"]["pfs_bytes"] <= policies["greedy"]["pfs_bytes"]
assert len(plan["nodes"]) == 3
reads = sum(sum(n["reads"].values()) for n in plan["nodes"])
assert reads == policies["owner-first"]["reads"] == 1998 * 4, reads
for node in plan["nodes"]:
    for tier in node["tiers"]:
        assert tier["bytes"] <= tier["capacity"], tier
PY

# A list file with labels, --root defaulting to the list's directory.
printf 'cat/2.png\t5\ndog/3.JPEG\t7\n' >"$work/data/train.txt"
"$plan" --list "$work/data/train.txt" --print-catalog >"$work/catalog"
printf '0\t5\t8\tcat/2.png\n1\t7\t2\tdog/3.JPEG\n' >"$work/want"
cmp -s "$work/catalog" "$work/want" || fail "list catalog: $(cat "$work/catalog")"

[ "$failures" -eq 0 ] || exit 1
echo "nopfs-plan CLI: all checks passed"
