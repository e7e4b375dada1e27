"""--val-dataset: a validation pass after every epoch, planned. The unmodified
script (2 ranks, 3 epochs) reads a second dataset after each epoch through
DistributedSampler(shuffle=False), then, in a second job, the whole set on
every rank (--val-sampler all). Every byte of both sets is right (SHA-256 of
each file), the node keeps its ranks' share of the validation set in RAM
(planned with the training samples in the same room), later passes read
it from memory, and the job reads the PFS at most 1.02 x (S + S_val)."""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

EPOCHS = 3


def digests(root):
    """The SHA-256 of each sample of @root in ImageFolder's order (as Workspace.rescan)."""
    paths = [os.path.join(root, cls, name) for cls in sorted(os.listdir(root))
             for name in sorted(os.listdir(os.path.join(root, cls))) if name.endswith(".JPEG")]
    return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths], \
        sum(os.path.getsize(p) for p in paths)


def check(outs, train, val):
    """Every line's bytes right; the number of training and validation lines read."""
    lines = {"train": 0, "val": 0}
    for out in outs:
        for line in open(out):
            fields = line.split()
            kind, (epoch, index, _, digest) = ("val", fields[1:]) if fields[0] == "val" \
                else ("train", fields)
            expected = (val if kind == "val" else train)[int(index)]
            assert digest == expected, f"{kind} sample {index} in epoch {epoch}: wrong bytes"
            lines[kind] += 1
    return lines


harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
agent = None
try:
    val_root = os.path.join(ws.root, "val")
    subprocess.run([harness.PYTHON, harness.MAKE_DATASET, val_root, "--samples", "200",
                    "--classes", "4", "--mean", "110K", "--sd", "20K"], check=True,
                   stdout=subprocess.DEVNULL)
    train, S = digests(ws.data)
    val, S_val = digests(val_root)
    for sampler, per_rank in (("distributed", 100), ("all", 200)):
        extra = ["--val-dataset", val_root] + (["--val-sampler", "all"] if sampler == "all"
                                                 else [])
        agent = harness.Agent(ws, f"val-{sampler}", seed=5, epochs=EPOCHS, world_size=2,
                              ranks=[0, 1], tiers=[f"ram:{(S + S_val) * 11 // 10}"], extra=extra)
        runs = [harness.train(agent, ws, rank, 2, seed=5, epochs=EPOCHS,
                              extra=["--val-data", val_root]
                              + (["--val-all"] if sampler == "all" else []))
                for rank in (0, 1)]
        harness.wait_all([p for p, _ in runs])
        lines = check([out for _, out in runs], train, val)
        assert lines == {"train": 600 * EPOCHS, "val": 2 * per_rank * EPOCHS}, lines
        assert agent.stop() == 0
        report = agent.read_report()
        agent = None
        v = report["val"]
        pfs = report["pfs"]["bytes"] - report["pfs"]["probe_bytes"]
        assert v["sampler"] == sampler and v["samples"] == 200, v
        assert v["share"]["samples"] == 200 and v["kept"]["samples"] == 200, v
        assert v["requests"] == 2 * per_rank * EPOCHS, v
        assert v["filled"]["bytes"] <= S_val and v["delivered"]["pfs"]["samples"] == 0, v
        # the first pass fills the node's share; the later ones read it from memory
        assert v["delivered"]["ram"]["samples"] == v["requests"], v
        assert pfs <= 1.02 * (S + S_val), (pfs, S, S_val)
        merged = os.path.join(ws.root, f"merged-{sampler}.json")
        subprocess.run([harness.REPORT, "--merge", merged,
                        os.path.join(ws.root, f"report-val-{sampler}.json")],
                       check=True, capture_output=True)
        summary = harness.report_summary(merged)
        assert "nopfs: validation set (" in summary, summary
        print(f"{sampler}: {lines['train']} training and {lines['val']} validation samples "
              f"right; the node kept its share ({v['kept']['bytes']} bytes) and served "
              f"{v['delivered']['ram']['samples']} of {v['requests']} validation reads from "
              f"memory; PFS {pfs / (S + S_val):.3f} x (S + S_val)")
finally:
    if agent:
        agent.kill()
    ws.cleanup()
