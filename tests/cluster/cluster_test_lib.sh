# Shared by the cluster tests (sourced): the cluster of NOPFS_CLUSTER_STATE
# is used if it is up (and left up); otherwise one is started and torn down
# at exit. Sets NC, SRCDIR, BUILDDIR, RUNU (the command prefix that runs as
# the test user), and WORK, a fresh directory on the PFS removed at exit
# (kept when KEEP is set).
# shellcheck shell=bash disable=SC2034 # the variables are for the sourcing test

# shellcheck source-path=SCRIPTDIR source=cluster_lock.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster_lock.sh"
SRCDIR=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
BUILDDIR=$(cd "${top_builddir:-$SRCDIR}" && pwd)
NC=$SRCDIR/contrib/cluster/nopfs-cluster

((EUID == 0)) || { echo "SKIP: needs root (namespaces)"; exit 77; }
for tool in unshare nsenter ip setpriv slurmd srun; do
	command -v "$tool" >/dev/null || { echo "SKIP: missing $tool"; exit 77; }
done

CLUSTER_STARTED=0
WORK=
cluster_cleanup() {
	local rc=$?
	[[ -z $WORK || -n ${KEEP:-} ]] || rm -rf "$WORK"
	if ((CLUSTER_STARTED)); then "$NC" down >/dev/null 2>&1 || true; fi
	exit "$rc"
}
trap cluster_cleanup EXIT
if ! "$NC" status >/dev/null 2>&1; then
	CLUSTER_STARTED=1
	"$NC" up --nodes 3 >/dev/null
fi
eval "$("$NC" env)"
RUNU=()
read -r -a RUNU <<<"$NOPFS_CLUSTER_RUN"
WORK=$(mktemp -d "$NOPFS_CLUSTER_PFS/$(basename "$0" .sh).XXXXXX")
chmod 777 "$WORK"
