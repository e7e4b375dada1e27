#!/bin/bash
# What an admin installs is what runs: this build's "make install DESTDIR="
# onto the cluster's PFS, the cluster's plugstack.conf naming the installed
# plugin (nopfs-cluster up with NOPFS_INSTALLED_PREFIX), and one srun with
# --nopfs-dataset of the unmodified PyTorch script (3 nodes x 2 ranks, 2
# epochs). The agents run the installed nopfs-agent, the tasks get the
# installed interposer, every byte is right, every node reports, and
# nothing of the job is left on any node.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
PLUGIN_INSTALLED=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
failed=0
ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failed=1
}

plugin=$(awk '$1 == "optional" { print $2 }' "$NOPFS_CLUSTER_STATE/etc/plugstack.conf")
installed=$(find "$NOPFS_INSTALLED_PREFIX" -name spank_nopfs.so -type f)
if [[ -n $installed ]] && cmp -s "$plugin" "$installed" &&
	grep -q "bindir=$NOPFS_INSTALLED_PREFIX/bin " "$NOPFS_CLUSTER_STATE/etc/plugstack.conf"; then
	ok "plugstack.conf runs the installed plugin ($installed) with its bindir"
else
	cat "$NOPFS_CLUSTER_STATE/etc/plugstack.conf"
	not_ok "plugstack.conf does not run the installed plugin '$installed'"
fi
preload=$(find "$NOPFS_INSTALLED_PREFIX" -name libnopfs_preload.so -type f)

job_dataset 600 6
# Each rank prints the interposer it was given, then runs the script.
cat >"$WORK/run.sh" <<'RUN'
#!/bin/bash
echo "rank $SLURM_PROCID LD_PRELOAD=$LD_PRELOAD"
exec "$@"
RUN
chmod 755 "$WORK/run.sh"
rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=7 --nopfs-epochs=2 --nopfs-tiers=ram:40M \
	./run.sh "$PYTHON" train.py --data "$WORK/data" --seed 7 --epochs 2 --workers 2 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") &
srun_pid=$!

# While it runs: each node's agent is the installed program.
job=
for _ in $(seq 1 300); do
	job=$("$NC" run squeue -h -u nopfs -o %i 2>/dev/null | head -n 1) || true
	[[ -n $job ]] && break
	sleep 0.2
done
if [[ -n $job ]] && wait_agents "$job"; then
	for node in n1 n2 n3; do
		pid=$(node_agent "$node" "$job" | head -n 1)
		exe=$("$NC" exec-node "$node" readlink "/proc/$pid/exe" 2>/dev/null) || exe=
		if [[ -n $pid && $exe == "$NOPFS_INSTALLED_PREFIX/bin/nopfs-agent" ]]; then
			ok "$node runs the installed agent"
		else
			not_ok "$node's agent of job $job (pid '$pid') runs '$exe'"
		fi
	done
else
	not_ok "no running agents of the job were seen"
fi
wait "$srun_pid" || rc=$?
cat "$WORK/srun.err"
((rc == 0)) || { echo "not ok - srun exited $rc"; exit 1; }
tasks=$(grep -c "LD_PRELOAD=$preload\( \|$\)" "$WORK/srun.out") || true
if ((tasks == 6)); then
	ok "the 6 tasks were given the installed interposer $preload"
else
	grep 'LD_PRELOAD' "$WORK/srun.out" || true
	not_ok "$tasks of 6 tasks were given the installed interposer"
fi
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ -n $job ]] || { echo "not ok - srun printed no job report"; exit 1; }

wait_gone "$job" || not_ok "job $job did not end"
nothing_left "$job" || failed=1
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 1200 --report "$WORK/nopfs-$job.json" || failed=1
exit "$failed"
