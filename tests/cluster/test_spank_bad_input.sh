#!/bin/bash
# Bad input to the plugin, as the test user on the real cluster: each case
# must fail fast (before any job or step exists), exit non-zero, and say
# what is wrong with a message of its own, prefixed "nopfs:".
# Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=plugin_test_lib.sh
. "$(dirname "$0")/plugin_test_lib.sh"

mkdir -p "$WORK/data/a" "$WORK/val/a" "$WORK/locked"
echo x >"$WORK/data/a/1.JPEG"
echo x >"$WORK/val/a/1.JPEG"
ln -s data "$WORK/data-link"
echo x >"$WORK/file"
chmod -R a+rX "$WORK"
chmod 0700 "$WORK/locked" # root's: the test user cannot read it
# a client configuration whose plugstack.conf has a key the plugin does not know
sed "s|^PlugStackConfig=.*|PlugStackConfig=$WORK/plugstack-bad.conf|" \
	"$NOPFS_CLUSTER_STATE/etc/slurm.conf" >"$WORK/slurm-bad.conf"
sed 's|$| bogus_key=1|' "$NOPFS_CLUSTER_STATE/etc/plugstack.conf" | grep -v '^#' \
	>"$WORK/plugstack-bad.conf"
chmod a+r "$WORK"/*.conf

D="--nopfs-dataset=$WORK/data"
fail=0
n=0
# expect_fail MESSAGE CMD...: CMD (as the test user) fails within 10 s with MESSAGE
expect_fail() {
	local want=$1 rc=0 start end
	shift
	n=$((n + 1))
	start=$(date +%s%N)
	(cd "$WORK" && timeout -k 2 10 "${RUNU[@]}" "$@" >"$WORK/out.$n" 2>&1) || rc=$?
	end=$(date +%s%N)
	if ((rc == 0)) || ((rc == 124)) || ! grep -q "nopfs: .*$want" "$WORK/out.$n"; then
		echo "not ok $n - $* (exit $rc) should fail with \"$want\"; it said:"
		sed 's/^/    /' "$WORK/out.$n"
		fail=1
	else
		printf 'ok %d - %s in %d ms: %s\n' "$n" "$want" $(((end - start) / 1000000)) \
			"$(grep -m1 "nopfs: " "$WORK/out.$n")"
	fi
}

jobs_before=$("$NC" run squeue -h -o %i | wc -l)
expect_fail "no such directory" srun -N1 --nopfs-dataset="$WORK/missing" true
expect_fail "is a file, not a directory" srun -N1 --nopfs-dataset="$WORK/file" true
expect_fail "you cannot read this directory" srun -N1 --nopfs-dataset="$WORK/locked" true
expect_fail "not a seed" srun -N1 "$D" --nopfs-seed=abc true
expect_fail "not an epoch count" srun -N1 "$D" --nopfs-epochs=-3 true
expect_fail "has no size" srun -N1 "$D" --nopfs-tiers=ram true
expect_fail "unknown tier kind 'nvme'" srun -N1 "$D" --nopfs-tiers=nvme:10G true
expect_fail "no node-local SSD directory" srun -N1 "$D" --nopfs-tiers=ram:1G,ssd:10G true
expect_fail "too large" srun -N1 "$D" --nopfs-tiers=ram:99999999999999T true
expect_fail "more than this cluster allows" srun -N1 "$D" --nopfs-tiers=ram:90% true
expect_fail "does not exist" srun -N1 "$D" --nopfs-report="$WORK/missing/r.json" true
expect_fail "is a directory" srun -N1 "$D" --nopfs-report="$WORK" true
expect_fail "unknown key 'bogus_key'" env SLURM_CONF="$WORK/slurm-bad.conf" srun -N1 "$D" true
expect_fail "conflicts with --nopfs-shuffle=no" srun -N1 "$D" --nopfs-seed=1 --nopfs-shuffle=no true
expect_fail "needs --nopfs-dataset" srun -N1 --nopfs-epochs=3 true
expect_fail "accepted: yes or no" srun -N1 "$D" --nopfs-preload=maybe true
expect_fail "SLURM_NOPFS_PLAN=later: accepted: yes or no" env SLURM_NOPFS_PLAN=later srun -N1 "$D" true
expect_fail "--nopfs-start=soon: accepted: ready or early" srun -N1 "$D" --nopfs-start=soon true
expect_fail "SLURM_NOPFS_START=now: accepted: ready or early" env SLURM_NOPFS_START=now srun -N1 "$D" true
expect_fail "cannot read the list file" srun -N1 "$D" --nopfs-index=list:"$WORK/missing.txt" true
expect_fail "SLURM_NOPFS_EPOCHS=0: not an epoch count" env SLURM_NOPFS_EPOCHS=0 srun -N1 "$D" true
expect_fail "not a seed" sbatch -N1 "$D" --nopfs-seed=1x --wrap true
expect_fail "no such directory" salloc -N1 --nopfs-dataset="$WORK/missing" true
expect_fail "no directory given" srun -N1 --nopfs-dataset= true
expect_fail "not a seed" srun -N1 "$D" --nopfs-seed=99999999999999999999999 true
expect_fail "not a seed" srun -N1 "$D" --nopfs-seed=+5 true
expect_fail "SLURM_NOPFS_SEED=abc: not a seed" env SLURM_NOPFS_SEED=abc srun -N1 "$D" true
expect_fail "not an epoch count" srun -N1 "$D" --nopfs-epochs=1000001 true
expect_fail "not an epoch count" srun -N1 "$D" --nopfs-epochs=2.5 true
expect_fail "not an epoch; accepted" srun -N1 "$D" --nopfs-start-epoch=x true
expect_fail "start-epoch=3 is not below --nopfs-epochs=3" srun -N1 "$D" --nopfs-epochs=3 \
	--nopfs-start-epoch=3 true
expect_fail "start-sample=-1: not a sample index" srun -N1 "$D" --nopfs-start-sample=-1 true
expect_fail "SLURM_NOPFS_START_SAMPLE=1e3: not a sample index" \
	env SLURM_NOPFS_START_SAMPLE=1e3 srun -N1 "$D" true
expect_fail "accepted: imagefolder or list:FILE" srun -N1 "$D" --nopfs-index=bogus true
expect_fail "accepted: imagefolder or list:FILE" srun -N1 "$D" --nopfs-index=list: true
expect_fail "no path given" srun -N1 "$D" --nopfs-report= true
expect_fail "accepted: yes or no" srun -N1 "$D" --nopfs-shuffle=sometimes true
expect_fail "accepted: yes or no" srun -N1 "$D" --nopfs-set-epoch=often true
expect_fail "percentage must be in" srun -N1 "$D" --nopfs-tiers=ram:0% true
expect_fail "has size 0" srun -N1 "$D" --nopfs-tiers=ram:0 true
expect_fail "is not a size" srun -N1 "$D" --nopfs-tiers=ram:lots true
# the test cluster's plugstack.conf has no cache_base: nothing can be kept
expect_fail "--nopfs-keep=yes: .*no cache_base" srun -N1 "$D" --nopfs-keep=yes true
expect_fail "--nopfs-keep=yes: .*no cache_base" env SLURM_NOPFS_KEEP=yes srun -N1 "$D" true
expect_fail "--nopfs-keep=yes: .*no cache_base" sbatch -N1 "$D" --nopfs-keep=yes --wrap true
expect_fail "--nopfs-keep=maybe: accepted: yes or no" srun -N1 "$D" --nopfs-keep=maybe true
expect_fail "SLURM_NOPFS_KEEP=perhaps: accepted: yes or no" env SLURM_NOPFS_KEEP=perhaps srun -N1 "$D" true
expect_fail "--nopfs-keep needs --nopfs-dataset" srun -N1 --nopfs-keep=no true
# the validation set: checked as the dataset, and never the dataset itself
V="--nopfs-val-dataset=$WORK/val"
SAME="--nopfs-val-dataset and --nopfs-dataset are the same directory, .*/data: name"
expect_fail "--nopfs-val-dataset=$WORK/missing: no such directory" srun -N1 "$D" \
	--nopfs-val-dataset="$WORK/missing" true
