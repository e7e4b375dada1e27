"""A C/MPI job (benchmarks/e2e/train_mpi, 2 ranks under mpirun, 2 epochs)
under the interposer: its plain open/read/close of every sample is served
by the agent from staged copies in the ranks' exact streams, with the files'
sizes and checksums, the PFS read about once per sample, and nothing falls
back.

mpirun does not set RANK or SLURM_PROCID, so each rank gets RANK from Open
MPI's OMPI_COMM_WORLD_RANK (a shell in front of the unchanged program), as
srun's SLURM_PROCID would give it."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TRAIN = os.path.join(harness.TOP_BUILDDIR, "benchmarks", "e2e", "train_mpi")
MPIRUN = shutil.which("mpirun")
if not MPIRUN:
    harness.skip("mpirun not found (Debian package openmpi-bin)")
if not os.path.exists(TRAIN):
    harness.skip(f"{TRAIN} not built (configure found no MPI)")

SEED, EPOCHS, WORLD = 5, 2, 2


def checksum(path):
    """train_mpi's (and train.py's) per-sample checksum of a file."""
    with open(path, "rb") as f:
        data = f.read()
    return int.from_bytes(data[:8], "little") ^ int.from_bytes(data[-8:], "little")


ws = harness.Workspace(samples=600, classes=6, mean="16K", sd="4K")
agent = None
try:
    S = ws.dataset_bytes
    agent = harness.Agent(ws, "mpi", seed=SEED, epochs=EPOCHS, world_size=WORLD, ranks=[0, 1],
                          tiers=[f"ram:{S}"])
    env = {k: v for k, v in agent.env().items() if not k.startswith("SLURM_")}
    preload = env.pop("LD_PRELOAD")  # the ranks', not mpirun's
    trace = os.path.join(ws.root, "trace-%r")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "plm", "isolated",
           "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
           "--mca", "oob_tcp_if_include", "lo", "-np", str(WORLD),
           "sh", "-c", 'RANK=$OMPI_COMM_WORLD_RANK LD_PRELOAD="$0" exec "$@"', preload,
           TRAIN, "--data", ws.data, "--seed", str(SEED), "--epochs", str(EPOCHS),
           "--batch-size", "16", "--trace", trace]
    done = subprocess.run(cmd, env=env, timeout=120, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, f"mpirun exited with {done.returncode}: {done.stderr}"
    per_rank = (len(ws.paths) + WORLD - 1) // WORLD
    checked = 0
    for rank in range(WORLD):
        lines = [line.split() for line in open(trace.replace("%r", str(rank)))]
        assert len(lines) == EPOCHS * per_rank, f"rank {rank}: {len(lines)} samples read"
        for epoch, index, size in lines:
            want = os.path.getsize(ws.paths[int(index)])
            assert int(size) == want, f"rank {rank} epoch {epoch} sample {index}: {size} bytes"
        # The checksum of the bytes the rank was served is that of the files.
        want = sum(checksum(ws.paths[int(index)]) for _, index, _ in lines) & ((1 << 64) - 1)
        end = re.search(rf"^train_mpi: rank {rank}/{WORLD}: .* "
                        rf"\(files, checksum ([0-9a-f]{{16}})\)$", done.stderr, re.M)
        assert end and int(end.group(1), 16) == want, f"rank {rank}: {done.stderr}"
        checked += len(lines)
    assert agent.stop() == 0, "agent exit status"
    report = agent.read_report()
    pfs = report["pfs"]["bytes"] - report["pfs"]["probe_bytes"]
    assert pfs <= 1.02 * S, f"PFS read {pfs / S:.3f} x S"
    assert harness.delivered(report) == checked, (harness.delivered(report), checked)
    assert report["stream"]["mismatched_requests"] == 0, report["stream"]
    assert report["stream"]["matched_deliveries"] == checked, report["stream"]
    assert sum(report["fallbacks"].values()) == 0, report["fallbacks"]
    staged = sum(v["samples"] for v in report["delivered_staged"].values())
    assert staged > checked // 2, f"only {staged} of {checked} from staged copies"
    assert not agent.leftovers(), agent.leftovers()
    print(f"{checked} samples read by 2 MPI ranks through the interposer; PFS {pfs / S:.3f} x S; "
          f"{staged} from staged copies; stall {report['stall']['seconds']:.3f} s over "
          f"{report['stall']['requests']} requests")
except Exception:
    if agent:
        print(open(agent.log).read()[-4000:])
    raise
finally:
    if agent:
        agent.kill()
    ws.cleanup()
