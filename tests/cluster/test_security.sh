#!/bin/bash
# Another user of the nodes cannot poison, read or stall a job. Before the
# test user's job starts, the second user of the test cluster
# (nopfs-other) plants on every node and on the submit host what the names
# of the next jobs would find: runtime and stage directories with a ready
# file, a FIFO and poisoned staged copies, links from the log and the SSD
# tier directory to a file of the victim, the submit host's launch lock,
# node reports and a job report in the (world-writable) report directory.
# The job must complete, every sample its ranks read must have the
# dataset's bytes, the victim's file must be untouched and the job must
# leave nothing of its own behind. Then: a step without nopfs options
# ignores a NOPFS_SPANK_TASKS of the user's environment; an SSD tier on a
# directory every node shares gives each node its own files; a second agent
# of a job on a node refuses to start; the epilog removes the SSD tier
# directories of killed agents; garbage sent to the agents' data-plane
# ports changes nothing.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
PLUGIN_NEEDS_TORCH=1
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
job_dataset 300 3
SSD=$NOPFS_CLUSTER_SSD
fail=0
not_ok() {
	echo "not ok - $*"
	fail=1
}

# The victim's own file, which the planted links point at.
"${RUNU[@]}" sh -c "printf ORIGINAL > '$WORK/victim.txt'"

# The next job ids: the other user's job shows where the counter is.
j0=$("$NC" run-other sbatch --parsable -D / -o /dev/null --wrap true)
j0=${j0%%;*}
wait_gone "$j0" || true
first=$((j0 + 1))