expect_fail "--nopfs-val-dataset=$WORK/file: is a file, not a directory" srun -N1 "$D" \
	--nopfs-val-dataset="$WORK/file" true
expect_fail "--nopfs-val-dataset=$WORK/locked: you cannot read this directory" srun -N1 "$D" \
	--nopfs-val-dataset="$WORK/locked" true
expect_fail "--nopfs-val-dataset: no directory given" srun -N1 "$D" --nopfs-val-dataset= true
expect_fail "SLURM_NOPFS_VAL_DATASET=missing: no such directory" \
	env SLURM_NOPFS_VAL_DATASET=missing srun -N1 "$D" true
expect_fail "--nopfs-val-dataset needs --nopfs-dataset" srun -N1 "$V" true
expect_fail "--nopfs-val-dataset needs --nopfs-dataset" env SLURM_NOPFS_VAL_DATASET="$WORK/val" \
	srun -N1 true
expect_fail "--nopfs-val-dataset needs --nopfs-dataset" salloc -N1 "$V" true
expect_fail "$SAME" srun -N1 "$D" --nopfs-val-dataset="$WORK/data" true
# relative, through a link, or from the environment: the same directory once resolved
expect_fail "$SAME" srun -N1 "$D" --nopfs-val-dataset=data true
expect_fail "$SAME" srun -N1 --nopfs-dataset="$WORK/data-link" --nopfs-val-dataset="$WORK/data/" true
expect_fail "$SAME" env SLURM_NOPFS_DATASET="$WORK/data" SLURM_NOPFS_VAL_DATASET=data srun -N1 true
expect_fail "$SAME" sbatch -N1 "$D" --nopfs-val-dataset="$WORK/data" --wrap true
expect_fail "--nopfs-val-sampler=random: accepted: distributed or all" srun -N1 "$D" "$V" \
	--nopfs-val-sampler=random true
