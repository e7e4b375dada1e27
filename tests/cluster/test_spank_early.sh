#!/bin/bash
# --nopfs-start=early on the real test cluster: the unmodified PyTorch
# script (3 nodes x 2 ranks, 2 workers each, 4 epochs) starts before the
# agents serve. Each task's first command notes whether its agent was ready
# (it must not have been on any node: the tasks start once the agent has
# made its directories, seconds before it serves) and, through the
# interposer, checksums a file of the dataset's root that is no sample
# (notes.txt): read from the PFS, since the agent does not serve yet, with
# the right bytes. The interposer's debug output counts the samples the
# tasks read from the PFS themselves until the agents served. Every byte
# must be right; the agents' report and the tasks' own reads must account
# for every sample read; the ranks' listings of the dataset must all have
# been answered from the agents' metadata (none passed to the PFS); and
# nothing of the job may be left on any node.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 1200 12
head -c 5000 /dev/urandom >"$WORK/data/notes.txt"
chmod a+r "$WORK/data/notes.txt"
notes_sum=$(sha256sum <"$WORK/data/notes.txt" | cut -d' ' -f1)

# The task's first command: was its agent ready when it started? What does
# the dataset's notes.txt read as through the interposer? Then the training,
# then a wait for the agent to serve, if it does not yet.
cat >"$WORK/started.sh" <<'SH'
#!/bin/sh
if [ -e "$(dirname "$NOPFS_SOCKET")/ready" ]; then state=ready; else state=starting; fi
sum=$(sha256sum "$WORK_DIR/data/notes.txt" | cut -d' ' -f1)
echo "$state ${NOPFS_META_WAIT:-none} $sum" >"$WORK_DIR/started-$SLURM_PROCID"
"$@" || exit
# a short job: stay until the agent serves (as a longer one would), so that it reports
for _ in $(seq 1 600); do
	[ -e "$(dirname "$NOPFS_SOCKET")/ready" ] && exit 0
	sleep 0.2
done
echo "the agent did not serve within 120 s" >&2
exit 1
SH
chmod 755 "$WORK/started.sh"

rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" env NOPFS_DEBUG=1 WORK_DIR="$WORK" srun -N3 \
	--ntasks-per-node=2 --nopfs-dataset="$WORK/data" --nopfs-seed=7 --nopfs-epochs=4 \
	--nopfs-tiers=ram:60M --nopfs-start=early "$WORK/started.sh" \
	"$PYTHON" train.py --data "$WORK/data" --seed 7 --epochs 4 --workers 2 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") || rc=$?
grep -v '^nopfs-preload' "$WORK/srun.err" || true
((rc == 0)) || { echo "not ok - srun exited $rc"; tail -n 40 "$WORK/srun.err"; exit 1; }
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ -n $job ]] || { echo "not ok - srun printed no job report"; exit 1; }

fails=0
starting=0
for rank in 0 1 2 3 4 5; do
	read -r state wait sum <"$WORK/started-$rank" || state=missing
	[[ $state == starting ]] && starting=$((starting + 1))
	if [[ $wait != 60 ]]; then
		echo "not ok - rank $rank: NOPFS_META_WAIT is '$wait', not the ready_timeout 60"
		fails=1
	fi
	if [[ $sum != "$notes_sum" ]]; then
		echo "not ok - rank $rank: notes.txt read as $sum, not $notes_sum"
		fails=1
	fi
done
if ((starting == 6)); then
	echo "ok - all 6 tasks started before their agent was ready and read notes.txt right"
else
	echo "not ok - $((6 - starting)) of 6 tasks started after their agent was ready"
	fails=1
fi
early_lines() {
	grep -E '^nopfs-preload\[[0-9]+\]: reading .* from the PFS: the agent is not serving yet$' \
		"$WORK/srun.err" || true
}
notes=$(early_lines | grep -c '/notes\.txt from the PFS' || true)
own=$(early_lines | grep -vc '/notes\.txt from the PFS' || true)
other=$(own_pfs_reads "$WORK/srun.err")
echo "# before their agent served the tasks read notes.txt $notes times and $own samples" \
	"from the PFS; $other samples after"
if ((notes != 6)); then
	echo "not ok - notes.txt was read from the PFS $notes times before the agents served, not 6"
	fails=1
fi
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 4800 --report "$WORK/nopfs-$job.json" --own-reads $((own + other)) \
	--pfs-bound 1.5 || fails=1
"$PYTHON" - "$WORK/nopfs-$job.json" <<'PY' || fails=1
import json, sys
meta = json.load(open(sys.argv[1]))["metadata"]
ranks = meta["per_rank"]
assert sorted(ranks) == [str(r) for r in range(6)], f"metadata counts of ranks {sorted(ranks)}"
assert all(v["served"] > 0 and v["passed"] == 0 for v in ranks.values()), ranks
print(f"ok - every rank's listing of the dataset was served from the agents' metadata "
      f"({meta['served']} calls), none passed to the PFS")
PY
wait_gone "$job" || { echo "not ok - job $job did not end"; fails=1; }
nothing_left "$job" || fails=1
((fails == 0))
