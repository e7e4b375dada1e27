#!/bin/bash
# Smoke test of the namespace Slurm test cluster (contrib/cluster/nopfs-cluster).
#
# Uses the cluster of NOPFS_CLUSTER_STATE if it is already up (and leaves it up);
# otherwise starts one and tears it down at exit.  The lifecycle checks (up twice,
# down twice, nothing left behind) run on the cluster this test started, or, when
# the cluster was already up, on a second private 2-node cluster beside it.
#
# Exit status (automake): 0 pass, 1 fail, 77 skip, 99 hard error.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=cluster_lock.sh
. "$(dirname "$0")/cluster_lock.sh"
SRCDIR=$(cd "${top_srcdir:-$HERE/../..}" && pwd)
NC=$SRCDIR/contrib/cluster/nopfs-cluster
T0=${EPOCHREALTIME/[.,]/}

skip() { echo "SKIP: $*"; exit 77; }
((EUID == 0)) || skip "needs root (network, UTS and mount namespaces)"
for t in unshare nsenter ip setpriv munged slurmctld slurmd srun sbatch sinfo scontrol; do
	command -v "$t" >/dev/null || skip "missing $t"
done
[[ -x $NC ]] || { echo "ERROR: $NC not found"; exit 99; }

fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION CMD...
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
quiet() { "$@" >/dev/null 2>&1; }
elapsed() { local t=${EPOCHREALTIME/[.,]/}; printf '%d ms' $(((t - T0) / 1000)); }

