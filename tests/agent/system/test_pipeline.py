"""An unmodified torch pipeline (ImageFolder + DistributedSampler + DataLoader,
2 local ranks, 2 workers each, 3 epochs) under the interposer: every byte is
right, the PFS is read about once per sample, the report adds up, and SIGTERM
drains within 2 s leaving nothing behind."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.require_torch()
ws = harness.Workspace(samples=3000, classes=30)
agent = None
try:
    S = ws.dataset_bytes
    # RAM holds a third of the dataset, the SSD tier the rest: it fits on the node.
    # Node 0 (the only one here) also writes the job report.
    merged_path = os.path.join(ws.root, "job-report.json")
    agent = harness.Agent(ws, "pipeline", seed=42, epochs=3, world_size=2, ranks=[0, 1],
                          tiers=[f"ram:{S // 3}", f"ssd:{ws.ssd}:{S}"],
                          extra=["--merged-report", merged_path])
    ranks = [harness.train(agent, ws, rank, 2, seed=42, epochs=3) for rank in (0, 1)]
    harness.wait_all([p for p, _ in ranks])
    per_rank = (len(ws.paths) + 1) // 2
    checked = harness.verify(ws, [out for _, out in ranks], 2 * per_rank * 3)
    assert agent.stop() == 0, "agent exit status"
    assert agent.stop_seconds < 2, f"drain took {agent.stop_seconds:.2f} s"
    report = agent.read_report()
    pfs = report["pfs"]["bytes"] - report["pfs"]["probe_bytes"]
    assert pfs <= 1.02 * S, f"PFS read {pfs / S:.3f} x S"
    assert harness.delivered(report) == checked, (harness.delivered(report), checked)
    assert report["stream"]["mismatched_requests"] == 0, report["stream"]
    assert report["stream"]["matched_deliveries"] == checked, report["stream"]
    assert sum(report["fallbacks"].values()) == 0, report["fallbacks"]
    staged = sum(v["samples"] for v in report["delivered_staged"].values())
    assert staged > checked // 2, f"only {staged} of {checked} from staged copies"
    filled = sum(t["filled"]["samples"] for t in report["tiers"])
    planned = sum(t["planned_samples"] for t in report["tiers"])
    assert filled <= planned and planned == len(ws.paths), (filled, planned)
    assert not agent.leftovers(), agent.leftovers()
    # The job report of this one node: the same figures, and nopfs-report reads it.
    job = harness.read_merged_report(merged_path)
    assert job["pfs_bytes"] == pfs, (job["pfs_bytes"], pfs)
    assert job["probe_bytes"] == report["pfs"]["probe_bytes"], job["probe_bytes"]
    assert job["nodes_reported"] == [0] and job["nodes_missing"] == [], job
    assert job["delivered_total"]["samples"] == checked, job["delivered_total"]
    assert job["problems"] == [], job["problems"]
    assert job["per_node"] == [report], "per_node differs from the node's report"
    summary = harness.report_summary(merged_path)
    assert f"nopfs: job {agent.job_id} on 1 node:" in summary, summary
    # The RDMA devices reported are the kernel's (sysfs, read independently).
    sysfs = "/sys/class/infiniband"
    kernel = sorted(os.listdir(sysfs)) if os.path.isdir(sysfs) else []
    rdma = report["rdma"]
    assert sorted(d["name"] for d in rdma["devices"]) == kernel, (rdma, kernel)
    active = sum(p["state"] == "active" for d in rdma["devices"] for p in d["ports"])
    assert rdma["active_ports"] == active, rdma
    print(f"{checked} samples checked; PFS {pfs / S:.3f} x S; "
          f"{staged} from staged copies; stall {report['stall']['seconds']:.3f} s over "
          f"{report['stall']['requests']} requests; ready in {agent.ready_seconds:.2f} s; "
          f"drained in {agent.stop_seconds:.2f} s; RDMA devices {kernel or 'none'}")
except Exception:
    if agent:
        print(open(agent.log).read()[-4000:])
    raise
finally:
    if agent:
        agent.kill()
    ws.cleanup()
