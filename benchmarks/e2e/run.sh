#!/bin/bash
# The end-to-end benchmark: the same PyTorch training emulation
# (benchmarks/e2e/train.py) run side by side on the 3-node test cluster whose
# shared PFS is the emulated, contended one (contrib/pfs-emulator/nopfs-pfs):
#   plain   PyTorch's DataLoader + DistributedSampler reading the PFS;
#   nopfs   the same script, unchanged, under srun --nopfs-dataset=...;
#   noio    the same script on in-memory data (--synthetic): the no-I/O bound;
# and, in one regime, the C/MPI program (benchmarks/e2e/train_mpi) plain,
# under nopfs and without I/O. Datasets in three regimes relative to the
# cluster's cache: one node's RAM tier holds it (node); only the three
# together do (aggregate); they do not (beyond); and a job of a chain,
# resumed from a checkpoint for the last two epochs (resumed: the aggregate
# size, ImageNet-like), under nopfs with --nopfs-start-epoch and without it
# (nopfs-unsaid: the agents find where the ranks read); the aggregate size
# with 4 ranks per node instead of 2 (ranks4); and the aggregate size on a
# PFS 10 times faster (fastpfs: --fast-pfs's options; the cluster restarts
# for it), where the PFS is not the bottleneck; and the aggregate size with a
# validation set an eighth of its size read after every epoch (trainval:
# nopfs with --nopfs-val-dataset; the three nodes hold both). Then
# benchmarks/e2e/analyze.py prints the table and the targets and plots. Each
# configuration runs --repeat times (default 3), the configurations of a
# regime in turn, round after round: the figures are medians with their
# spread, ratios taken within a round. Root only (the cluster).
#
#   benchmarks/e2e/run.sh [--quick] [--out DIR] [--epochs E] [--kinds LIST]
#                         [--regimes LIST] [--pfs "NOPFS-PFS OPTIONS"] [--no-mpi]
#                         [--repeat N] [--fast-pfs "NOPFS-PFS OPTIONS"]
#                         [--keep-cluster]
set -euo pipefail

SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILDDIR=$(cd "${NOPFS_BUILDDIR:-$SRCDIR}" && pwd)
NC=$SRCDIR/contrib/cluster/nopfs-cluster
PYTHON=${NOPFS_PYTHON:-/usr/bin/python3}

OUT=$PWD/e2e-results
EPOCHS=3
KINDS=imagenet,cosmoflow
DEFAULT_REGIMES=node,aggregate,beyond,resumed,ranks4,fastpfs,trainval
REGIMES=$DEFAULT_REGIMES
# A PFS whose aggregate bandwidth barely grows with readers (per node: 20,
# 12.5, 9.3 MiB/s with 1, 2, 3 nodes reading), 2 ms per operation, 1% of the
# reads 50 ms late: the Lassen curve's shape (t(1) = 330 MB/s), scaled down
# to what one 2-core machine can feed, and made contended.
PFS_OPTS="--bandwidth 1:20M,2:25M,3:28M --latency 2 --noise 0.01:50"
# the same ten times faster: ten times the bandwidth, a tenth of the latencies
FAST_PFS_OPTS="--bandwidth 1:200M,2:250M,3:280M --latency 0.2 --noise 0.01:5"
MPI=1
REPEAT=3
QUICK=0
KEEP=0

die() { echo "run.sh: $*" >&2; exit 2; }
while (($#)); do
	case $1 in
	--quick) QUICK=1; shift ;;
	--out) OUT=${2:?--out needs a directory}; shift 2 ;;
	--epochs) EPOCHS=${2:?--epochs needs a number}; shift 2 ;;
	--kinds) KINDS=${2:?--kinds needs a list}; shift 2 ;;
	--regimes) REGIMES=${2:?--regimes needs a list}; shift 2 ;;
	--pfs) PFS_OPTS=${2:?--pfs needs nopfs-pfs options}; shift 2 ;;
	--no-mpi) MPI=0; shift ;;
	--repeat) REPEAT=${2:?--repeat needs a number}; shift 2 ;;
	--fast-pfs) FAST_PFS_OPTS=${2:?--fast-pfs needs nopfs-pfs options}; shift 2 ;;
	--keep-cluster) KEEP=1; shift ;;
	-h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
if ! [[ $EPOCHS =~ ^[1-9][0-9]*$ ]] || ((EPOCHS < 2)); then
	die "--epochs must be 2 or more, not '$EPOCHS'"
fi
if ! [[ $REPEAT =~ ^[1-9][0-9]*$ ]]; then
	die "--repeat must be 1 or more, not '$REPEAT'"
fi
if ((QUICK)); then # the cluster test's size: one small regime, once, no MPI
	KINDS=imagenet
	REGIMES=aggregate
	MPI=0
	REPEAT=1