STARTED=0
cleanup() {
	local rc=$?
	if ((STARTED)); then "$NC" down >/dev/null 2>&1 || true; fi
	[[ -z ${TMP2:-} ]] || NOPFS_CLUSTER_STATE=$TMP2 "$NC" down >/dev/null 2>&1 || true
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 99' INT TERM

if "$NC" status >/dev/null 2>&1; then
	echo "# using the cluster that is already up"
else
	STARTED=1
	"$NC" up --nodes 3 || { echo "ERROR: nopfs-cluster up failed"; exit 99; }
fi
eval "$("$NC" env)"
((NOPFS_CLUSTER_NNODES >= 3)) || skip "the running cluster has fewer than 3 nodes"
echo "# cluster ready after $(elapsed)"

RUNU=()
read -r -a RUNU <<<"$NOPFS_CLUSTER_RUN"
# as the test user, in the controller namespace, bounded in time, in the PFS dir
u() { (cd "$NOPFS_CLUSTER_PFS" && timeout -k 5 60 "${RUNU[@]}" "$@"); }
node() { timeout -k 5 30 "$NOPFS_CLUSTER_CMD" exec-node "$@"; }

TAG=smoke-$$-$RANDOM

# --- hostnames ---------------------------------------------------------------
out=$(u srun -N3 -w n1,n2,n3 hostname | sort | tr '\n' ' ') || true
check "srun -N3 hostname prints n1 n2 n3 (got: $out)" [ "$out" = "n1 n2 n3 " ]
out=$(u srun -N1 id -un) || true
check "jobs run as $NOPFS_CLUSTER_USER (got: $out)" [ "$out" = "$NOPFS_CLUSTER_USER" ]

# --- private /tmp per node -----------------------------------------------------
u srun -N1 -w n1 sh -c "echo $TAG >/tmp/$TAG" || true
check "n1 sees its own /tmp/$TAG" u srun -N1 -w n1 test -f "/tmp/$TAG"
check "n2 does not see n1's /tmp/$TAG" u srun -N1 -w n2 test ! -e "/tmp/$TAG"
check "the root namespace does not see n1's /tmp/$TAG" test ! -e "/tmp/$TAG"
check "exec-node n1 sees /tmp/$TAG" node n1 test -f "/tmp/$TAG"
check "exec-node n3 does not see /tmp/$TAG" node n3 test ! -e "/tmp/$TAG"
out=$(node n2 hostname) || true
check "exec-node n2 runs on n2 (got: $out)" [ "$out" = n2 ]

# --- shared PFS ----------------------------------------------------------------
u srun -N1 -w n1 sh -c "echo $TAG >$NOPFS_CLUSTER_PFS/$TAG" || true
out=$(u srun -N1 -w n3 cat "$NOPFS_CLUSTER_PFS/$TAG") || true
check "PFS file written on n1 is read on n3" [ "$out" = "$TAG" ]
check "PFS file visible in the root namespace" grep -qx "$TAG" "$NOPFS_CLUSTER_PFS/$TAG"

# --- private SSD and /dev/shm per node -------------------------------------------
u srun -N1 -w n1 sh -c "echo $TAG >$NOPFS_CLUSTER_SSD/$TAG && echo $TAG >/dev/shm/$TAG" || true
check "n1 has its SSD file" node n1 test -f "$NOPFS_CLUSTER_SSD/$TAG"
check "n2 does not see n1's SSD file" node n2 test ! -e "$NOPFS_CLUSTER_SSD/$TAG"
check "n1 has its /dev/shm file" node n1 test -f "/dev/shm/$TAG"
check "n2 does not see n1's /dev/shm file" node n2 test ! -e "/dev/shm/$TAG"
check "the root namespace does not see n1's /dev/shm file" test ! -e "/dev/shm/$TAG"
if command -v python3 >/dev/null; then
	# POSIX shm_open/mmap/shm_unlink in the job, as the user, on every node
	out=$(u srun -N3 -w n1,n2,n3 python3 -c '
import mmap, os, socket
from multiprocessing import shared_memory
name = "nopfs-smoke-%d" % os.getpid()
m = shared_memory.SharedMemory(name=name, create=True, size=8192)
m.buf[:5] = b"hello"
seen = os.path.exists("/dev/shm/" + name)
o = shared_memory.SharedMemory(name=name)
ok = bytes(o.buf[:5]) == b"hello" and seen
o.close(); m.close(); m.unlink()
print(socket.gethostname(), "ok" if ok and not os.path.exists("/dev/shm/" + name) else "bad")
' | sort | tr '\n' ' ') || true
	check "POSIX shm works on every node (got: $out)" [ "$out" = "n1 ok n2 ok n3 ok " ]
else
	ok "# SKIP POSIX shm check (no python3)"
fi
node n1 rm -f "/tmp/$TAG" "/dev/shm/$TAG" "$NOPFS_CLUSTER_SSD/$TAG" || true

# --- PMIx ----------------------------------------------------------------------
out=$(u srun --mpi=pmix -N3 -w n1,n2,n3 env | sed -n 's/^PMIX_RANK=//p' | sort -n | tr '\n' ' ') || true
check "srun --mpi=pmix -N3 gives PMIX_RANK 0 1 2 (got: $out)" [ "$out" = "0 1 2 " ]
# Put/Commit/Fence(collect)/Get between nodes, when a C compiler and PMIx headers exist
CC=${CC:-cc}
if command -v "$CC" >/dev/null && pkg-config --exists pmix 2>/dev/null; then
	cat >"$NOPFS_CLUSTER_PFS/$TAG-fence.c" <<'EOF'
#include <pmix.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
	pmix_proc_t me, peer;
	pmix_value_t v, *pv = NULL;
	pmix_info_t info;
	bool collect = true;
	char host[64] = "";
	if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
		return puts("init-failed"), 1;
	gethostname(host, sizeof host - 1);
	PMIX_VALUE_LOAD(&v, host, PMIX_STRING);
	PMIx_Put(PMIX_GLOBAL, "smoke.host", &v);
	PMIx_Commit();
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_LOAD_PROCID(&peer, me.nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Fence(&peer, 1, &info, 1) != PMIX_SUCCESS)
		return puts("fence-failed"), 1;
	PMIX_LOAD_PROCID(&peer, me.nspace, (me.rank + 1) % 3);
	if (PMIx_Get(&peer, "smoke.host", NULL, 0, &pv) != PMIX_SUCCESS)
		return puts("get-failed"), 1;
	printf("%u:%s\n", me.rank, pv->data.string);
	PMIx_Finalize(NULL, 0);
	return 0;
}
EOF
	# shellcheck disable=SC2046 # pkg-config output is a word list
	if "$CC" -o "$NOPFS_CLUSTER_PFS/$TAG-fence" "$NOPFS_CLUSTER_PFS/$TAG-fence.c" \
		$(pkg-config --cflags --libs pmix) 2>/dev/null; then
		# Slurm 22.05's slurmstepd has a munge uid race that hangs ~4-7% of PMIx
		# steps of a non-root user ("Unauthorized credential"): retry, say so.
		for try in 1 2 3; do
			out=$( (cd "$NOPFS_CLUSTER_PFS" && timeout -k 2 8 "${RUNU[@]}" \
				srun --mpi=pmix -N3 -w n1,n2,n3 "$NOPFS_CLUSTER_PFS/$TAG-fence") | sort | tr '\n' ' ') || true
			[[ $out != "0:n2 1:n3 2:n1 " ]] || break
			echo "# PMIx fence attempt $try failed (got: $out)"
		done
		check "PMIx fence + get across 3 nodes (got: $out)" [ "$out" = "0:n2 1:n3 2:n1 " ]
	else
		ok "# SKIP PMIx fence check (cannot compile against pmix)"
	fi
	rm -f "$NOPFS_CLUSTER_PFS/$TAG-fence" "$NOPFS_CLUSTER_PFS/$TAG-fence.c"
else
	ok "# SKIP PMIx fence check (no $CC or pkg-config pmix)"
fi

# --- sbatch --------------------------------------------------------------------
cat >"$NOPFS_CLUSTER_PFS/$TAG.sh" <<'EOF'
#!/bin/bash
#SBATCH -N2
srun hostname | sort
EOF
chmod 0644 "$NOPFS_CLUSTER_PFS/$TAG.sh"
jobid=$(u sbatch --parsable -J "$TAG" -o "$NOPFS_CLUSTER_PFS/$TAG.out" "$NOPFS_CLUSTER_PFS/$TAG.sh") || true
jobid=${jobid%%;*}
state=
if [[ $jobid =~ ^[0-9]+$ ]]; then
	end=$((${EPOCHREALTIME/[.,]/} + 30000000))
	while ((${EPOCHREALTIME/[.,]/} < end)); do
		state=$(u scontrol show job -o "$jobid" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') || true
		[[ $state == PENDING || $state == RUNNING || $state == CONFIGURING || $state == COMPLETING || -z $state ]] || break
		sleep 0.1
	done
fi
check "sbatch job $jobid completed (state: $state)" [ "$state" = COMPLETED ]
out=$(tr '\n' ' ' <"$NOPFS_CLUSTER_PFS/$TAG.out" 2>/dev/null) || true
two_nodes() { [[ $1 =~ ^(n[0-9]+)\ (n[0-9]+)\ $ && ${BASH_REMATCH[1]} != "${BASH_REMATCH[2]}" ]]; }
check "sbatch output file has 2 node names (got: $out)" two_nodes "$out"
rm -f "$NOPFS_CLUSTER_PFS/$TAG" "$NOPFS_CLUSTER_PFS/$TAG.sh" "$NOPFS_CLUSTER_PFS/$TAG.out"
echo "# job checks done after $(elapsed)"

# --- lifecycle: up twice, down twice, nothing left behind -----------------------
if ((STARTED)); then
	LSTATE=$NOPFS_CLUSTER_STATE
	LNODES=3
else
	TMP2=/tmp/nopfs-cluster-smoke-$$
	LSTATE=$TMP2
	LNODES=2
	LSUBNET=10.78.$((RANDOM % 200))
fi
lc() { # nopfs-cluster for that cluster, from a directory its nodes can see
	(cd / && env -u NOPFS_CLUSTER_SSD_MOUNT NOPFS_CLUSTER_STATE="$LSTATE" \
		NOPFS_CLUSTER_SUBNET="${LSUBNET:-$NOPFS_CLUSTER_SUBNET}" timeout -k 5 120 "$NC" "$@")
}
if [[ -n ${TMP2:-} ]]; then
	lc up --nodes 2 || { echo "ERROR: second cluster did not come up"; exit 99; }
	out=$(lc run srun -N2 hostname | sort | tr '\n' ' ') || true
	check "a second cluster runs beside the first (got: $out)" [ "$out" = "n1 n2 " ]
fi
check "second 'up' of a healthy cluster succeeds" lc up --nodes "$LNODES"
check "status of the cluster succeeds" quiet lc status
lssd=$(lc env | sed -n 's/^export NOPFS_CLUSTER_SSD=//p')

# --- plugstack: a tiny SPANK plugin, reconfigure-plugstack ------------------------
reconf_with() { NOPFS_SPANK_PLUGIN=$1 NOPFS_SPANK_ARGS=$2 lc reconfigure-plugstack; }
if command -v "$CC" >/dev/null && [[ -f /usr/include/slurm/spank.h ]]; then
	SPDIR=$(mktemp -d /tmp/nopfs-smoke-spank.XXXXXX)
	cat >"$SPDIR/spank_smoke.c" <<'EOF'
#include <slurm/spank.h>
SPANK_PLUGIN(smoke, 1);
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	spank_setenv(sp, "NOPFS_SMOKE_SPANK", ac > 0 ? av[0] : "", 1);
	return 0;
}
EOF
	if "$CC" -shared -fPIC -o "$SPDIR/spank_smoke.so" "$SPDIR/spank_smoke.c" 2>"$SPDIR/cc.log"; then
		lc exec-node n1 sh -c "echo keep >/dev/shm/$TAG" || true
		check "reconfigure-plugstack with a plugin" reconf_with "$SPDIR/spank_smoke.so" k=v
		out=$(lc run srun -N2 -w n1,n2 env | grep -c '^NOPFS_SMOKE_SPANK=k=v$') || true
		check "the plugin runs in every task (got $out of 2)" [ "$out" = 2 ]
		check "a slurmd restart keeps the node's /dev/shm" lc exec-node n1 test -f "/dev/shm/$TAG"
		lc exec-node n1 rm -f "/dev/shm/$TAG" || true
		check "reconfigure-plugstack without a plugin" reconf_with "" ""
		out=$(lc run srun -N2 -w n1,n2 env | grep -c '^NOPFS_SMOKE_SPANK=') || true
		check "the plugin is gone (got $out tasks with it)" [ "$out" = 0 ]
	else
		ok "# SKIP plugstack checks (cannot compile a SPANK plugin: $(head -n1 "$SPDIR/cc.log"))"
	fi
	rm -rf "$SPDIR"
else
	ok "# SKIP plugstack checks (no $CC or slurm/spank.h)"
fi

# what up started, for the checks after down
pids=()
for f in "$LSTATE"/run/*.pid "$LSTATE"/munge/munged.pid; do
	[[ -s $f ]] && pids+=("$(cat "$f")")
done
inodes=()
for f in "$LSTATE"/ns/*.net; do inodes+=("$(stat -L -c %i "$f")"); done
check "up left pid files ($(( ${#pids[@]} )) pids) and netns files (${#inodes[@]})" \
	[ "${#pids[@]}" -ge $((2 * LNODES + 2)) -a "${#inodes[@]}" -eq $((LNODES + 1)) ]

t=${EPOCHREALTIME/[.,]/}
check "down succeeds" lc down
echo "# down took $(((${EPOCHREALTIME/[.,]/} - t) / 1000)) ms"
((STARTED)) && STARTED=0
[[ $LSTATE == "${TMP2:-}" ]] && TMP2=

alive=()
for p in "${pids[@]}"; do
	st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1) || continue
	[[ -z $st || $st == Z || $st == X ]] || alive+=("$p")
done
check "no process up started is alive (alive: ${alive[*]:-none})" [ ${#alive[@]} -eq 0 ]
left=$(stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null |
	awk -v want=" ${inodes[*]} " 'index(want, " " $1 " ") { print $2 }') || true
check "no process in the cluster's network namespaces (found: ${left:-none})" [ -z "$left" ]
refs=
for i in "${inodes[@]}"; do
	refs+=$(cat /proc/[0-9]*/mountinfo 2>/dev/null | grep -F "net:[$i]" | sort -u) || true
done
check "no mount namespace still holds a cluster netns (found: ${refs:-none})" [ -z "$refs" ]
check "state dir $LSTATE removed" test ! -e "$LSTATE"
mnt=$(awk -v s="$LSTATE" -v d="$lssd" '$5 == s || index($5, s "/") == 1 || $5 == d { print $5 }' /proc/self/mountinfo)
check "no mount under $LSTATE or at the SSD path (found: ${mnt:-none})" [ -z "$mnt" ]
check "SSD mount point $lssd removed" test ! -e "$lssd"
links=$(ip -o link show | awk -F': ' '{ print $2 }' | grep -E '^(br0|vn[0-9]+|en[0-9]+)(@|$)' || true)
check "no bridge/veth of ours in the root namespace (found: ${links:-none})" [ -z "$links" ]
check "second 'down' succeeds" lc down

echo "# total $(elapsed)"
if ((fails)); then
	echo "FAIL: $fails of $n checks failed"
	exit 1
fi
echo "PASS: $n checks"