plant_node() { # NODE JOB
	# shellcheck disable=SC2016 # expanded by the node's shell
	"$NC" exec-node-other "$1" sh -c '
		J=$0 DATA=$1 SSD=$2 V=$3
		mkdir -m 777 /tmp/nopfs-$J && touch /tmp/nopfs-$J/ready && mkfifo /tmp/nopfs-$J/agent.sock.fifo
		mkfifo /tmp/nopfs-$J.ready
		mkdir -m 755 /dev/shm/nopfs-$J
		cd "$DATA" && for f in */*; do
			e=$(printf %s "$f" | sed "s|%|%25|g; s|/|%2F|g")
			for r in 0 1 2 3 4 5; do printf POISON >/dev/shm/nopfs-$J/p$r.$e; done
		done
		ln -s "$V" /tmp/nopfs-$J.log
		mkdir -m 777 "$SSD/nopfs-$J" && ln -s "$V" "$SSD/nopfs-$J/tier-1"
		for n in 0 1 2; do ln -s "$V" "$SSD/nopfs-$J.n$n"; done
	' "$2" "$WORK/data" "$SSD" "$WORK/victim.txt"
}
for job in "$first" $((first + 1)) $((first + 2)); do
	for node in n1 n2 n3; do plant_node "$node" "$job"; done
	"$NC" run-other sh -c "printf '1\n' >/tmp/nopfs-$job.srun"
	for name in "nopfs-$job.json.node-2" "nopfs-$job.json.x.node-5" "nopfs-$job.json"; do
		"$NC" run-other sh -c "printf '{\"job_id\": \"$job\", \"node\": 5}' >'$WORK/$name'"
	done
done

# 1. The job, with the SSD tier under the node's (sticky, shared) SSD base.
rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=3 --nopfs-epochs=2 \
	--nopfs-tiers="ram:4M,ssd:$SSD:60M" \
	"$PYTHON" train.py --data "$WORK/data" --seed 3 --epochs 2 --workers 1 \
	--out "$WORK/out-%r.txt" >"$WORK/srun.out" 2>"$WORK/srun.err") || rc=$?
cat "$WORK/srun.err"
((rc == 0)) || not_ok "the job failed (srun exit $rc)"
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/srun.err")
[[ $job == "$first" ]] || not_ok "the job is '$job', not job $first that the other user planted for"
grep -q "is not this user's (another user made it)" "$WORK/srun.err" ||
	not_ok "srun did not say that the planted launch lock is not the user's"
grep -q "^nopfs: job $first on 3 nodes" "$WORK/srun.err" ||
	not_ok "the job report is not the job's own (3 nodes)"
[[ $(cat "$WORK/victim.txt") == ORIGINAL ]] || not_ok "the victim's file was written through a planted link"
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/out-*.txt" \
	--samples 600 --report "$WORK/nopfs-$first.json" --pfs-bound 1.1 || fail=1
"$PYTHON" - "$WORK/nopfs-$first.json" <<'PY' || not_ok "the job report counts planted node reports"
import json, sys
report = json.load(open(sys.argv[1]))
nodes = sorted(n["node"] for n in report["per_node"])
assert nodes == [0, 1, 2], nodes
total = report["delivered_total"]["samples"]
assert total == 600 and report["delivered"]["pfs"]["samples"] < total, report["delivered"]
PY
wait_gone "$first" || not_ok "job $first did not end"
for node in n1 n2 n3; do
	# the job's own leftovers; the other user's plants are theirs
	left=$("$NC" exec-node "$node" find /tmp /dev/shm "$SSD" -maxdepth 1 -name "nopfs-$first*" \
		-user "$NOPFS_CLUSTER_USER" 2>/dev/null || true)
	[[ -z $left ]] || not_ok "node $node keeps files of job $first: $left"
	"$NC" exec-node "$node" pgrep -f "nopfs-agent --job-id $first " >/dev/null &&
		not_ok "node $node still runs an agent of job $first"
done

# 2. A step without nopfs options ignores NOPFS_SPANK_TASKS from the user's environment.
out=$(cd "$WORK" && timeout -k 5 60 "${RUNU[@]}" env "NOPFS_SPANK_TASKS=$((first + 1)):1:$WORK/data" \
	srun -N1 -n1 env 2>&1) || not_ok "a plain srun failed"
if grep -E '^(NOPFS_SOCKET=|LD_PRELOAD=.*libnopfs_preload)' <<<"$out"; then
	not_ok "a step without nopfs options was given nopfs by its environment"
fi

# 3. An SSD tier on a directory the nodes share: each node its own files.
mkdir -m 777 "$WORK/shared-ssd"
rc=0
(cd "$WORK" && timeout -k 5 300 "${RUNU[@]}" srun -N3 --ntasks-per-node=2 \
	--nopfs-dataset="$WORK/data" --nopfs-seed=5 --nopfs-epochs=2 \
	--nopfs-tiers="ram:4M,ssd:$WORK/shared-ssd:60M" \
	"$PYTHON" train.py --data "$WORK/data" --seed 5 --epochs 2 --workers 1 \
	--out "$WORK/shared-%r.txt" >"$WORK/shared.out" 2>"$WORK/shared.err") || rc=$?
((rc == 0)) || { cat "$WORK/shared.err"; not_ok "the shared-SSD job failed (srun exit $rc)"; }
job=$(sed -n 's/.*nopfs: job report: .*nopfs-\([0-9]*\)\.json$/\1/p' "$WORK/shared.err")
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/shared-*.txt" \
	--samples 600 --report "$WORK/nopfs-$job.json" --pfs-bound 1.1 || fail=1
wait_gone "$job" || true
[[ -z $(ls -A "$WORK/shared-ssd") ]] || not_ok "the shared SSD directory keeps $(ls -A "$WORK/shared-ssd")"

# 4. A second agent of a job on a node refuses to start.
cat >"$WORK/job.sh" <<EOF
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=1
srun -N3 -n3 --nopfs-dataset=$WORK/data --nopfs-tiers=ram:4M true
srun --overlap -w n1 -N1 -n1 $PLUGIN_BIN/nopfs-agent --job-id \$SLURM_JOB_ID \\
	--dataset $WORK/data --world-size 1 --ranks 0 --tier ram:4M \\
	--runtime-dir $WORK/second-run --stage-dir /dev/shm/second-\$SLURM_JOB_ID \\
	--report $WORK/second.json >$WORK/second-agent.out 2>&1
echo "second agent: exit \$?"
EOF
run_batch 120
grep -q "second agent: exit [1-9]" "$WORK/job.out" ||
	not_ok "a second agent of the job started on n1: $(cat "$WORK/second-agent.out" 2>/dev/null)"
grep -q "another agent of job .* runs on this node" "$WORK/second-agent.out" ||
	not_ok "the second agent did not say why: $(cat "$WORK/second-agent.out" 2>/dev/null)"

# 5. Agents killed (no clean-up of their own): the job epilog removes their SSD
# tier directories outside ssd_base too (listed in their runtime directories).
mkdir -m 777 "$WORK/listed-ssd"
cat >"$WORK/job.sh" <<EOF
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=1
srun -N3 -n3 --nopfs-dataset=$WORK/data --nopfs-tiers=ram:4M,ssd:$WORK/listed-ssd:20M true
ls $WORK/listed-ssd >$WORK/listed.txt
# (the test cluster's nodes share one PID namespace: the first pkill may take all)
srun --overlap -N3 -n3 sh -c 'pkill -KILL -u \$(id -u) -f "^[^ ]*/nopfs-agent --job-id \$SLURM_JOB_ID " || true'
EOF
run_batch 120
[[ $(wc -l <"$WORK/listed.txt") == 3 ]] || not_ok "the agents had not made 3 SSD tier directories: $(cat "$WORK/listed.txt")"
wait_gone "$job" || true
for _ in $(seq 1 50); do [[ -z $(ls -A "$WORK/listed-ssd") ]] && break; sleep 0.2; done
[[ -z $(ls -A "$WORK/listed-ssd") ]] ||
	not_ok "the epilog left the killed agents' SSD tier directories: $(ls -A "$WORK/listed-ssd")"

# 6. The other user sends the agents' data-plane ports garbage and opens
# connections while a job runs: the job completes with the right bytes. (And
# the agent step's supervisor inherited no descriptor of slurmstepd.)
cat >"$WORK/job.sh" <<EOF
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2
srun --nopfs-dataset=$WORK/data --nopfs-seed=9 --nopfs-epochs=2 --nopfs-tiers=ram:16M \\
	$PYTHON train.py --data $WORK/data --seed 9 --epochs 2 --workers 1 --sleep 0.05 \\
	--out $WORK/noise-%r.txt
EOF
chmod 755 "$WORK/job.sh"
job=$(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -o "$WORK/noise.out" "$WORK/job.sh")
job=${job%%;*}
if wait_agents "$job"; then
	# the agent step's supervisor (started from the batch step's slurmstepd) keeps
	# stdin, stdout and stderr only: nothing of slurmstepd's
	supervisors=0
	for companion in $(pgrep -f "srun --overlap --jobid=$job "); do
		supervisor=$(ps -o ppid= -p "$companion" | tr -d ' ')
		# srun's own child: its parent is the companion srun itself
		tr '\0' ' ' <"/proc/$supervisor/cmdline" 2>/dev/null | grep -q -- "--jobid=$job " && continue
		supervisors=$((supervisors + 1))
		fds=$(find "/proc/$supervisor/fd" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
		[[ $fds == "0 1 2 " ]] ||
			not_ok "the agent step's supervisor $supervisor holds descriptors $fds"
	done
	((supervisors == 1)) || not_ok "found $supervisors supervisors of job $job's agent step"
	for node in n1 n2 n3; do
		# the agents' listening TCP ports (as root: ss names the process)
		read -r -a ports <<<"$("$NC" exec-node "$node" ss -ltnpH | awk '/nopfs-agent/ {print $4}' | tr '\n' ' ')"
		((${#ports[@]})) || not_ok "no data-plane port of job $job's agent on $node"
		# shellcheck disable=SC2016 # expanded by the node's Python
		"$NC" exec-node-other "$node" "$PYTHON" -c '
import os, socket, sys
for address in sys.argv[1:]:
    host, port = address.rsplit(":", 1)
    host = "127.0.0.1" if host in ("*", "0.0.0.0", "[::]") else host.strip("[]")
    for _ in range(20):
        try:
            with socket.create_connection((host, int(port)), timeout=2) as s:
                s.sendall(os.urandom(65536))
        except OSError:
            pass
' "${ports[@]}" || true
	done
else
	not_ok "job $job's agents did not start"
fi
wait_gone "$job" || not_ok "job $job did not end"
"$PYTHON" "$SRCDIR/tests/cluster/check_job.py" --data "$WORK/data" --outs "$WORK/noise-*.txt" \
	--samples 600 --report "$WORK/nopfs-$job.json" --pfs-bound 1.1 || fail=1

# 7. salloc, srun inside, with another user's file where the job's launch
# lock goes: the srun takes a private lock beside it, and salloc at its end
# finds that one (not the planted file), prints the report and removes it.
j=$("$NC" run-other sbatch --parsable -D / -o /dev/null --wrap true)
j=$((${j%%;*} + 1))
"$NC" run-other sh -c "printf '1\nplanted\nPLANTED-LINE\n' >/tmp/nopfs-$j.srun"
(cd "$WORK" && timeout -k 5 120 "${RUNU[@]}" salloc -N2 --ntasks-per-node=1 \
	--nopfs-dataset="$WORK/data" --nopfs-epochs=1 --nopfs-report="$WORK/salloc.json" \
	srun "$PYTHON" train.py --data "$WORK/data" --epochs 1 --workers 1 --out "$WORK/salloc-%r.txt" \
	>"$WORK/salloc.out" 2>&1) || not_ok "the salloc job failed: $(cat "$WORK/salloc.out")"
salloc_job=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$WORK/salloc.out")
[[ $salloc_job == "$j" ]] || not_ok "the salloc job is '$salloc_job', not job $j that the other user planted for"
grep -q "^nopfs: job report: $WORK/salloc.json" "$WORK/salloc.out" || not_ok "salloc printed no job report"
grep -q "PLANTED-LINE" "$WORK/salloc.out" && not_ok "salloc showed the planted file's lines"
left=$(find /tmp -maxdepth 1 -name "nopfs-$j.srun*" -user "$NOPFS_CLUSTER_USER" 2>/dev/null)
[[ -z $left ]] || not_ok "salloc left its srun's private lock: $left"
rm -f "/tmp/nopfs-$j.srun"

# The other user's plants go (as root: they are not the test user's).
for node in n1 n2 n3; do
	"$NC" exec-node "$node" sh -c "rm -rf /tmp/nopfs-$first* /tmp/nopfs-$((first + 1))* \
		/tmp/nopfs-$((first + 2))* /dev/shm/nopfs-$first* /dev/shm/nopfs-$((first + 1))* \
		/dev/shm/nopfs-$((first + 2))* $SSD/nopfs-$first* $SSD/nopfs-$((first + 1))* \
		$SSD/nopfs-$((first + 2))*" || true
done
rm -f /tmp/nopfs-"$first".srun /tmp/nopfs-$((first + 1)).srun /tmp/nopfs-$((first + 2)).srun
((fail == 0)) && echo "ok - another user's plants neither poisoned nor stalled the job"
exit "$fail"
