"""nopfs.report on files that are not job reports: each is refused with a
message naming the file and the key; a good one loads, and the command line
(python3 -m nopfs.report) prints its summary or names the bad file."""
import copy
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyenv  # noqa: E402

import nopfs.report  # noqa: E402

GOOD = {
    "job_id": "42", "dataset": "/pfs/data", "dataset_bytes": 2_000_000, "samples": 100,
    "epochs": 3, "world_size": 4, "nodes_expected": 2, "nodes_reported": [0, 1],
    "nodes_missing": [], "pfs_bytes": 2_100_000, "probe_bytes": 50_000,
    "vs_dataset": 1.05, "vs_naive": 0.35,
    "delivered": {s: {"samples": n, "bytes": n * 20_000}
                  for s, n in (("staging", 0), ("ram", 200), ("ssd", 0), ("peer", 80),
                               ("pfs", 20))},
    "delivered_total": {"samples": 300, "bytes": 6_000_000},
    "delivered_staged": {"samples": 250, "bytes": 5_000_000},
    "stall": {"requests": 3, "seconds": 0.5, "max_seconds": 0.25},
    "fallbacks": {}, "problems": [], "per_node": [{}, {}],
}

root = tempfile.mkdtemp(prefix="nopfs-report-test-")
fails = 0


def write(name, data):
    path = os.path.join(root, name)
    with open(path, "w") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))
    return path


def refused(name, data, words):
    global fails
    path = write(name, data)
    try:
        nopfs.report.load(path)
    except nopfs.report.ReportError as e:
        if path in str(e) and all(w in str(e) for w in words):
            print(f"ok - {name}: {e}")
            return
        print(f"not ok - {name}: the message '{e}' lacks {path} or {words}")
    else:
        print(f"not ok - {name}: loaded")
    fails += 1


try:
    lazy = subprocess.run([sys.executable, "-c", "import nopfs, sys; nopfs.report.load; "
                           "assert 'torch' not in sys.modules; nopfs.foo"],
                          capture_output=True, text=True)
    assert lazy.returncode == 1 and lazy.stderr.strip().endswith(
        "AttributeError: module 'nopfs' has no attribute 'foo'"), lazy.stderr[-2000:]
    print("ok - import nopfs: nopfs.report without torch; an unknown name is an AttributeError")
    good = nopfs.report.load(write("good.json", GOOD))
    assert good.job_id == "42" and good.vs_naive == 0.35 and good.complete
    assert good.delivered_by_source()["peer"] == 80 and good.delivered_share("ram") == 200 / 300
    lines = good.summary().splitlines()
    assert lines[0] == "job 42 on 2 nodes: 100 samples, 2.0 MB, 3 epochs", lines
    assert lines[2] == ("delivered 300 samples: 66.7% node RAM, 0.0% node SSD, 26.7% other "
                        "nodes, 6.7% PFS, 0.0% already staged when asked (origin not "
                        "recorded)"), lines
    assert lines[-1] == "problems: none", lines
    print("ok - a job report loads; its figures and summary")

    refused("not-json.json", "{", ["not JSON"])
    refused("array.json", [], ["not a JSON object"])
    refused("node.json", {"node": 0, "job_id": "42"}, ["node report", "--merge"])
    for key in ("vs_naive", "per_node", "problems"):
        bad = copy.deepcopy(GOOD)
        del bad[key]
        refused(f"no-{key}.json", bad, [f"'{key}'", "missing"])
    bad = copy.deepcopy(GOOD)
    bad["pfs_bytes"] = "many"
    refused("string-bytes.json", bad, ["'pfs_bytes'"])
    bad = copy.deepcopy(GOOD)
    del bad["delivered"]["ssd"]
    refused("no-ssd.json", bad, ["'delivered.ssd'"])
    bad = copy.deepcopy(GOOD)
    bad["problems"] = ["x", 3]
    refused("problem.json", bad, ["'problems.1'"])
    bad = copy.deepcopy(GOOD)
    bad["stall"]["seconds"] = None
    refused("stall.json", bad, ["'stall.seconds'"])

    cli = subprocess.run([sys.executable, "-m", "nopfs.report", os.path.join(root, "good.json"),
                          os.path.join(root, "stall.json")], capture_output=True, text=True)
    if cli.returncode == 1 and "problems: none" in cli.stdout and "stall.json" in cli.stderr:
        print("ok - python3 -m nopfs.report: the good summary, the bad file named, exit 1")
    else:
        print(f"not ok - python3 -m nopfs.report: {cli.returncode} {cli.stdout} {cli.stderr}")
        fails += 1
finally:
    subprocess.run(["rm", "-rf", root])
sys.exit(1 if fails else 0)
