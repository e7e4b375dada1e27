"""--verify: a copy whose bytes are not the sample's is not served. The
agent's SSD tier is filled, then damaged on disk (one byte in every 4 KiB
changed, as a failing device or a stray writer would); an unmodified
pipeline then reads the dataset twice through the agent. With --verify
every sample it reads has the file's bytes (SHA-256 of each), and the
report counts the copies that did not have their CRC32C as mismatched,
by source (ssd), read from the PFS again and put back right in the tier:
the second epoch finds the tier repaired (at most one bad copy a sample). Without --verify the same damage
reaches the pipeline: the check is what keeps the bytes right."""
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def damage(ssd):
    """Change one byte in every 4 KiB of the SSD tier's file(s); returns bytes changed."""
    changed = 0
    for root, _, files in os.walk(ssd):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "r+b") as f:
                size = os.fstat(f.fileno()).st_size
                for offset in range(100, size, 4096):
                    f.seek(offset)
                    byte = f.read(1)
                    f.seek(offset)
                    f.write(bytes([byte[0] ^ 0x5a]))
                    changed += 1
    return changed


harness.require_torch()
ws = harness.Workspace(samples=600, classes=6)
agent = None
try:
    S = ws.dataset_bytes
    for verify in (True, False):
        agent = harness.Agent(ws, f"verify-{verify}", seed=3, epochs=2, world_size=2,
                              ranks=[0, 1], tiers=[f"ssd:{ws.ssd}:{S + S // 10}"],
                              extra=["--stage-window", "4"], token=secrets.token_hex(16),
                              verify=verify)
        deadline = time.time() + 120
        while not harness.filled(agent):
            assert time.time() < deadline, "the SSD tier was not filled in 120 s"
            time.sleep(0.2)
        changed = damage(ws.ssd)
        assert changed > 500, changed
        ranks = [harness.train(agent, ws, rank, 2, seed=3, epochs=2) for rank in (0, 1)]
        harness.wait_all([p for p, _ in ranks])
        outs = [out for _, out in ranks]
        if verify:
            checked = harness.verify(ws, outs, 600 * 2)
            assert agent.stop() == 0
            report = agent.read_report()
            agent = None
            v = report["verify"]
            assert v["on"] and v["mismatched"]["ssd"]["samples"] > 0, v
            assert v["mismatched_copies"] == v["mismatched"]["ssd"]["samples"], v
            # each damaged sample once: the PFS's bytes went back into the tier
            assert v["mismatched"]["ssd"]["samples"] <= 600, v
            assert v["checked"]["samples"] >= 500, v
            print(f"--verify: {checked} samples correct after {changed} bytes of the SSD "
                  f"tier were changed; {v['mismatched']['ssd']['samples']} copies from it did "
                  f"not match and were read from the PFS again; {v['checked']['samples']} "
                  f"copies checked, {v['recorded']['samples']} checksums recorded")
        else:
            try:
                harness.verify(ws, outs, 600 * 2)
            except AssertionError as wrong:
                print(f"without --verify: the damage reached the pipeline ({wrong})")
            else:
                raise AssertionError("without --verify the damaged tier was served right: "
                                     "the test does not damage what it should")
            assert agent.stop() == 0
            assert agent.read_report()["verify"]["on"] is False
            agent = None
finally:
    if agent:
        agent.kill()
    ws.cleanup()
