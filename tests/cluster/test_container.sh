#!/bin/bash
# Containers: the unmodified PyTorch job (3 nodes x 2 ranks, 3 epochs) whose
# tasks each run in their own mount namespace with their own root filesystem
# (tests/cluster/container_task.sh: a user namespace, tmpfs /tmp and /dev/shm
# of their own, chroot), with only the paths docs/containers.md lists bound
# in. Every byte read is right, every sample read was delivered by the agents
# (the job report counts them: none read around nopfs), and the PFS is read
# about once.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 1500 15
"${RUNU[@]}" unshare -Urm true 2>/dev/null || { echo "SKIP: no user namespaces for the test user"; exit 77; }

# The root file system: empty mount points, the merged-/usr links, a marker.
root=$WORK/rootfs
mkdir -p "$root"/{usr,etc,proc,sys,dev,tmp}
for link in bin sbin lib lib64; do
	[[ -e /usr/$link ]] && ln -s "usr/$link" "$root/$link"
done
touch "$root/nopfs-container-root"
cp "$SRCDIR/tests/cluster/container_task.sh" "$WORK/container_task.sh"
chmod -R a+rX "$WORK"

rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=9 --nopfs-epochs=3 --nopfs-tiers=ram:60M \
	unshare -Urm --propagation private bash "$WORK/container_task.sh" "$root" \
	"$PYTHON" train.py --data "$WORK/data" --seed 9 --epochs 3 --workers 2 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") || rc=$?
cat "$WORK/srun.err"
((rc == 0)) || { echo "not ok - srun exited $rc"; exit 1; }
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ -n $job ]] || { echo "not ok - srun printed no job report"; exit 1; }
# The tasks ran in the root: their output went through the bound working directory only.
[[ ! -e $root$WORK ]] || { echo "not ok - the working directory leaked into the root"; exit 1; }
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4500 --report "$WORK/nopfs-$job.json" --pfs-bound 1.02
wait_gone "$job" || { echo "not ok - job $job did not end"; exit 1; }
nothing_left "$job"
echo "ok - containerized tasks of job $job read through nopfs"

# The same container without the nopfs paths bound: the tasks read the PFS
# (right bytes, nothing delivered by the agents), so the check above means something.
rm -f "$WORK"/out-*.txt
rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" env CONTAINER_NOPFS_BINDS=no srun -N1 -n2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=9 --nopfs-epochs=1 --nopfs-tiers=ram:60M \
	unshare -Urm --propagation private bash "$WORK/container_task.sh" "$root" \
	"$PYTHON" train.py --data "$WORK/data" --seed 9 --epochs 1 --workers 1 \
	--out "$WORK/out-%r.txt" >"$WORK/srun2.out" 2>"$WORK/srun2.err") || rc=$?
((rc == 0)) || { cat "$WORK/srun2.err"; echo "not ok - srun without binds exited $rc"; exit 1; }
job2=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun2.err")
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 1500
"$PYTHON" -c 'import json, sys
job = json.load(open(sys.argv[1]))
assert job["delivered_total"]["samples"] == 0, job["delivered_total"]' "$WORK/nopfs-$job2.json" ||
	{ echo "not ok - the agents delivered samples to a container without the nopfs paths"; exit 1; }
wait_gone "$job2" || { echo "not ok - job $job2 did not end"; exit 1; }
echo "ok - without the nopfs paths bound, the containerized tasks of job $job2 read the PFS"