fi
((EUID == 0)) || die "must run as root (it starts the test cluster)"
for f in nopfs-agent nopfs-report lib/.libs/libnopfs_preload.so spank/.libs/spank_nopfs.so \
	contrib/pfs-emulator/nopfs-pfs; do
	[[ -e $BUILDDIR/$f ]] || die "$BUILDDIR/$f is missing: build nopfs first (make -j2)"
done
if ((MPI)) && [[ ! -x $BUILDDIR/benchmarks/e2e/train_mpi ]]; then
	echo "run.sh: no benchmarks/e2e/train_mpi (configure found no MPI): the MPI runs are skipped" >&2
	MPI=0
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# ---------------------------------------------------------------------------
# the cluster with the emulated PFS and this build's plugin
# ---------------------------------------------------------------------------
STATE=${NOPFS_CLUSTER_STATE:-/tmp/nopfs-cluster}
export NOPFS_CLUSTER_PFS_TOOL=$BUILDDIR/contrib/pfs-emulator/nopfs-pfs
export NOPFS_SPANK_PLUGIN=$BUILDDIR/spank/.libs/spank_nopfs.so
# The programs live beside the PFS, not on it (every node sees the state
# dir): the emulated PFS counts the dataset's traffic, not the software's.
SW=$STATE/sw
export NOPFS_SPANK_ARGS="bindir=$SW/nopfs/bin preload=$SW/nopfs/lib/libnopfs_preload.so ready_timeout=120 report_wait=30"
# shellcheck disable=SC2317 # the EXIT trap runs it
finish() {
	local rc=$?
	((KEEP)) || "$NC" down >/dev/null 2>&1 || true
	exit "$rc"
}
trap finish EXIT
# cluster_up PFS-OPTIONS: the cluster, its PFS emulated so, the software installed
cluster_up() {
	export NOPFS_CLUSTER_PFS_EMULATE=$1
	"$NC" up --nodes 3
	eval "$("$NC" env)"
	RUNU=()
	read -r -a RUNU <<<"$NOPFS_CLUSTER_RUN"
	install -d -m 0755 "$SW" "$SW/bin"
	"$SRCDIR/contrib/cluster/install-nopfs" "$BUILDDIR" "$SW/nopfs"
	install -m 0755 "$SRCDIR/benchmarks/e2e/train.py" "$SW/bin/"
	((MPI == 0)) || install -m 0755 "$BUILDDIR/benchmarks/e2e/train_mpi" "$SW/bin/"
	E2E=$NOPFS_CLUSTER_PFS/e2e
	install -d -m 0777 "$E2E" "$E2E/data" "$E2E/runs"
	CLUSTER_PFS=$1
}
cluster_up "$PFS_OPTS"
export UCX_TLS=tcp # the nodes' namespaces do not isolate shared memory

# pfs_bytes: bytes the nodes (not the controller or this machine) read from the PFS
pfs_bytes() {
	sleep 1.2 # the counters are written every second
	"$PYTHON" - "$NOPFS_CLUSTER_PFS_STATS" "$NOPFS_CLUSTER_NETNS" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))["clients"]
nodes = [pair.split(":")[1] for pair in sys.argv[2].split() if pair.startswith("n")]
print(sum(stats.get(inode, {}).get("bytes", 0) for inode in nodes))
PY
}

# ---------------------------------------------------------------------------
# workloads
# ---------------------------------------------------------------------------
# KIND: tier per node, batch size, compute per batch (s); the regimes' sizes
# are 0.8, 2.4 and 4.8 times the tier of one node (trainval's validation set
# 0.3 times: 2.7 in all, which the three nodes hold).
workload() {
	case $1 in
	imagenet)
		if ((QUICK)); then TIER_MB=40; else TIER_MB=100; fi
		BATCH=16
		COMPUTE=0.12
		;;
	cosmoflow)
		TIER_MB=200
		BATCH=1
		COMPUTE=1.0
		;;
	*) die "--kinds: '$1' is not imagenet or cosmoflow" ;;
	esac
	case $2 in
	node) SIZE_MB=$((TIER_MB * 8 / 10)) ;;
	aggregate) SIZE_MB=$((TIER_MB * 24 / 10)) ;;
	beyond) SIZE_MB=$((TIER_MB * 48 / 10)) ;;
	resumed | ranks4 | fastpfs | trainval) SIZE_MB=$((TIER_MB * 24 / 10)) ;;
	*) die "--regimes: '$2' is not node, aggregate, beyond, resumed, ranks4, fastpfs or trainval" ;;
	esac
	VAL_MB=0
	[[ $2 != trainval ]] || VAL_MB=$((TIER_MB * 3 / 10))
	PER_NODE=2
	[[ $2 != ranks4 ]] || PER_NODE=4
	# the resumed job runs the last two epochs
	START=0
	[[ $2 != resumed ]] || START=$((EPOCHS - 2))
}

