#!/bin/bash
# Faults of the PFS on the real test cluster, with the emulated PFS: the job
# ends as it would without nopfs and no rank gets a byte the file never had.
#
# 1. EIO: opens of the files named eio-* fail with EIO on the PFS. An
#    unchanged PyTorch script (train_script.py --errors: a file that cannot
#    be read prints its error instead of its digest) runs 2 epochs on 3
#    nodes x 2 ranks, plain and under --nopfs-dataset: every rank prints the
#    same lines both ways, those files' errors included (error:EIO), and the
#    job report counts the agents' failed reads and says so.
# 2. Files changed during a job: once every rank has its first batch, one
#    file is truncated, one deleted and one rewritten with other bytes of
#    the same size. RAM tiers of 3 MB a node hold about a third of the
#    dataset: the rest is read from the PFS again in each of the 10 epochs
#    (staged at most 256 reads ahead of a rank, which reads about 410).
#    Each changed file reaches a rank either as it was (the agents read it
#    before) or as it is now (ENOENT as a plain read gets it); every other
#    sample is the file's bytes.
# After each job nothing of it is left on any node.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
export NOPFS_CLUSTER_PFS_EMULATE="--fail *eio-*"
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

job_dataset 240 3
# one file per class that the PFS never gives (opens and creates fail with
# EIO: made under another name)
for class in "$WORK"/data/*/; do
	cp "$(find "$class" -name '*.JPEG' | sort | head -n 1)" "${class}new.JPEG"
	mv "${class}new.JPEG" "${class}eio-0.JPEG"
done
chmod -R a+rX "$WORK/data"

fails=0
ok() { echo "ok - $1"; }
not_ok() {
	echo "not ok - $1"
	fails=$((fails + 1))
}

# digests OUT: "INDEX PATH SHA256" of the dataset as ImageFolder orders it
digests() {
	"$PYTHON" - "$WORK/data" >"$1" <<'PY'
import hashlib, sys
from torchvision.datasets import ImageFolder
folder = ImageFolder(sys.argv[1], loader=lambda p: p, is_valid_file=lambda p: p.endswith(".JPEG"))
for index, (path, _) in enumerate(folder.samples):
    try:
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    except OSError as error:
        digest = f"error:{error.errno}"
    print(index, path, digest)
PY
}

# train NAME [SRUN OPTIONS...]: the script on 3 nodes x 2 ranks, EPOCHS (2);
# its lines, all ranks, sorted, in $WORK/NAME.lines
train() {
	local name=$1
	shift
	(cd "$WORK" && timeout -k 5 240 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 -J "$name" "$@" \
		"$PYTHON" "$WORK/train.py" --data "$WORK/data" --epochs "${EPOCHS:-2}" --errors --workers 2 \
		--sleep "${TRAIN_SLEEP:-0}" --out "$WORK/$name.%r") >"$WORK/$name.log" 2>&1 || {
		cat "$WORK/$name.log"
		return 1
	}
	cat "$WORK/$name".? | sort >"$WORK/$name.lines"
}

nopfs_options=(--nopfs-dataset="$WORK/data" --nopfs-epochs=2 --nopfs-seed=0)

# --- 1. EIO ---------------------------------------------------------------------
if train plain && train eio "${nopfs_options[@]}" --nopfs-report="$WORK/eio.json"; then
	eio_lines=$(grep -c ' error:EIO$' "$WORK/plain.lines" || true)
	if ((eio_lines == 6)) && cmp -s "$WORK/plain.lines" "$WORK/eio.lines"; then
		ok "EIO: every rank read the same as plain PyTorch ($(wc -l <"$WORK/eio.lines") lines, $eio_lines of them error:EIO)"
	else
		not_ok "EIO: plain and nopfs differ ($eio_lines error:EIO lines plain): $(diff "$WORK/plain.lines" "$WORK/eio.lines" | head -n 8)"
	fi
	job=$(report_job "$WORK/eio.json")
	if failed=$("$PYTHON" - "$WORK/eio.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
failed = sum(node["pfs"]["failed_samples"] for node in report["per_node"])
said = [p for p in report["problems"] if "the PFS did not give" in p]
assert failed >= 3 and said, (failed, report["problems"])
print(failed)
PY
	); then
		ok "EIO: the report counts $failed failed PFS reads of the agents and says so"
	else
		not_ok "EIO: the report does not say: $failed"
		sed 's/^/#   /' "$WORK/eio.log"
	fi
	[[ -z $job ]] || { wait_gone "$job" && nothing_left "$job" || fails=$((fails + 1)); }
else
	not_ok "EIO: a run failed"
fi

# --- 2. files changed during the job -----------------------------------------------
digests "$WORK/before.txt"
mapfile -t victims < <(awk '$2 !~ /eio-/ { print $2 }' "$WORK/before.txt" | sed -n '20p;120p;200p')
EPOCHS=10 TRAIN_SLEEP=0.3 train changed "${nopfs_options[@]/--nopfs-epochs=2/--nopfs-epochs=10}" --nopfs-tiers=ram:3M --nopfs-report="$WORK/changed.json" &
trainer=$!
job=
for _ in $(seq 1 300); do
	job=$("$NC" run squeue -h -n changed -o %i 2>/dev/null | head -n 1) && [[ -n $job ]] && break
	sleep 0.2
done
# after every rank has listed the dataset (its first batch is out): a rank
# listing later might see a directory changed since the scan
listed=0
if [[ -n $job ]] && wait_agents "$job"; then
	for _ in $(seq 1 300); do
		listed=$(find "$WORK" -maxdepth 1 -name 'changed.?' -size +0 | wc -l)
		((listed == 6)) && break
		sleep 0.1
	done
	head -c 1000 "${victims[0]}" >"$WORK/cut" && cat "$WORK/cut" >"${victims[0]}"
	rm -f "${victims[1]}"
	size=$(stat -c %s "${victims[2]}")
	head -c "$size" /dev/urandom >"${victims[2]}"
else
	not_ok "changed: the job's agents were not ready (job '$job')"
	"$NC" run squeue -a | sed 's/^/#   /' 
fi
if wait "$trainer"; then
	digests "$WORK/after.txt"
	if verdict=$("$PYTHON" - "$WORK/before.txt" "$WORK/after.txt" "$WORK/changed.lines" <<'PY'
import errno, sys
before = {int(i): (p, d) for i, p, d in (l.split() for l in open(sys.argv[1]))}
after = {p: d for _, p, d in (l.split() for l in open(sys.argv[2]))}
gone = f"error:{errno.ENOENT}"
bad, changed, changed_reads = [], 0, 0
for line in open(sys.argv[3]):
    epoch, index, label, got = line.split()
    path, was = before[int(index)]
    now = after.get(path, gone)
    if was.startswith("error:"):
        allowed = {"error:EIO"}
    else:
        allowed = {was, "error:ENOENT" if now == gone else now}
    if got not in allowed:
        bad.append(f"{path}: {got}")
    changed += got != was and not was.startswith("error:")
    changed_reads += now != was
assert not bad, bad[:5]
print(f"of {changed_reads} reads of the changed files, {changed} saw the change, the others "
      "the bytes read before")
PY
	); then
		ok "changed: no rank got a byte the file never had; $verdict"
	else
		not_ok "changed: $verdict"
	fi
	wait_gone "$job" && nothing_left "$job" || fails=$((fails + 1))
else
	not_ok "changed: the job failed"
fi
echo "# $fails failed"
((fails == 0))
