"""nopfs.report: load and summarise nopfs job reports.

A job report is the JSON file the job's agents write at the end of a job
(--nopfs-report, default ./nopfs-JOBID.json), the node reports merged by
nopfs-report --merge:

    r = nopfs.report.load("nopfs-1234.json")
    print(r.summary())
    r.vs_naive                    # PFS bytes / (epochs x dataset bytes)
    r.delivered_share("ram")      # share of the delivered samples from node RAM

python3 -m nopfs.report FILE... prints the summary of each.
"""
import json
import sys

#: The sources of delivered samples, as the report names them.
SOURCES = ("staging", "ram", "ssd", "peer", "pfs")
_SOURCE_LABELS = {
    "ram": "node RAM",
    "ssd": "node SSD",
    "peer": "other nodes",
    "pfs": "PFS",
    "staging": "already staged when asked (origin not recorded)",
}

# The keys a job report must have, with their types.
_INT = (int,)
_NUMBER = (int, float)
_TYPE_NAMES = {_INT: "an integer", _NUMBER: "a number", (str,): "a string",
               (list,): "an array", (dict,): "an object"}
_KEYS = {
    "job_id": (str,), "dataset": (str,), "dataset_bytes": _INT, "samples": _INT,
    "epochs": _INT, "world_size": _INT, "nodes_expected": _INT, "nodes_reported": (list,),
    "nodes_missing": (list,), "pfs_bytes": _INT, "probe_bytes": _INT,
    "vs_dataset": _NUMBER, "vs_naive": _NUMBER, "delivered": (dict,),
    "delivered_total": (dict,), "delivered_staged": (dict,), "stall": (dict,),
    "fallbacks": (dict,), "problems": (list,), "per_node": (list,),
}


class ReportError(ValueError):
    """A file that is not a job report; the message names the file and the key."""


def _check(data, name):
    if not isinstance(data, dict):
        raise ReportError(f"{name}: not a JSON object")
    if "per_node" not in data and "node" in data:
        raise ReportError(f"{name}: a node report, not a job report (merge the node reports "
                          "with nopfs-report --merge OUT FILE...)")
    for key, types in _KEYS.items():
        if key not in data:
            raise ReportError(f"{name}: key '{key}' is missing")
        if not isinstance(data[key], types) or isinstance(data[key], bool):
            raise ReportError(f"{name}: key '{key}' is not {_TYPE_NAMES[types]}")
    for source in SOURCES:
        counts = data["delivered"].get(source)
        if not isinstance(counts, dict) or not isinstance(counts.get("samples"), int) \
                or not isinstance(counts.get("bytes"), int):
            raise ReportError(f"{name}: key 'delivered.{source}' is not "
                              "{samples, bytes}")
    for key in ("delivered_total", "delivered_staged"):
        if not isinstance(data[key].get("samples"), int):
            raise ReportError(f"{name}: key '{key}.samples' is not an integer")
    for key, types in (("requests", _INT), ("seconds", _NUMBER), ("max_seconds", _NUMBER)):
        if not isinstance(data["stall"].get(key), types):
            raise ReportError(f"{name}: key 'stall.{key}' is not a number")
    for i, problem in enumerate(data["problems"]):
        if not isinstance(problem, str):
            raise ReportError(f"{name}: key 'problems.{i}' is not a string")


def _bytes(n):
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("kB", "MB", "GB", "TB", "PB", "EB"):
        value /= 1000
        if value < 1000 or unit == "EB":
            return f"{value:.1f} {unit}"


class Report:
    """A job report: the JSON object as data, and its main figures as attributes."""

    def __init__(self, data, name="report"):
        _check(data, name)
        self.data = data
        self.name = name

    def __getattr__(self, key):
        data = self.__dict__.get("data")
        if data is not None and key in data:
            return data[key]
        raise AttributeError(f"{self.__dict__.get('name', 'report')}: no key '{key}'")

    @property
    def delivered_samples(self):
        return self.data["delivered_total"]["samples"]

    def delivered_by_source(self):
        """{source: samples delivered from it} over the whole job."""
        return {source: self.data["delivered"][source]["samples"] for source in SOURCES}

    def delivered_share(self, source):
        """The share (0..1) of the delivered samples that came from @source."""
        if source not in SOURCES:
            raise ValueError(f"source {source!r}: one of {', '.join(SOURCES)}")
        total = self.delivered_samples
        return self.data["delivered"][source]["samples"] / total if total else 0.0

    @property
    def complete(self):
        """Every node of the job reported and no problem was noted."""
        return not self.data["nodes_missing"] and not self.data["problems"]

    def summary(self):
        """A few lines for people, as nopfs-report prints them."""
        d = self.data
        nodes = d["nodes_expected"]
        reported = len(d["nodes_reported"])
        lines = [f"job {d['job_id']} on {nodes} node{'' if nodes == 1 else 's'}"
                 + (f" ({reported} reported)" if reported != nodes else "")
                 + f": {d['samples']} samples, {_bytes(d['dataset_bytes'])}, "
                 f"{d['epochs']} epochs",
                 f"PFS read {_bytes(d['pfs_bytes'])} = {d['vs_dataset']:.2f} x dataset "
                 f"(naive loader: {float(d['epochs']):.2f} x dataset, so {d['vs_naive']:.2f}"
                 f" x naive); probe read {_bytes(d['probe_bytes'])} more"]
        replans = d.get("replans", 0)
        if replans:
            lines.append(f"the agents planned for {replans} later step"
                         f"{'' if replans == 1 else 's'} with other options (\"replans\" per "
                         "node); the dataset and epochs above are the last plan's")
        total = self.delivered_samples
        if total:
            shares = ", ".join(f"{100.0 * self.delivered_share(s):.1f}% {_SOURCE_LABELS[s]}"
                               for s in ("ram", "ssd", "peer", "pfs", "staging"))
            lines.append(f"delivered {total} samples: {shares}")
            staged = d["delivered_staged"]["samples"]
            lines.append(f"of these, tasks opened {staged} staged copies themselves and asked "
                         f"the agent for {total - staged}")
        else:
            lines.append("delivered 0 samples")
        stall = d["stall"]
        lines.append(f"stalls: {stall['requests']} requests waited {stall['seconds']:.2f} s "
                     f"in all, {stall['max_seconds'] * 1e3:.1f} ms at most")
        if d["problems"]:
            lines += [f"problem: {p}" for p in d["problems"]]
        else:
            lines.append("problems: none")
        return "\n".join(lines)


def load(path):
    """The job report in the file @path; ReportError when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not JSON: {e}") from None
    return Report(data, str(path))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m nopfs.report FILE...\n"
              "Print the summary of each nopfs job report FILE.")
        return 0 if argv else 2
    rc = 0
    for path in argv:
        try:
            report = load(path)
        except (OSError, ReportError) as e:
            print(f"nopfs.report: {e}", file=sys.stderr)
            rc = 1
            continue
        if len(argv) > 1:
            print(f"== {path}")
        print(report.summary())
    return rc


if __name__ == "__main__":
    sys.exit(main())
