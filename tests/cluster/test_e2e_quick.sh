#!/bin/bash
# The end-to-end benchmark's small form (benchmarks/e2e/run.sh --quick) on
# the test cluster with the emulated, contended PFS: plain PyTorch, nopfs
# and no I/O run the same script; the emulated PFS's own counters must show
# plain reading the dataset once per epoch and nopfs once in all (besides
# its agents' probe), and agree with what the agents counted.
# Timings are printed, not judged (a shared machine). The cluster is left
# down. Exit: 0 pass, 1 fail, 77 skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=cluster_lock.sh
. "$(dirname "$0")/cluster_lock.sh"
SRCDIR=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
BUILDDIR=$(cd "${top_builddir:-$SRCDIR}" && pwd)
PYTHON=${NOPFS_PYTHON:-/usr/bin/python3}

((EUID == 0)) || { echo "SKIP: needs root (namespaces)"; exit 77; }
[[ -e /dev/fuse ]] || { echo "SKIP: no /dev/fuse"; exit 77; }
if ! "$PYTHON" -c 'import torch, torchvision' 2>/dev/null; then
	[[ ${NOPFS_REQUIRE_TORCH:-0} == 1 ]] && { echo "torch required"; exit 1; }
	echo "SKIP: no torch"
	exit 77
fi

out=$(mktemp -d /tmp/nopfs-e2e.XXXXXX)
trap 'rm -rf "$out"' EXIT
rc=0
NOPFS_BUILDDIR=$BUILDDIR "$SRCDIR/benchmarks/e2e/run.sh" --quick --out "$out/results" \
	>"$out/run.txt" 2>&1 || rc=$?
cat "$out/run.txt"
if ((rc != 0)); then
	echo "not ok - benchmarks/e2e/run.sh --quick exited with $rc"
	exit 1
fi
# run.sh took the cluster down: the emulated PFS is unmounted and stopped
state=${NOPFS_CLUSTER_STATE:-/tmp/nopfs-cluster}
if grep -q " $state/pfs fuse" /proc/mounts || pgrep -f "nopfs-pfs .* $state/pfs $state/pfs" >/dev/null; then
	echo "not ok - the emulated PFS of $state is still mounted or running after down"
	exit 1
fi
"$PYTHON" - "$out/results/imagenet-aggregate" "$out/run.txt" <<'PY'
import json, os, sys
regime, run_txt = sys.argv[1], open(sys.argv[2]).read()
def load(config, name):
    return json.load(open(os.path.join(regime, config, name)))
meta = load("plain", "meta.json")
S, E = meta["dataset_bytes"], meta["epochs"]
plain = load("plain", "pfs.json")["bytes_read"]
nopfs = load("nopfs", "pfs.json")["bytes_read"]
noio = load("noio", "pfs.json")["bytes_read"]
report = load("nopfs", "report.json")
probe = report["probe_bytes"]
agents = report["pfs_bytes"] + probe  # the merged report's pfs_bytes leave the probe out
fails = []
# plain reads every sample every epoch
if not 0.99 * E * S <= plain <= 1.02 * E * S:
    fails.append(f"plain read {plain / S:.3f} x S from the PFS, expected {E} x S")
if noio > 65536:
    fails.append(f"the no-I/O run read {noio} bytes from the PFS")
if (nopfs - probe) > 1.02 * S:
    fails.append(f"nopfs read {(nopfs - probe) / S:.3f} x S besides its probe")
# The agents' own count misses what node 0 shares through the PFS (the
# report directory) with the others: its catalog (KBs) and the dataset's
# metadata, read twice by each (its listings, then the whole), at most
# about 400 bytes an entry (a 344-byte entry, its sorted index, its name).
nodes = report["per_node"]
entries = max(n.get("metadata", {}).get("entries", 0) for n in nodes)
shares = (len(nodes) - 1) * 2 * entries * 400
if abs(agents - nopfs) > 0.01 * nopfs + shares:
    fails.append(f"the agents counted {agents} PFS bytes, the emulated PFS {nopfs} "
                 f"(allowed: 1% and {shares} bytes of shared metadata)")
for config in ("plain", "nopfs", "noio"):
    if not any(line.startswith(config + " ") for line in run_txt.splitlines()):
        fails.append(f"no table row for {config}")
targets = [line for line in run_txt.splitlines() if line.startswith("target ")]
if len(targets) != 4:
    fails.append(f"{len(targets)} target lines, expected 4")
for f in fails:
    print("not ok -", f)
if fails:
    sys.exit(1)
print(f"ok - the emulated PFS counted plain {plain / S:.3f} x S ({E} epochs), nopfs "
      f"{nopfs / S:.3f} x S ({(nopfs - probe) / S:.3f} x S besides its probe; the "
      f"agents counted {agents / S:.3f} x S), no I/O {noio} bytes")
PY