expect_fail "SLURM_NOPFS_VAL_SAMPLER=every: accepted: distributed or all" \
	env SLURM_NOPFS_VAL_SAMPLER=every srun -N1 "$D" "$V" true
expect_fail "--nopfs-val-sampler=: accepted: distributed or all" srun -N1 "$D" "$V" \
	--nopfs-val-sampler= true
expect_fail "--nopfs-val-sampler needs --nopfs-val-dataset" srun -N1 "$D" \
	--nopfs-val-sampler=all true
expect_fail "--nopfs-val-sampler needs --nopfs-val-dataset" env SLURM_NOPFS_VAL_SAMPLER=all \
	srun -N1 "$D" true
expect_fail "--nopfs-val-sampler needs --nopfs-val-dataset" sbatch -N1 "$D" \
	--nopfs-val-sampler=distributed --wrap true
jobs_after=$("$NC" run squeue -h -o %i | wc -l)
if ((jobs_after != jobs_before)); then
	echo "not ok - a bad option left a job behind"
	"$NC" run squeue
	fail=1
fi
# A job without nopfs options is not touched, even by a broken configuration.
if ! (cd "$WORK" && timeout 30 "${RUNU[@]}" env SLURM_CONF="$WORK/slurm-bad.conf" srun -N1 true); then
	echo "not ok - a job without nopfs options failed under a bad plugstack.conf"
	fail=1
fi
# srun --help shows every option with a line of its own
help=$(cd "$WORK" && "${RUNU[@]}" srun --help 2>&1)
for option in dataset seed epochs index tiers report preload shuffle drop-last verbose plan keep \
	val-dataset val-sampler; do
	grep -q -- "--nopfs-$option" <<<"$help" || { echo "not ok - srun --help lacks --nopfs-$option"; fail=1; }
done
echo "$n bad inputs checked"
exit "$fail"
