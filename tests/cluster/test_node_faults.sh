#!/bin/bash
# Full and vanishing node-local storage under a running job, on the real
# test cluster as the job user: one 3-node x 2-rank job, 3 epochs, with a
# RAM tier of 4 MB and an SSD tier of 40 MB a node (the dataset is ~60 MB),
#  - n2: its SSD base is a 24 MiB file system, already 8 MiB used by another
#    process: its SSD tier shrinks to fit, with a warning, instead of failing;
#  - n3: its SSD tier's directory is removed once every rank has read;
#  - n1: its /dev/shm (the staged copies) is full from then on (its size
#    limit lowered to what is in use and 128 KiB more, about a sample).
# The script loads in its own process (--workers 0): PyTorch's DataLoader
# workers need /dev/shm themselves, with or without nopfs.
# The job completes, every byte every rank read is the file's, the job report
# has every node's report, and afterwards nothing of the job is left on any
# node. The node's /tmp full and a memory limit below the RAM tier are
# tests/agent/system/test_tmp_full.py and test_memory_limit.py: a node's
# /tmp here is the host's disk, and the test cluster's Slurm has no cgroup
# task plugin.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
SSD=$NOPFS_CLUSTER_SSD
job_dataset 600 6
fails=0
shm_limited=0
ssd_mounted=0

restore() {
	((shm_limited == 0)) || "$NC" exec-node n1 mount -o remount,size=50% /dev/shm || true
	if ((ssd_mounted)); then
		"$NC" exec-node n2 sh -c "rm -f '$SSD/filler'; umount -l '$SSD'" || true
	fi
}
trap 'rc=$?; restore; (exit $rc); cluster_cleanup' EXIT

# n2's SSD base: a small file system, partly taken
"$NC" exec-node n2 mount -t tmpfs -o size=24M,mode=1777 tmpfs "$SSD"
ssd_mounted=1
"$NC" exec-node n2 dd if=/dev/zero of="$SSD/filler" bs=1M count=8 status=none

cat >"$WORK/faults.sh" <<JOB
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2 --nopfs-dataset=$WORK/data --nopfs-epochs=3 --nopfs-tiers=ram:4M,ssd:$SSD:40M
srun $PYTHON $WORK/train.py --data $WORK/data --epochs 3 --workers 0 --batch-size 4 --sleep 0.1 --out $WORK/faults-%r.txt
echo "srun exit \$?"
JOB
job=$(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -o "$WORK/faults.out" "$WORK/faults.sh")
if wait_agents "$job" && wait_read faults 6 8; then
	# shellcheck disable=SC2016 # expanded by the node's shell
	gone=$("$NC" exec-node n3 sh -c 'ls -d "$0"/nopfs-"$1"* && rm -rf "$0"/nopfs-"$1"*' "$SSD" "$job")
	if [[ -n $gone ]]; then
		echo "# removed on n3: $gone"
	else
		echo "not ok - n3 has no SSD tier directory of job $job"
		fails=$((fails + 1))
	fi
	# (staging goes on meanwhile: tmpfs refuses a size below what is in use, try again)
	for _ in $(seq 1 20); do
		used=$("$NC" exec-node n1 df --output=used -k /dev/shm | tail -n 1 | tr -d ' ')
		if "$NC" exec-node n1 mount -o remount,size=$((used + 128))k /dev/shm 2>/dev/null; then
			shm_limited=1
			break
		fi
	done
	if ((shm_limited)); then
		echo "# n1's /dev/shm limited to the $used KiB in use and 128 KiB more"
	else
		echo "not ok - cannot limit n1's /dev/shm to what it uses"
		fails=$((fails + 1))
	fi
else
	echo "not ok - the agents of job $job never got ready"
	fails=$((fails + 1))
fi
if ! wait_gone "$job"; then
	echo "not ok - job $job did not end"
	fails=$((fails + 1))
fi
restore
shm_limited=0
ssd_mounted=0
cat "$WORK/faults.out"
if grep -q "srun exit 0" "$WORK/faults.out"; then
	echo "ok - the job completed"
else
	echo "not ok - the job failed"
	fails=$((fails + 1))
fi
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/faults-*.txt" \
	--samples 1800 || fails=$((fails + 1))
wait_report "$WORK/nopfs-$job.json" 10 || true
if summary=$("$PYTHON" - "$WORK/nopfs-$job.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["nodes_reported"] == [0, 1, 2], r["nodes_reported"]
node = {n["node"]: n for n in r["per_node"]}
ssd = [t for t in node[1]["tiers"] if t["kind"] == "ssd"][0]
assert ssd["capacity"] <= 16 * 2**20 * 0.96, f"n2's SSD tier did not shrink: {ssd}"
delivered = r["delivered_total"]["samples"]
# a copy that cannot be staged in a full /dev/shm is served on request
asked = [sum(v["samples"] for v in node[n]["delivered_on_request"].values()) for n in range(3)]
print(f"n2's SSD tier shrank to {ssd['capacity'] / 2**20:.1f} MiB; samples served on request "
      f"by n1, n2, n3: {asked}; the agents delivered {delivered} of the 1800 samples; "
      f"PFS {r['vs_dataset']:.2f} x S")
PY
); then
	echo "ok - $summary"
else
	echo "not ok - the job report: $summary"
	fails=$((fails + 1))
fi
if nothing_left "$job"; then
	echo "ok - nothing of job $job is left on the nodes"
else
	fails=$((fails + 1))
fi
echo "# $fails failed"
((fails == 0))