# make_data KIND REGIME: DATA, INDEX (list kinds), DATA_BYTES, DATA_SAMPLES; and
# VAL, VAL_BYTES, VAL_SAMPLES (a validation set with VAL_MB, else VAL empty)
make_data() {
	local line
	DATA=$E2E/data/$1-$2
	INDEX=
	VAL=
	VAL_BYTES=0
	VAL_SAMPLES=0
	rm -rf "$DATA" "$DATA-val"
	if ((VAL_MB > 0)); then
		VAL=$DATA-val
		line=$("$PYTHON" "$SRCDIR/contrib/make-dataset" "$VAL" --kind imagenet \
			--total "${VAL_MB}M" --classes 5 --mean 110K --sd 30K | tail -n 1)
		[[ $line =~ ,\ ([0-9]+)\ samples[^,]*,\ ([0-9]+)\ bytes ]] || die "make-dataset said: $line"
		VAL_SAMPLES=${BASH_REMATCH[1]}
		VAL_BYTES=${BASH_REMATCH[2]}
		echo "# $1/$2: validation set of $VAL_SAMPLES samples, $VAL_BYTES bytes"
	fi
	if [[ $1 == imagenet ]]; then
		line=$("$PYTHON" "$SRCDIR/contrib/make-dataset" "$DATA" --kind imagenet \
			--total "${SIZE_MB}M" --classes 20 --mean 110K --sd 30K | tail -n 1)
	else
		line=$("$PYTHON" "$SRCDIR/contrib/make-dataset" "$DATA" --kind cosmoflow \
			--total "${SIZE_MB}M" --size 16M | tail -n 1)
		INDEX=$DATA/index.txt
	fi
	# "DIR: KIND, N samples[ in C classes], B bytes (...)"
	[[ $line =~ ,\ ([0-9]+)\ samples[^,]*,\ ([0-9]+)\ bytes ]] || die "make-dataset said: $line"
	DATA_SAMPLES=${BASH_REMATCH[1]}
	DATA_BYTES=${BASH_REMATCH[2]}
	echo "# $1/$2: $DATA_SAMPLES samples, $DATA_BYTES bytes; tier ram:${TIER_MB}M per node"
}

# save_sizes KIND REGIME: the samples' sizes in the script's order, and the
# seed, for analyze.py's partial-cache bound (it replays the sampler)
save_sizes() {
	mkdir -p "$OUT/$1-$2"
	"$PYTHON" - "$DATA" "$INDEX" "$OUT/$1-$2/sizes.json" <<'PY'
import json, os, sys
data, index, out = sys.argv[1:4]
if index:
    with open(index) as f:
        paths = [line.split("\t")[0] for line in f if line.strip()]
    paths = [p if os.path.isabs(p) else os.path.join(data, p) for p in paths]
else:  # ImageFolder: classes and files sorted by name
    paths = [os.path.join(data, c, f) for c in sorted(os.listdir(data))
             if os.path.isdir(os.path.join(data, c))
             for f in sorted(os.listdir(os.path.join(data, c))) if f.endswith(".JPEG")]
with open(out, "w") as f:
    json.dump({"seed": 42, "sizes": [os.path.getsize(p) for p in paths]}, f)
PY
}

