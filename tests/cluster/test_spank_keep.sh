#!/bin/bash
# Kept caches, root's side, on the real cluster (no agent involved; jobs of
# the test user without nopfs options): with plugstack cache_base,
#  1. the job prolog makes the job user's directory on each node of the job
#     (0700, the user's);
#  2. the job epilog removes the ending job's orphaned new data
#     (data.JOB.*), caches not used for longer than cache_max_age, then the
#     least recently used while all take more than cache_limit, never one
#     that a running job holds (flock), and says so in slurmd's log; once
#     that job is gone, its cache goes too;
#  3. a cache_base others may write to is refused, in the prolog and the
#     epilog, and a user's directory of the wrong mode is left as it is,
#     each with a line in slurmd's log.
# Exit: 0 pass, 1 fail, 77 skip.
# shellcheck disable=SC2317 # the helpers run through check() and the trap
set -euo pipefail
BASE=/tmp/nopfs-keep-test # each node's own /tmp
PLUGIN_EXTRA_ARGS="cache_base=$BASE cache_max_age=1d cache_limit=1M"
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"
fail=0
LOGS=$NOPFS_CLUSTER_STATE/log
uid=$(cd "$WORK" && "${RUNU[@]}" id -u)
D=$BASE/$uid
OLD=00000000000000a1
BIG=00000000000000b2
NEW=00000000000000c3
HELD=00000000000000d4

cache_base_setup "$BASE"

# check STATEMENT CMD...: "ok - STATEMENT" when CMD succeeds, else "not ok"
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok - $what"
	else
		echo "not ok - $what"
		fail=1
	fi
}
# on NODE CMD...: CMD as root on NODE
on() { "$NC" exec-node "$@"; }
# run_job SBATCH-ARGS... -- SCRIPT: SCRIPT as the test user in a job, until
# its epilogs are done; sets job
run_job() {
	local args=()
	while [[ $1 != -- ]]; do
		args+=("$1")
		shift
	done
	shift
	job=$(cd "$WORK" && timeout -k 5 60 "${RUNU[@]}" sbatch --parsable --wait \
		-o "$WORK/job.out" "${args[@]}" --wrap "$1") || true
	job=${job%%;*}
	check "job $job ended" wait_gone "$job"
}
# logged NODE TEXT: slurmd's log on NODE has TEXT (a fixed string) within 10 s
logged() {
	for _ in $(seq 1 50); do
		grep -qF -- "$2" "$LOGS/slurmd.$1.log" && return 0
		sleep 0.2
	done
	return 1
}
# held NODE DIR: a process holds DIR's flock on NODE (within 20 s)
held() {
	for _ in $(seq 1 100); do
		on "$1" test -d "$2" && ! on "$1" flock -n "$2" true && return 0
		sleep 0.2
	done
	return 1
}
# plant.sh DIR KEY SIZE AGE ...: caches in DIR, each "data" of SIZE bytes
# and a manifest last used AGE (touch -d), as the test user's agents leave them
cat >"$WORK/plant.sh" <<'PLANT'
#!/bin/sh
d=$1
shift
while [ $# -ge 3 ]; do
	mkdir "$d/$1" && head -c "$2" /dev/zero >"$d/$1/data" && echo m >"$d/$1/manifest" &&
		touch -d "$3" "$d/$1/manifest" || exit 1
	shift 3
done
PLANT
chmod 755 "$WORK/plant.sh"

# 1. the prolog makes the user's directory on every node of the job
run_job -N3 -- "srun true"
for node in n1 n2 n3; do
	check "the prolog made $D on $node, the user's, 0700" \
		test "$(on "$node" stat -c '%u %a %F' "$D" 2>&1)" = "$uid 700 directory"
done
check "slurmd's log on n1 says so" logged n1 "made $D, uid $uid's directory of kept caches"

# 2. the limits: a job holds an old cache while another plants caches and ends
holder=$(cd "$WORK" && "${RUNU[@]}" sbatch --parsable -w n1 -o /dev/null --wrap \
	"$WORK/plant.sh $D $HELD 10000 '3 days ago' && exec flock $D/$HELD sleep 120")
holder=${holder%%;*}
check "job $holder holds $D/$HELD" held n1 "$D/$HELD"
run_job -w n1 -- "$WORK/plant.sh $D $OLD 10000 '2 days ago' $BIG 800000 '2 hours ago' \
$NEW 800000 '1 minute ago' && head -c 5000 /dev/zero >$D/$NEW/data.\$SLURM_JOB_ID.0123abcd && \
head -c 5000 /dev/zero >$D/$NEW/data.999999.0123abcd"
planter=$job
echo "# left on n1: $(on n1 ls "$D" | tr '\n' ' ')"
check "job $planter's epilog removed the cache unused for 2 days (cache_max_age=1d)" \
	on n1 test ! -e "$D/$OLD"
check "and the least recently used one while all took more than cache_limit=1M" \
	on n1 test ! -e "$D/$BIG"
check "a cache a running job holds stays, however old" on n1 test -d "$D/$HELD"
check "the most recently used cache stays" on n1 test -s "$D/$NEW/data"
check "the ending job's orphaned new data went" on n1 test ! -e "$D/$NEW/data.$planter.0123abcd"
check "another job's stays" on n1 test -e "$D/$NEW/data.999999.0123abcd"
for line in "kept cache $D/$OLD removed: not used for" \
	"kept cache $D/$BIG removed: the least recently used" \
	"job $planter: removed $D/$NEW/data.$planter.0123abcd, new data its killed agent left"; do
	check "slurmd's log on n1: $line" logged n1 "$line"
done
"$NC" run scancel "$holder"
check "job $holder ended" wait_gone "$holder"
check "once its job is gone, the cache it held goes" on n1 test ! -e "$D/$HELD"

# 3. a base others may write to, and a user's directory of the wrong mode
on n2 chmod 0777 "$BASE"
on n2 rm -rf "$D"
run_job -w n2 -- "true"
check "nothing is made in a base others may write to" on n2 test ! -e "$D"
check "slurmd's log on n2 names the base and its mode" logged n2 \
	"job $job: plugstack.conf cache_base=$BASE may be written by others than root (mode 0777)"
on n2 chmod 0755 "$BASE"
on n3 chmod 0755 "$D"
run_job -w n3 -- "true"
check "a user's directory of mode 0755 is left as it is" \
	test "$(on n3 stat -c '%a' "$D")" = 755
check "slurmd's log on n3 names the directory and its mode" logged n3 \
	"job $job: $D has mode 0755, not 0700: left as it is"
exit "$fail"
