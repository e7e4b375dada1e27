#!/bin/bash
# The plugin's part of validation sets, as the test user: a step with
# --nopfs-val-dataset (or SLURM_NOPFS_VAL_DATASET) gets NOPFS_VAL_DATASET,
# resolved by srun as NOPFS_DATASET is, and its agents get the set at their
# start (their job report has "val"), from an srun and from the batch step
# (an absolute path) or the batch job's first srun (a relative one). A step
# without it gets none, whatever the user's environment holds: neither a
# NOPFS_VAL_DATASET of theirs nor a NOPFS_SPANK_VAL_DATASET alone reaches
# the tasks as a validation set. A later step with a set the running agents
# do not keep gets none either (the agents would serve their own set's
# samples for its paths), and says so.
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

mkdir -p "$WORK/data/a" "$WORK/val/b"
for i in 1 2 3 4; do
	head -c 4096 /dev/urandom >"$WORK/data/a/$i.JPEG"
	head -c 4096 /dev/urandom >"$WORK/val/b/$i.JPEG"
done
DATA=$(cd "$WORK/data" && pwd -P)
VAL=$(cd "$WORK/val" && pwd -P)
cat >"$WORK/show.sh" <<'EOF'
#!/bin/sh
# what the plugin gave this task, one variable a line (unset: "-")
echo "NOPFS_DATASET=${NOPFS_DATASET:--}"
echo "NOPFS_VAL_DATASET=${NOPFS_VAL_DATASET:--}"
echo "NOPFS_SPANK_VAL_DATASET=${NOPFS_SPANK_VAL_DATASET:--}"
EOF
chmod 755 "$WORK/show.sh"
chmod -R a+rX "$WORK"

fail=0
n=0
# expect_env WHAT VAL_DATASET CMD...: CMD (as the test user, in WORK, running
# show.sh) gives the task NOPFS_DATASET=$DATA and NOPFS_VAL_DATASET=VAL_DATASET
# ("-": none) and no NOPFS_SPANK_VAL_DATASET
expect_env() {
	local what=$1 want=$2 rc=0
	shift 2
	n=$((n + 1))
	(cd "$WORK" && timeout -k 5 120 "${RUNU[@]}" "$@" ./show.sh >"$WORK/out.$n" 2>"$WORK/err.$n") ||
		rc=$?
	if ((rc != 0)) || ! grep -qx "NOPFS_DATASET=$DATA" "$WORK/out.$n" ||
		! grep -qx "NOPFS_VAL_DATASET=$want" "$WORK/out.$n" ||
		! grep -qx "NOPFS_SPANK_VAL_DATASET=-" "$WORK/out.$n"; then
		echo "not ok $n - $what (exit $rc): NOPFS_VAL_DATASET should be '$want'; the task said:"
		sed 's/^/    /' "$WORK/out.$n" "$WORK/err.$n"
		fail=1
	else
		echo "ok $n - $what: NOPFS_VAL_DATASET=$want"
	fi
}

# expect_report_val WHAT FILE yes|no: the job report FILE has "val" (its
# agents were given the validation set) or not
expect_report_val() {
	local has
	has=$("$PYTHON" -c 'import json, sys; print("yes" if "val" in json.load(open(sys.argv[1])) else "no")' \
		"$2" 2>/dev/null) || has="no report"
	if [[ $has != "$3" ]]; then
		echo "not ok - $1: its job report $2 with a validation set: '$has', not '$3'"
		fail=1
	else
		echo "ok - $1: its agents were given a validation set: $3"
	fi
}

# srun: the validation set relative to srun's working directory, as the dataset
expect_env "srun --nopfs-val-dataset=val --nopfs-val-sampler=all" "$VAL" \
	srun -N1 -n1 --nopfs-dataset=data --nopfs-val-dataset=val --nopfs-val-sampler=all \
	--nopfs-report="$WORK/r1.json"
expect_report_val "srun --nopfs-val-dataset" "$WORK/r1.json" yes
expect_env "SLURM_NOPFS_VAL_DATASET=val" "$VAL" \
	env SLURM_NOPFS_VAL_DATASET=val srun -N1 -n1 --nopfs-dataset=data
expect_env "no validation set" - \
	srun -N1 -n1 --nopfs-dataset=data --nopfs-report="$WORK/r2.json"
expect_report_val "srun without --nopfs-val-dataset" "$WORK/r2.json" no
# what the user's environment holds is not the step's
expect_env "the user's NOPFS_VAL_DATASET" - \
	env NOPFS_VAL_DATASET="$VAL" srun -N1 -n1 --nopfs-dataset=data
expect_env "the user's NOPFS_SPANK_VAL_DATASET alone" - \
	env NOPFS_SPANK_VAL_DATASET="$VAL" srun -N1 -n1 --nopfs-dataset=data
