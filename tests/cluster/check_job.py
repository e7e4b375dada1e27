"""Check a nopfs job on the test cluster: every sample the ranks read (the
lines tests/agent/system/train_script.py writes) has the dataset's bytes, and, given the
job report, that it accounts for them.

usage: check_job.py --data DIR --outs GLOB --samples N [--report FILE] [--pfs-bound X]
                    [--pfs-watch FILE] [--own-reads N] [--val-data DIR --val-samples N]
--pfs-bound (x dataset, default 1.5) applies when no peer failed. --pfs-watch:
pfs_watch.py's independent count of the dataset's reads, which must agree
with the agents' own (job reads plus probe) within 1%; of the
probe, it may see one node's share only: the agents start together,
their probes open the same files at the same moments, and inotify(7)
merges identical events that follow each other unread. --own-reads: the
reads the tasks made from the PFS themselves (tasks started before their
agents served), which the agents did not deliver. --val-data: the validation
set whose lines ("val EPOCH INDEX LABEL DIGEST") the script wrote, --val-samples
of them; its bytes add to S in --pfs-bound, and the report's "val" must account
for every one of its reads.
"""
import argparse
import glob
import hashlib
import json
import os

from torchvision.datasets import ImageFolder

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--outs", required=True)
parser.add_argument("--samples", type=int, required=True)
parser.add_argument("--report")
parser.add_argument("--pfs-bound", type=float, default=1.5)
parser.add_argument("--pfs-watch")
parser.add_argument("--own-reads", type=int, default=0)
parser.add_argument("--val-data")
parser.add_argument("--val-samples", type=int, default=0)
args = parser.parse_args()

def image_folder(root):
    return ImageFolder(root, loader=lambda p: p, is_valid_file=lambda p: p.endswith(".JPEG"))


ds = image_folder(args.data)
S = sum(os.path.getsize(path) for path, _ in ds.samples)
val_ds = image_folder(args.val_data) if args.val_data else None
S_val = sum(os.path.getsize(path) for path, _ in val_ds.samples) if val_ds else 0
digests = {}
checked = val_checked = 0
for out in sorted(glob.glob(args.outs)):
    for line in open(out):
        fields = line.split()
        which = ds
        if fields[0] == "val":
            assert val_ds, f"{out}: a validation line without --val-data"
            which, fields = val_ds, fields[1:]
        epoch, index, label, digest = fields
        i = int(index)
        key = (which is val_ds, i)
        if key not in digests:
            digests[key] = hashlib.sha256(open(which.samples[i][0], "rb").read()).hexdigest()
        assert digest == digests[key], f"{out}: {'validation ' if key[0] else ''}sample {i}: wrong bytes"
        if which is val_ds:
            val_checked += 1
        else:
            checked += 1
assert checked == args.samples, f"{checked} samples read, expected {args.samples}"
assert val_checked == args.val_samples, (
    f"{val_checked} validation samples read, expected {args.val_samples}")
if not args.report:
    print(f"ok - {checked} samples correct")
    raise SystemExit(0)

report = json.load(open(args.report))
nodes = report["nodes_expected"]
assert report["nodes_reported"] == list(range(nodes)), f"nodes reported: {report['nodes_reported']}"
assert report["nodes_missing"] == [], report["nodes_missing"]
assert report["dataset_bytes"] == S, (report["dataset_bytes"], S)
delivered = report["delivered_total"]["samples"]
assert delivered + args.own_reads == checked, (
    f"the agents delivered {delivered} of the {checked} samples read, the tasks read "
    f"{args.own_reads} themselves; problems: {report['problems']}")
pfs = report["pfs_bytes"]
peers = [n.get("peers") or {} for n in report["per_node"]]
failures = sum(p.get("timeouts", 0) + p.get("errors", 0) for p in peers)
if failures == 0:
    assert pfs <= args.pfs_bound * (S + S_val), (
        f"the job read {pfs / (S + S_val):.2f} x {'(S + S_val)' if S_val else 'S'} from the PFS")
if val_ds:
    v = report["val"]
    assert v["requests"] == val_checked, (v, val_checked)
    assert v["bytes"] == S_val, (v["bytes"], S_val)
watched = ""
if args.pfs_watch:
    watch = json.load(open(args.pfs_watch))
    agents = pfs + report["probe_bytes"]
    fewest = pfs + report["probe_bytes"] / max(1, len(report["per_node"]))
    assert 0.99 * fewest <= watch["bytes"] <= 1.01 * agents, (
        f"inotify saw {watch['bytes']} bytes opened on the PFS, the agents report {agents} "
        f"({pfs} for the job, {report['probe_bytes']} for the probe)")
    watched = (f"; inotify independently: {watch['opens']} opens, "
               f"{(watch['bytes'] - report['probe_bytes']) / S:.2f} x S for the job")
if val_ds:
    v = report["val"]
    print(f"ok - {val_checked} validation samples correct, {v['delivered']['ram']['samples']} "
          f"of them from the nodes' memory; the job's PFS reads {v['pfs_vs_union']:.3f} x "
          f"(S + S_val)")
print(f"ok - {checked} samples correct; {nodes} nodes reported; PFS read {pfs / S:.2f} x S "
      f"({report['vs_naive']:.2f} x the naive loader){watched}; {failures} peer failures; "
      f"problems: {report['problems'] or 'none'}")