# run_config KIND REGIME CONFIG ROUND: into CONFIG/run-ROUND when repeated
run_config() {
	local name=$3 before after rc=0 cmd=() nopfs=()
	((REPEAT == 1)) || name=$3/run-$4
	local dir=$E2E/runs/$1-$2/$name
	rm -rf "$dir"
	install -d -m 0777 "$dir"
	case $3 in
	mpi-*) cmd=("$SW/bin/train_mpi" --data "$DATA" --epochs "$EPOCHS" --seed 42
		--batch-size "$BATCH" --compute "$COMPUTE" --out "$dir/rank-%r.csv") ;;
	*) cmd=("$PYTHON" "$SW/bin/train.py" --data "$DATA" --epochs "$EPOCHS" --seed 42
		--batch-size "$BATCH" --workers 2 --prefetch-factor 4 --persistent-workers
		--compute "$COMPUTE" --out "$dir/rank-%r.csv") ;;
	esac
	[[ -z $INDEX ]] || cmd+=(--index "$INDEX")
	[[ -z $VAL ]] || cmd+=(--val-data "$VAL")
	[[ $3 != *noio ]] || cmd+=(--synthetic)
	((START == 0)) || cmd+=(--start-epoch "$START")
	if [[ $3 == *nopfs || $3 == nopfs-unsaid ]]; then
		nopfs=(--nopfs-dataset="$DATA" --nopfs-seed=42 --nopfs-epochs="$EPOCHS"
			--nopfs-tiers="ram:${TIER_MB}M" --nopfs-report="$dir/report.json")
		[[ -z $INDEX ]] || nopfs+=(--nopfs-index="list:$INDEX")
		[[ -z $VAL ]] || nopfs+=(--nopfs-val-dataset="$VAL")
		[[ $3 == nopfs-unsaid ]] || nopfs+=(--nopfs-start-epoch="$START")
	fi
	local mpi=()
	[[ $3 != mpi-* ]] || mpi=(--mpi=pmix)
	before=$(pfs_bytes)
	(cd "$E2E" && timeout -k 10 1800 "${RUNU[@]}" env OMPI_MCA_btl=self,tcp \
		OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 \
		srun -N3 --ntasks-per-node="$PER_NODE" "${mpi[@]}" "${nopfs[@]}" "${cmd[@]}") \
		>"$dir/job.out" 2>&1 || rc=$?
	after=$(pfs_bytes)
	printf '{"bytes_read": %d}\n' $((after - before)) >"$dir/pfs.json"
	local fast=false
	[[ $CLUSTER_PFS != "$FAST_PFS_OPTS" ]] || fast=true
	printf '{"dataset_bytes": %d, "samples": %d, "epochs": %d, "start_epoch": %d, "nodes": 3, "ranks": %d, "kind": "%s", "regime": "%s", "cache_bytes": %d, "fast_pfs": %s, "pfs": "%s", "val_bytes": %d, "val_samples": %d}\n' \
		"$DATA_BYTES" "$DATA_SAMPLES" "$EPOCHS" "$START" $((3 * PER_NODE)) "$1" "$2" \
		$((3 * TIER_MB * 1048576)) "$fast" "$CLUSTER_PFS" "$VAL_BYTES" "$VAL_SAMPLES" >"$dir/meta.json"
	mkdir -p "$(dirname "$OUT/$1-$2/$name")"
	rm -rf "${OUT:?}/$1-$2/$name"
	cp -r "$dir" "$OUT/$1-$2/$name"
	if ((rc != 0)); then
		echo "run.sh: $1/$2/$name failed (exit $rc); its output: $OUT/$1-$2/$name/job.out" >&2
		tail -n 20 "$dir/job.out" >&2
		return 1
	fi
	echo "# $1/$2/$name: done; PFS read $((after - before)) bytes ($(tail -n 1 "$dir/job.out"))"
}

failed=0
IFS=, read -r -a kinds <<<"$KINDS"
IFS=, read -r -a regimes <<<"$REGIMES"
for kind in "${kinds[@]}"; do
	for regime in "${regimes[@]}"; do
		# CosmoFlow's 16 MB samples: the aggregate regime unless asked for more
		[[ $kind == cosmoflow && $regime != aggregate && $REGIMES == "$DEFAULT_REGIMES" ]] && continue
		if [[ $regime == resumed ]] && ((EPOCHS < 3)); then
			echo "run.sh: the resumed regime needs --epochs 3 or more (it runs the last two): skipped" >&2
			continue
		fi
		# the fast PFS's regime restarts the cluster with it, the others with the usual one
		want=$PFS_OPTS
		[[ $regime != fastpfs ]] || want=$FAST_PFS_OPTS
		if [[ $want != "$CLUSTER_PFS" ]]; then
			"$NC" down >/dev/null
			cluster_up "$want"
		fi
		workload "$kind" "$regime"
		make_data "$kind" "$regime"
		configs=(plain nopfs noio)
		[[ $regime != resumed ]] || configs=(plain nopfs nopfs-unsaid noio)
		if ((MPI)) && [[ $kind == imagenet && $regime == aggregate ]]; then
			configs+=(mpi-plain mpi-nopfs mpi-noio)
		fi
		rm -rf "${OUT:?}/$kind-$regime" "${E2E:?}/runs/$kind-$regime"
		save_sizes "$kind" "$regime"
		for ((round = 1; round <= REPEAT; round++)); do
			for config in "${configs[@]}"; do
				run_config "$kind" "$regime" "$config" "$round" || failed=1
			done
		done
		rm -rf "$DATA" "$DATA-val"
	done
done

echo "# PFS: nopfs-pfs $PFS_OPTS (fastpfs: $FAST_PFS_OPTS); $EPOCHS epochs; $REPEAT rounds; results in $OUT"
"$PYTHON" "$SRCDIR/benchmarks/e2e/analyze.py" "$OUT" || failed=1
exit "$failed"