expect_env "the user's NOPFS_SPANK_VAL_DATASET beside srun's" "$VAL" \
	env NOPFS_SPANK_VAL_DATASET=/elsewhere srun -N1 -n1 --nopfs-dataset=data \
	--nopfs-val-dataset="$WORK/val"

# expect_step WHAT NAME VAL_DATASET [MESSAGE]: the batch job's srun that wrote
# $WORK/NAME.out and NAME.err gave its task NOPFS_VAL_DATASET=VAL_DATASET
# ("-": none) and said MESSAGE (a pattern) on its standard error
expect_step() {
	n=$((n + 1))
	if grep -qx "NOPFS_DATASET=$DATA" "$WORK/$2.out" &&
		grep -qx "NOPFS_VAL_DATASET=$3" "$WORK/$2.out" &&
		grep -qx "NOPFS_SPANK_VAL_DATASET=-" "$WORK/$2.out" &&
		{ [[ -z ${4:-} ]] || grep -q "nopfs: .*$4" "$WORK/$2.err"; }; then
		echo "ok $n - $1: NOPFS_VAL_DATASET=$3${4:+, \"$4\"}"
	else
		echo "not ok $n - $1: NOPFS_VAL_DATASET should be '$3'${4:+ and it should say \"$4\"}:"
		sed 's/^/    /' "$WORK/$2.out" "$WORK/$2.err" 2>&1
		fail=1
	fi
}

# expect_before WHAT yes|no: the batch step started the agents before the
# job's first srun (its lock, /tmp/nopfs-JOB.srun, was there), or not
expect_before() {
	n=$((n + 1))
	if grep -qx "agents before the srun: $2" "$WORK/job.out"; then
		echo "ok $n - $1: the batch step started the agents: $2"
	else
		echo "not ok $n - $1: the batch step started the agents: not $2"
		fail=1
	fi
}

# batch_job OPTIONS STEPS: $WORK/job.sh with "#SBATCH OPTIONS", which says
# whether the agents run before its first srun, then STEPS; run as run_batch
batch_job() {
	cat >"$WORK/job.sh" <<JOB
#!/bin/bash
#SBATCH -N1 -n1 $1
if ls /tmp/nopfs-\$SLURM_JOB_ID.srun >/dev/null 2>&1; then
	echo "agents before the srun: yes"
else
	echo "agents before the srun: no"
fi
$2
JOB
	run_batch 120
	wait_gone "$job" || { echo "not ok - job $job did not end"; fail=1; }
}

# sbatch: an absolute path (here a link to the set) starts the agents in the
# batch step with the set as typed; the #SBATCH option reaches the sruns,
# which resolve it, and the agents' set is theirs. A later srun of the job
# with another set is not given it: the agents keep theirs.
mkdir -p "$WORK/val2/b"
head -c 4096 /dev/urandom >"$WORK/val2/b/1.JPEG"
ln -s val "$WORK/val-link"
chmod -R a+rX "$WORK/val2"
batch_job "--nopfs-dataset=$WORK/data --nopfs-val-dataset=$WORK/val-link --nopfs-val-sampler=all" \
	"srun ./show.sh >a1.out 2>a1.err
srun --nopfs-val-dataset=$WORK/val2 ./show.sh >a2.out 2>a2.err"
expect_before "sbatch --nopfs-val-dataset=DIR (absolute)" yes
expect_step "sbatch --nopfs-val-dataset=DIR (a link): its srun" a1 "$VAL"
expect_step "sbatch --nopfs-val-dataset=DIR: a later srun with another set" a2 - \
	"keeps no validation set .*/val2 (the agents take it when they start)"
expect_report_val "sbatch --nopfs-val-dataset=DIR (absolute)" "$WORK/nopfs-$job.json" yes
# a relative path: the first srun starts the agents, with the set it resolved
batch_job "--nopfs-dataset=$WORK/data --nopfs-val-dataset=val" "srun ./show.sh >b1.out 2>b1.err"
expect_before "sbatch --nopfs-val-dataset=val (relative)" no
expect_step "sbatch --nopfs-val-dataset=val: its first srun" b1 "$VAL"
expect_report_val "sbatch --nopfs-val-dataset=val (relative)" "$WORK/nopfs-$job.json" yes
# agents started without a validation set have none for a later srun's
batch_job "--nopfs-dataset=$WORK/data" "srun --nopfs-val-dataset=val ./show.sh >c1.out 2>c1.err"
expect_before "sbatch without a validation set" yes
expect_step "sbatch without a validation set: an srun with one" c1 - \
	"keeps no validation set .*/val (the agents take it when they start)"
expect_report_val "sbatch without a validation set" "$WORK/nopfs-$job.json" no
echo "$n steps checked"
exit "$fail"
