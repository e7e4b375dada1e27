#!/usr/bin/env python3
"""Analyze the end-to-end benchmark's results.

usage: analyze.py RESULTS [--out DIR] [--no-plot] [--strict]

RESULTS/REGIME/CONFIG/ holds one run, or RESULTS/REGIME/CONFIG/run-K/ (K = 1,
2, ...) one each of repeated runs, whose figures are then medians with their
spread (lowest-highest), and whose ratios to another configuration's are
taken run by run (run K of each, which ran in the same round):
  rank-*.csv   benchmarks/e2e/train.py's per-batch rows, one file per rank
               (rank,epoch,batch,samples,bytes,t_request,t_ready,t_done);
  meta.json    {"dataset_bytes": S, "samples": F, "epochs": E, "nodes": N,
               "ranks": R, "kind": ..., "regime": ...} (or in RESULTS/REGIME/;
               optional "fits": true|false or "cache_bytes": the cluster's
               cache, else the tiers of report.json say whether S fits;
               optional "start_epoch": K, a job resumed at the script's
               epoch K that runs epochs K to E-1: its epoch 0 is K;
               optional "fast_pfs": true, a PFS that is not the bottleneck:
               nopfs's whole job is held to 1.02 x plain's instead of the
               speed-up; optional "val_bytes", "val_samples": a validation
               set read after every epoch (its batches are rows of that
               epoch), whose bytes add to S in the PFS target and the fit);
  pfs.json     optional: {"bytes_read": N} measured by the emulated PFS for
               the run (the ground truth of PFS traffic);
  report.json  optional: nopfs's merged job report (nopfs runs).
RESULTS/REGIME/sizes.json, optional: {"seed": N, "sizes": [bytes of each
sample in the script's order]}; with it, a regime whose dataset does not fit
gets its partial-cache bound (below).
CONFIG is plain, nopfs or noio (train.py --synthetic), and mpi-plain,
mpi-nopfs, mpi-noio the same with the MPI training program; nopfs-unsaid is
nopfs resumed without --nopfs-start-epoch (the agents find where the ranks
read), held to nopfs's targets.

The partial-cache bound of a regime whose dataset does not fit the cache
(meta.json's cache_bytes, C): the sampler (torch's DistributedSampler,
shuffle=True, the seed, set_epoch(e)) is replayed over the sizes, and each
sample's use after its first is a hit only if a cache kept it since its use
before. With at most C bytes kept at every step, the intervals that end
first, each kept as much as its steps have room for, hold the most bytes
any cache can (a clairvoyant one, evicting by reuse distance, all nodes'
caches as one, parts of samples allowed). What is left each epoch no cache
of C bytes can avoid reading from the PFS, at
the PFS's rate measured by plain (its bytes per epoch over its epochs >= 1
time). An epoch then takes at least max(no-I/O epoch, those reads at that
rate): the reads overlap compute. Needs torch (for the sampler).

Prints one table per regime, then the targets, each as
"target ... : measured ... : met|NOT met|n/a". Epoch time = the last t_done
of the epoch - its first t_request, on the rank where that is longest (the
ranks do not synchronize, so one late rank would otherwise count twice);
batch time = t_done - t_request; stall = the sum of t_ready - t_request per
rank, mean over ranks. Writes DIR/summary.csv, DIR/targets.csv and, with
gnuplot, DIR/e2e.png from DIR/e2e.gp (epoch times per configuration grouped
by regime; CDF of batch times). Exit status: 0, 1 when an input is missing or
malformed (every such file named, what could be analyzed still is), 2 on bad
arguments, 3 with --strict when a target is not met.
"""
import argparse
import csv
import glob
import json
import math
import os
import shutil
import subprocess
import sys

PROGRAM = "analyze.py"
CSV_HEADER = ["rank", "epoch", "batch", "samples", "bytes", "t_request", "t_ready", "t_done"]
CONFIG_ORDER = ["plain", "nopfs", "nopfs-unsaid", "noio", "mpi-plain", "mpi-nopfs",
                "mpi-noio"]
NOPFS_CONFIGS = ["nopfs", "nopfs-unsaid", "mpi-nopfs"]
SOURCES = [("ram", "RAM"), ("ssd", "SSD"), ("peer", "peers"), ("pfs", "PFS"),
           ("staging", "staged")]
META_INTS = ["dataset_bytes", "samples", "epochs", "nodes", "ranks"]
CDF_POINTS = 2000

# the targets
NOIO_SLACK = 1.05      # nopfs epochs >= 1 within 5% of no I/O (of the partial-cache bound)
SPEEDUP = 3.0          # plain / nopfs, epochs >= 1
EPOCH0 = 1.0           # nopfs epoch 0 not slower than plain
PFS_BOUND = 1.02       # PFS bytes / S when the dataset fits
FAST_PFS_SLACK = 1.02  # nopfs / plain, whole job, when the PFS is not the bottleneck


class InputError(Exception):
    """A missing or malformed input file: the message names it."""


def base_of(config):
    """plain, nopfs or noio, for mpi-plain and nopfs-unsaid too."""
    config = config[4:] if config.startswith("mpi-") else config
    return "nopfs" if config == "nopfs-unsaid" else config


def prefix_of(config):
    return "mpi-" if config.startswith("mpi-") else ""


def load_json(path, required):
    if not os.path.exists(path):
        if required:
            raise InputError(f"{path}: missing")
        return None
    try:
        with open(path) as f:
            value = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON ({e})")
    if not isinstance(value, dict):
        raise InputError(f"{path}: not a JSON object")
    return value


def number_at(document, path, keys, kind=(int, float)):
    """The number at the dotted @keys of @document (read from @path)."""
    value = document
    for key in keys.split("."):
        if not isinstance(value, dict) or key not in value:
            raise InputError(f"{path}: key '{keys}' is missing")
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
        raise InputError(f"{path}: key '{keys}' is not a non-negative number")
    return value


def read_meta(regime_dir, config_dir):
    path = os.path.join(config_dir, "meta.json")
    if not os.path.exists(path) and os.path.exists(os.path.join(regime_dir, "meta.json")):
        path = os.path.join(regime_dir, "meta.json")
    meta = load_json(path, True)
    for key in META_INTS:
        number_at(meta, path, key, int)
    if meta["epochs"] < 1 or meta["ranks"] < 1 or meta["samples"] < 1:
        raise InputError(f"{path}: epochs, samples and ranks must be at least 1")
    for key in ("val_bytes", "val_samples"):
        if key in meta:
            number_at(meta, path, key, int)
    if "start_epoch" in meta:
        start = number_at(meta, path, "start_epoch", int)
        if not 0 <= start < meta["epochs"]:
            raise InputError(f"{path}: start_epoch {start} is not below epochs "
                             f"{meta['epochs']}")
    meta["path"] = path
    return meta


def read_rank_csv(path):
    """Rows of one rank's CSV as tuples of numbers."""
    rows = []
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header != CSV_HEADER:
                raise InputError(f"{path}: the header is not {','.join(CSV_HEADER)}")
            for line, row in enumerate(reader, 2):
                if len(row) != len(CSV_HEADER):
                    raise InputError(f"{path} line {line}: {len(row)} fields, expected "
                                     f"{len(CSV_HEADER)}")
                try:
                    rows.append((int(row[0]), int(row[1]), int(row[2]), int(row[3]),
                                 int(row[4]), float(row[5]), float(row[6]), float(row[7])))
                except ValueError:
                    raise InputError(f"{path} line {line}: not numbers: {','.join(row)}")
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    return rows


def percentile(values, fraction):
    """Linear interpolation between the closest ranks of sorted @values."""
    if not values:
        return math.nan
    position = fraction * (len(values) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


class Run:
    """One configuration of one regime."""

    def __init__(self, regime, config, directory, regime_dir):
        self.regime, self.config, self.directory = regime, config, directory
        self.base = base_of(config)
        self.meta = read_meta(regime_dir, directory)
        paths = sorted(glob.glob(os.path.join(directory, "rank-*.csv")))
        if not paths:
            raise InputError(f"{os.path.join(directory, 'rank-*.csv')}: no such files")
        self.rows = []
        for path in paths:
            rows = read_rank_csv(path)
            if not rows:
                raise InputError(f"{path}: no batches")
            self.rows.extend(rows)
        self.report = load_json(os.path.join(directory, "report.json"), False)
        self.pfs = load_json(os.path.join(directory, "pfs.json"), False)
        self.warnings = []
        self.compute()

    def compute(self):
        epochs, spans = {}, {}
        for rank, epoch, _batch, samples, size, t_request, t_ready, t_done in self.rows:
            e = epochs.setdefault(epoch, {"samples": 0, "bytes": 0})
            e["samples"] += samples
            e["bytes"] += size
            span = spans.setdefault((epoch, rank), [t_request, t_done])
            span[0] = min(span[0], t_request)
            span[1] = max(span[1], t_done)
        self.epochs = epochs
        # The ranks do not synchronize (no allreduce): one that ends an epoch
        # late starts the next late. An epoch takes what its slowest rank
        # takes for it, not the span from the first start to the last end.
        self.epoch_time = {}
        for (epoch, _rank), (start, end) in spans.items():
            self.epoch_time[epoch] = max(self.epoch_time.get(epoch, 0.0), end - start)
        # a resumed job's first epoch is its "epoch 0"
        first = self.meta.get("start_epoch", 0)
        self.epoch0 = self.epoch_time.get(first, math.nan)
        later = [t for e, t in self.epoch_time.items() if e > first]
        self.later = sum(later) / len(later) if later else math.nan
        self.total = sum(self.epoch_time.values())
        self.batch_times = sorted(max(r[7] - r[5], 1e-6) for r in self.rows)
        self.p50 = percentile(self.batch_times, 0.50)
        self.p99 = percentile(self.batch_times, 0.99)
        stall = {}
        for r in self.rows:
            stall[r[0]] = stall.get(r[0], 0.0) + (r[6] - r[5])
        self.ranks = sorted(stall)
        self.stall = sum(stall.values()) / len(stall)
        self.read_bytes = sum(r[4] for r in self.rows)
        self.check_complete()
        self.pfs_figures()
        self.sources = self.source_shares()

    def check_complete(self):
        """Every sample of every epoch once across the ranks (the sampler pads
        to a multiple of the ranks, or drops the tail)."""
        meta = self.meta
        if len(self.ranks) != meta["ranks"]:
            self.warnings.append(f"{len(self.ranks)} rank CSVs, meta.json says "
                                 f"{meta['ranks']} ranks")
        if self.ranks != list(range(len(self.ranks))):
            self.warnings.append(f"ranks {self.ranks} are not 0..{len(self.ranks) - 1}")
        first = meta.get("start_epoch", 0)
        missing = [e for e in range(first, meta["epochs"]) if e not in self.epochs]
        if missing:
            self.warnings.append(f"epochs missing: {missing}")
        extra = sorted(e for e in self.epochs if not first <= e < meta["epochs"])
        if extra:
            self.warnings.append(f"epochs outside meta.json's {first} to "
                                 f"{meta['epochs'] - 1}: {extra}")
        ranks, samples = meta["ranks"], meta["samples"]
        # a validation pass: DistributedSampler(shuffle=False), padded
        val = -(-meta.get("val_samples", 0) // ranks) * ranks
        accepted = {-(-samples // ranks) * ranks + val, samples // ranks * ranks + val}
        for e in sorted(self.epochs):
            got = self.epochs[e]["samples"]
            if got not in accepted:
                self.warnings.append(f"epoch {e}: {got} samples, expected "
                                     f"{' or '.join(str(a) for a in sorted(accepted))}")
        self.complete = not self.warnings

    def pfs_figures(self):
        """PFS bytes read by the run, and where the figure comes from."""
        if self.pfs is not None:
            path = os.path.join(self.directory, "pfs.json")
            self.pfs_bytes = number_at(self.pfs, path, "bytes_read", int)
            self.pfs_source = "pfs.json"
        elif self.report is not None:
            path = os.path.join(self.directory, "report.json")
            self.pfs_bytes = number_at(self.report, path, "pfs_bytes", int)
            self.pfs_source = "report"
        elif self.base == "plain":
            self.pfs_bytes = self.read_bytes
            self.pfs_source = "loader"
        elif self.base == "noio":
            self.pfs_bytes = 0
            self.pfs_source = "none"
        else:
            self.pfs_bytes = None
            self.pfs_source = "-"
        self.probe_bytes = 0
        if self.report is not None and "probe_bytes" in self.report:
            path = os.path.join(self.directory, "report.json")
            self.probe_bytes = number_at(self.report, path, "probe_bytes", int)

    def source_shares(self):
        """Share of the bytes delivered by source: {key: fraction}, or None."""
        if self.base == "plain":
            return {"pfs": 1.0}
        if self.base == "noio" or self.report is None:
            return None
        path = os.path.join(self.directory, "report.json")
        counts = {key: number_at(self.report, path, f"delivered.{key}.bytes", int)
                  for key, _label in SOURCES}
        total = sum(counts.values())
        if total == 0:
            return None
        return {key: value / total for key, value in counts.items()}

    def pfs_ratios(self):
        """(x E*S, x S) of the PFS bytes, or (None, None); S includes a
        validation set's bytes."""
        S = self.meta["dataset_bytes"] + self.meta.get("val_bytes", 0)
        E = self.meta["epochs"] - self.meta.get("start_epoch", 0)
        if self.pfs_bytes is None or S == 0:
            return None, None
        return self.pfs_bytes / (E * S), self.pfs_bytes / S


def median(values):
    """The median of the numbers in @values (NaN for none)."""
    values = sorted(v for v in values if v is not None and not math.isnan(v))
    if not values:
        return math.nan
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


class Repeated(Run):
    """Repeated runs of one configuration (CONFIG/run-K/): each figure the
    median over the runs, its lowest and highest in spread."""

    FIGURES = ("epoch0", "later", "total", "p50", "p99", "stall", "read_bytes", "pfs_bytes",
               "probe_bytes")

    def __init__(self, runs):
        first = runs[0]
        self.runs = runs
        self.regime, self.config, self.base = first.regime, first.config, first.base
        self.directory = os.path.dirname(first.directory)
        self.meta, self.report, self.pfs = first.meta, first.report, first.pfs
        self.pfs_source, self.ranks = first.pfs_source, first.ranks
        self.epochs = first.epochs  # the same sampler: the same samples per epoch
        self.spread = {}
        for name in self.FIGURES:
            values = [getattr(run, name) for run in runs]
            if any(v is None for v in values):
                setattr(self, name, None)
                continue
            setattr(self, name, median(values))
            finite = [v for v in values if not math.isnan(v)]
            if finite:
                self.spread[name] = (min(finite), max(finite))
        self.epoch_time = {e: median([run.epoch_time.get(e, math.nan) for run in runs])
                           for e in sorted({e for run in runs for e in run.epoch_time})}
        self.batch_times = sorted(t for run in runs for t in run.batch_times)
        self.sources = None
        if all(run.sources for run in runs):
            keys = set().union(*(run.sources for run in runs))
            self.sources = {key: median([run.sources.get(key, 0.0) for run in runs])
                            for key in keys}
        self.warnings = [f"run {k}: {w}" for k, run in enumerate(runs, 1) for w in run.warnings]
        self.complete = all(run.complete for run in runs)


def paired(a, b, name):
    """@a's figure @name over @b's: (ratio, (lowest, highest) over the runs
    taken in the same rounds, or None when they are not repeated alike)."""
    runs_a, runs_b = getattr(a, "runs", None), getattr(b, "runs", None)
    if runs_a and runs_b and len(runs_a) == len(runs_b):
        ratios = [getattr(x, name) / getattr(y, name) for x, y in zip(runs_a, runs_b)
                  if valid(getattr(x, name), getattr(y, name))]
        if len(ratios) == len(runs_a):
            return median(ratios), (min(ratios), max(ratios))
    return getattr(a, name) / getattr(b, name), None


def spread_text(spread, digits=3):
    """" [runs LOW-HIGH]" for a ratio measured over repeated runs, else ""."""
    return "" if spread is None else f" [runs {spread[0]:.{digits}f}-{spread[1]:.{digits}f}]"


def format_bytes(value):
    if value is None:
        return "-"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


def format_number(value, scale=1.0, digits=3):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value * scale:.{digits}f}"


def format_sources(run):
    if run.base == "noio":
        return "none"
    if run.sources is None:
        return "-"
    return " ".join(f"{label} {100 * run.sources.get(key, 0):.1f}%"
                    for key, label in SOURCES if key in run.sources)


def dataset_fits(runs):
    """(fits: bool or None, why) for a regime."""
    for run in runs:
        meta = run.meta
        if isinstance(meta.get("fits"), bool):
            return meta["fits"], f"{meta['path']} says so"
        if "cache_bytes" in meta:
            cache = number_at(meta, meta["path"], "cache_bytes", int)
            return (meta["dataset_bytes"] + meta.get("val_bytes", 0) <= cache,
                    f"cache {format_bytes(cache)} per meta.json")
    for run in runs:
        if run.report is None or not isinstance(run.report.get("per_node"), list):
            continue
        path = os.path.join(run.directory, "report.json")
        capacity = 0
        for node, report in enumerate(run.report["per_node"]):
            tiers = report.get("tiers") if isinstance(report, dict) else None
            if not isinstance(tiers, list):
                raise InputError(f"{path}: key 'per_node.{node}.tiers' is not an array")
            for t, tier in enumerate(tiers):
                if not isinstance(tier, dict):
                    raise InputError(f"{path}: key 'per_node.{node}.tiers.{t}' is not an object")
                capacity += number_at(tier, path, "capacity", int)
        nodes = len(run.report["per_node"])
        return (run.meta["dataset_bytes"] <= capacity,
                f"tiers of {nodes} nodes hold {format_bytes(capacity)} per {path}")
    return None, "no 'fits' or 'cache_bytes' in meta.json and no report.json"


class Target:
    def __init__(self, regime, what, measured, met):
        self.regime, self.what, self.measured, self.met = regime, what, measured, met

    def verdict(self):
        return "n/a" if self.met is None else ("met" if self.met else "NOT met")

    def line(self):
        return f"target {self.what} : measured {self.measured} : {self.verdict()}"


def valid(*values):
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) and v > 0
               for v in values)


def at_most(regime, what, a, b, figure, bound, missing="n/a"):
    """Target @what: @a's @figure (seconds) over @b's, run by run when
    repeated, at most @bound; @missing when either is not there."""
    x, y = getattr(a, figure), getattr(b, figure)
    if not valid(x, y):
        return Target(regime, what, missing, None)
    ratio, spread = paired(a, b, figure)
    return Target(regime, what, f"{ratio:.3f} x ({x:.3f} s vs {y:.3f} s){spread_text(spread)}",
                  ratio <= bound)


def sampler_streams(samples, ranks, seed, epoch, drop_last=False):
    """Each rank's sample indices in @epoch, as torch's DistributedSampler
    (shuffle=True) gives them: padded to a multiple of @ranks by repeating
    the order's head, or its tail dropped with @drop_last."""
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed + epoch)
    order = torch.randperm(samples, generator=generator).tolist()
    total = samples // ranks * ranks if drop_last else -(-samples // ranks) * ranks
    while len(order) < total:
        order += order[:total - len(order)]
    return [order[r:total:ranks] for r in range(ranks)]


def unavoidable_reads(sizes, ranks, seed, first, epochs, cache):
    """{epoch: bytes no cache of @cache bytes can avoid reading from the PFS}
    for the epochs @first to @epochs - 1 (see the module's text)."""
    import numpy

    last, intervals, read = {}, [], {}
    steps = 0
    for epoch in range(first, epochs):
        streams = sampler_streams(len(sizes), ranks, seed, epoch)
        steps = len(streams[0])
        read[epoch] = 0
        for step in range(steps):
            t = (epoch - first) * steps + step
            for stream in streams:
                k = stream[step]
                read[epoch] += sizes[k]
                if k in last:
                    intervals.append((t, last[k], sizes[k], epoch))
                last[k] = t
    # Held from a use to the next: at most @cache bytes at every step. Taking
    # the intervals that end first, each as much as every step it spans has
    # room for, holds the most bytes any cache can (interval packing).
    room = numpy.full((epochs - first) * steps + 1, float(cache))
    hits = dict.fromkeys(read, 0.0)
    for end, start, size, epoch in sorted(intervals):
        held = min(float(size), room[start:end].min()) if end > start else float(size)
        if held > 0:
            room[start:end] -= held
            hits[epoch] += held
    return {e: read[e] - hits[e] for e in read}


class Bound:
    """A regime's partial-cache bound, or why there is none (.later NaN)."""

    def __init__(self, runs, regime_dir, fits):
        self.later, self.why = math.nan, None
        if fits is not False or not runs:
            return
        by_config = {run.config: run for run in runs}
        plain, noio = by_config.get("plain"), by_config.get("noio")
        meta = runs[0].meta
        path = os.path.join(regime_dir, "sizes.json")
        if plain is None or noio is None or not valid(plain.later, noio.later):
            self.why = "needs plain and noio with 2 epochs or more"
            return
        if "cache_bytes" not in meta:
            self.why = "needs meta.json's cache_bytes"
            return
        document = load_json(path, False)
        sizes = document.get("sizes") if isinstance(document, dict) else None
        if not isinstance(sizes, list) or len(sizes) != meta["samples"] or \
                not all(isinstance(x, int) and x >= 0 for x in sizes) or \
                not isinstance(document.get("seed"), int):
            self.why = f"needs {path} with the seed and {meta['samples']} sizes"
            return
        try:
            import torch  # noqa: F401
        except ImportError:
            self.why = "needs torch for the sampler"
            return
        first = meta.get("start_epoch", 0)
        self.cache = meta["cache_bytes"]
        unavoidable = unavoidable_reads(sizes, meta["ranks"], document["seed"], first,
                                        meta["epochs"], self.cache)
        # the PFS's rate as plain measured it: its epochs >= 1 read the dataset each
        self.rate = sum(sizes) / plain.later
        later = [e for e in unavoidable if e > first]
        self.reads = sum(unavoidable[e] for e in later) / len(later) / sum(sizes)
        self.noio = noio.later
        self.later = sum(max(noio.later, unavoidable[e] / self.rate) for e in later) / len(later)

    def line(self):
        if math.isnan(self.later):
            return f"partial-cache bound: n/a ({self.why})" if self.why else None
        return (f"partial-cache bound: epochs>=1 {self.later:.3f} s = max(no-I/O "
                f"{self.noio:.3f} s, reads no cache of {format_bytes(self.cache)} can avoid: "
                f"{self.reads:.3f} x S per epoch at the PFS's {format_bytes(self.rate)}/s, "
                f"plain's)")


def regime_targets(regime, runs, fits, why, bound=None):
    by_config = {run.config: run for run in runs}
    targets = []
    for name in NOPFS_CONFIGS:
        prefix = prefix_of(name)
        nopfs = by_config.get(name)
        plain = by_config.get(prefix + "plain")
        noio = by_config.get(prefix + "noio") or by_config.get("noio")
        if nopfs is None:
            continue
        # held to the partial-cache bound rather than to no I/O
        partial = bound is not None and not math.isnan(bound.later) and name == "nopfs"
        if partial:
            what = f"{name} epochs>=1 <= {NOIO_SLACK:.2f} x the partial-cache bound"
            if valid(nopfs.later):
                ratio = nopfs.later / bound.later
                each = [r.later / bound.later for r in getattr(nopfs, "runs", None) or ()
                        if valid(r.later)]
                spread = (min(each), max(each)) if len(each) > 1 else None
                targets.append(Target(regime, what, f"{ratio:.3f} x ({nopfs.later:.3f} s vs "
                                      f"{bound.later:.3f} s){spread_text(spread)}",
                                      ratio <= NOIO_SLACK))
            else:
                targets.append(Target(regime, what, "n/a (needs 2 epochs or more)", None))
        elif noio is not None:
            targets.append(at_most(regime, f"{name} epochs>=1 <= {NOIO_SLACK:.2f} x {noio.config}",
                                   nopfs, noio, "later", NOIO_SLACK,
                                   "n/a (needs 2 epochs or more)"))
        if plain is not None and nopfs.meta.get("fast_pfs") is True:
            # A PFS that is not the bottleneck: nopfs must not get in the way.
            targets.append(at_most(regime, f"{name} total <= {FAST_PFS_SLACK:.2f} x "
                                   f"{plain.config} total (fast PFS)", nopfs, plain, "total",
                                   FAST_PFS_SLACK))
        elif plain is not None:
            # Epoch 0 reads the dataset from the PFS in both (its own target
            # follows): the speed-up is that of the epochs after it.
            what = f"{plain.config} / {name} epochs>=1 >= {SPEEDUP:.1f} x"
            if partial and valid(plain.later) and plain.later / bound.later < SPEEDUP:
                # No cache of the cluster's size can give it: the bound's target stands for it.
                targets.append(Target(regime, what, f"n/a (the partial-cache bound allows at "
                                      f"most {plain.later / bound.later:.2f} x: "
                                      f"{plain.later:.3f} s vs {bound.later:.3f} s)", None))
            elif valid(plain.later, nopfs.later, plain.total, nopfs.total):
                ratio, spread = paired(plain, nopfs, "later")
                whole, _ = paired(plain, nopfs, "total")
                targets.append(Target(regime, what, f"{ratio:.2f} x ({plain.later:.3f} s vs "
                                      f"{nopfs.later:.3f} s; over all epochs "
                                      f"{whole:.2f} x){spread_text(spread, 2)}",
                                      ratio >= SPEEDUP))
            else:
                targets.append(Target(regime, what, "n/a", None))
        if plain is not None:
            targets.append(at_most(regime, f"{name} epoch 0 <= {EPOCH0:.2f} x {plain.config} "
                                   "epoch 0", nopfs, plain, "epoch0", EPOCH0))
        what = f"{name} PFS bytes <= {PFS_BOUND:.2f} x S when the dataset fits"
        if nopfs.meta.get("val_bytes"):
            what = (f"{name} PFS bytes <= {PFS_BOUND:.2f} x (S + S_val) when both fit "
                    "(S below: S + S_val)")
        _, x_s = nopfs.pfs_ratios()
        if fits is None:
            targets.append(Target(regime, what, f"n/a ({why})", None))
        elif not fits:
            measured = f"{x_s:.3f} x S" if x_s is not None else "-"
            targets.append(Target(regime, what, f"{measured}; does not fit ({why})", None))
        elif x_s is None:
            targets.append(Target(regime, what, "n/a (no pfs.json or report.json)", None))
        else:
            # The agents' self-benchmark reads a few MB per node once (an
            # admin's bench_cache keeps it for later jobs): not dataset traffic.
            S = nopfs.meta["dataset_bytes"] + nopfs.meta.get("val_bytes", 0)
            less = nopfs.pfs_source == "pfs.json" and nopfs.probe_bytes
            spread = None
            if getattr(nopfs, "runs", None):
                each = [(run.pfs_bytes - (run.probe_bytes if less else 0)) / S
                        for run in nopfs.runs]
                spread = (min(each), max(each))
            if less:
                data = (nopfs.pfs_bytes - nopfs.probe_bytes) / S
                targets.append(Target(regime, what, f"{data:.3f} x S ({nopfs.pfs_source} "
                                      f"{x_s:.3f} x S less the agents' self-benchmark "
                                      f"{nopfs.probe_bytes / S:.3f} x S; fits: {why})"
                                      f"{spread_text(spread)}", data <= PFS_BOUND))
            else:
                targets.append(Target(regime, what, f"{x_s:.3f} x S ({nopfs.pfs_source}; "
                                      f"fits: {why}){spread_text(spread)}",
                                      x_s <= PFS_BOUND))
    return targets


def consistency_warnings(runs):
    """The same sampler and sizes must deliver the same bytes per epoch in
    every configuration of a regime."""
    warnings = []
    reference = next((r for r in runs if r.base == "plain"), runs[0])
    for run in runs:
        if run is reference or prefix_of(run.config) != prefix_of(reference.config):
            continue
        for e in sorted(set(run.epochs) & set(reference.epochs)):
            a, b = reference.epochs[e]["bytes"], run.epochs[e]["bytes"]
            if a != b:
                warnings.append(f"epoch {e}: {run.config} delivered {b} bytes, "
                                f"{reference.config} {a}")
                break
    return warnings


COLUMNS = [("config", 12, "<"), ("epoch0 s", 9, ">"), ("ep>=1 s", 9, ">"),
           ("total s", 9, ">"), ("p50 ms", 8, ">"), ("p99 ms", 8, ">"), ("stall s", 9, ">"),
           ("PFS read", 10, ">"), ("from", 8, "<"), ("xE*S", 6, ">"), ("xS", 6, ">"),
           ("sources", 0, "<")]


def table_line(values):
    return "  ".join(f"{v:{align}{width}}" for v, (_, width, align) in zip(values, COLUMNS))


def print_regime(regime, out):
    runs, targets, fits, why = regime.runs, regime.targets, regime.fits, regime.why
    meta = runs[0].meta
    fit_text = "unknown" if fits is None else ("yes" if fits else "no")
    print(f"== regime {regime.name}: {meta.get('kind', '?')}, "
          f"S = {format_bytes(meta['dataset_bytes'])} ({meta['samples']} samples), "
          f"{'validation set S_val = %s (%d samples), ' % (format_bytes(meta['val_bytes']), meta['val_samples']) if meta.get('val_bytes') else ''}"
          f"E = {meta['epochs']}"
          f"{' resumed at epoch %d' % meta['start_epoch'] if meta.get('start_epoch') else ''}, "
          f"{meta['nodes']} nodes, {meta['ranks']} ranks"
          f"{'; PFS ' + meta['pfs'] if isinstance(meta.get('pfs'), str) else ''}"
          f"{' (the fast one)' if meta.get('fast_pfs') is True else ''}; "
          f"dataset fits: {fit_text} ({why})", file=out)
    print(table_line([c[0] for c in COLUMNS]), file=out)
    for run in runs:
        x_es, x_s = run.pfs_ratios()
        print(table_line([
            run.config, format_number(run.epoch0), format_number(run.later),
            format_number(run.total), format_number(run.p50, 1e3, 1),
            format_number(run.p99, 1e3, 1), format_number(run.stall),
            format_bytes(run.pfs_bytes), run.pfs_source, format_number(x_es, 1, 2),
            format_number(x_s, 1, 2), format_sources(run)]).rstrip(), file=out)
    for run in runs:
        if getattr(run, "runs", None):
            figures = [(label, name) for label, name in
                       (("epoch0", "epoch0"), ("ep>=1", "later"), ("total", "total"))
                       if name in run.spread]
            text = ", ".join(f"{label} {run.spread[name][0]:.3f}-{run.spread[name][1]:.3f} s"
                             for label, name in figures)
            if "pfs_bytes" in run.spread:
                low, high = run.spread["pfs_bytes"]
                text += f", PFS read {format_bytes(low)}-{format_bytes(high)}"
            print(f"  {run.config}: median of {len(run.runs)} runs; lowest-highest: {text}",
                  file=out)
    for run in runs:
        for warning in run.warnings:
            print(f"warning: {run.config}: {warning}", file=out)
    for run in runs[1:]:
        differ = [key for key in META_INTS if run.meta[key] != meta[key]]
        if differ:
            print(f"warning: {run.config}: {run.meta['path']} differs from "
                  f"{meta['path']} in {', '.join(differ)}", file=out)
    for warning in consistency_warnings(runs):
        print(f"warning: {warning}", file=out)
    if regime.bound.line():
        print(regime.bound.line(), file=out)
    for target in targets:
        print(target.line(), file=out)
    print(file=out)


SUMMARY_FIELDS = ["regime", "config", "kind", "nodes", "ranks", "epochs", "samples",
                  "dataset_bytes", "epoch0_s", "epochs_ge1_mean_s", "total_s", "batch_p50_s",
                  "batch_p99_s", "stall_s", "pfs_bytes", "pfs_source", "pfs_x_ES", "pfs_x_S",
                  "share_ram", "share_ssd", "share_peer", "share_pfs", "share_staging",
                  "complete", "runs"]


def csv_number(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.6f}" if isinstance(value, float) else str(value)


def write_summary(path, regimes):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(SUMMARY_FIELDS)
        for regime in regimes:
            for run in regime.runs:
                x_es, x_s = run.pfs_ratios()
                shares = run.sources or {}
                meta = run.meta
                writer.writerow([regime.name, run.config, meta.get("kind", ""), meta["nodes"],
                                 meta["ranks"], meta["epochs"], meta["samples"],
                                 meta["dataset_bytes"]]
                                + [csv_number(v) for v in (run.epoch0, run.later, run.total,
                                                           run.p50, run.p99, run.stall,
                                                           run.pfs_bytes)]
                                + [run.pfs_source, csv_number(x_es), csv_number(x_s)]
                                + [csv_number(shares.get(key, 0.0)) if run.sources else ""
                                   for key, _label in SOURCES]
                                + ["yes" if run.complete else "no",
                                   len(getattr(run, "runs", None) or [run])])


def write_targets(path, regimes):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["regime", "target", "measured", "verdict"])
        for regime in regimes:
            for t in regime.targets:
                writer.writerow([regime.name, t.what, t.measured, t.verdict()])


def gnuplot_text(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def write_plot(directory, regimes):
    """e2e-epochs.dat, e2e-cdf.dat and e2e.gp; renders e2e.png when gnuplot
    is there. Returns a note or None."""
    configs = []
    for regime in regimes:
        for run in regime.runs:
            if run.config not in configs:
                configs.append(run.config)
    with open(os.path.join(directory, "e2e-epochs.dat"), "w") as f:
        for regime in regimes:
            f.write(f"# regime {regime.name}: config, epoch 0, mean of epochs >= 1 (s)\n")
            for run in regime.runs:
                later = "?" if math.isnan(run.later) else f"{run.later:.6f}"
                f.write(f'"{gnuplot_text(run.config)}" {run.epoch0:.6f} {later}\n')
            f.write("\n\n")
    curves = []
    with open(os.path.join(directory, "e2e-cdf.dat"), "w") as f:
        for r, regime in enumerate(regimes):
            for run in regime.runs:
                f.write(f"# {regime.name} {run.config}: batch time (s), fraction of batches\n")
                times = run.batch_times
                step = max(1, len(times) // CDF_POINTS)
                points = list(range(0, len(times), step))
                if points[-1] != len(times) - 1:
                    points.append(len(times) - 1)
                for i in points:
                    f.write(f"{times[i]:.6f} {(i + 1) / len(times):.6f}\n")
                f.write("\n\n")
                curves.append((r, configs.index(run.config), f"{regime.name} {run.config}"))
    plot_epochs = []
    for r, regime in enumerate(regimes):
        titles = ('title "epoch 0"', 'title "epochs >= 1 (mean)"') if r == 0 else ("notitle",) * 2
        plot_epochs.append(f'newhistogram "{gnuplot_text(regime.name)}" lt 1, '
                           f"'e2e-epochs.dat' index {r} using 2:xtic(1) {titles[0]} lt 1, "
                           f"'' index {r} using 3 {titles[1]} lt 2")
    plot_cdf = [f"'e2e-cdf.dat' index {i} using 1:2 with steps lc {c + 1} dt {r + 1} lw 2 "
                f'title "{gnuplot_text(title)}"' for i, (r, c, title) in enumerate(curves)]
    script = "\n".join([
        "# written by benchmarks/e2e/analyze.py",
        "set terminal pngcairo size 1400,600 font ',10'",
        "set output 'e2e.png'",
        "set datafile missing '?'",
        "set multiplot layout 1,2 title 'nopfs end-to-end benchmark'",
        "set title 'epoch time per configuration, grouped by regime'",
        "set ylabel 'seconds'",
        "set style data histograms",
        "set style histogram clustered gap 1 title offset character 0,-0.6",
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.9",
        "set yrange [0:*]",
        "set offsets 0, 0, graph 0.15, 0",
        "set grid ytics",
        "set key top right",
        "set xtics scale 0 font ',8' rotate by -35",
        "set bmargin 4",
        "plot " + ", \\\n     ".join(plot_epochs),
        "unset style",
        "set style data lines",
        "set title 'batch time (t\\_done - t\\_request), CDF'",
        "set xlabel 'seconds'",
        "set ylabel 'fraction of batches'",
        "set logscale x",
        "set yrange [0:1]",
        "set offsets 0, 0, 0, 0",
        "set bmargin",
        "set xtics autofreq font ',10'",
        "set grid xtics ytics",
        "set key outside right top vertical font ',8'",
        "plot " + ", \\\n     ".join(plot_cdf),
        "unset multiplot",
        ""])
    with open(os.path.join(directory, "e2e.gp"), "w") as f:
        f.write(script)
    if shutil.which("gnuplot") is None:
        return f"note: gnuplot not found in PATH; {directory}/e2e.gp was written but not rendered"
    done = subprocess.run(["gnuplot", "e2e.gp"], cwd=directory, capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"gnuplot failed on {directory}/e2e.gp: {done.stderr.strip()}")
    return None


def order_key(config):
    return (CONFIG_ORDER.index(config) if config in CONFIG_ORDER else len(CONFIG_ORDER), config)


class Regime:
    def __init__(self, name, runs, problems, regime_dir):
        self.name, self.runs = name, runs
        try:
            self.fits, self.why = dataset_fits(runs)
        except InputError as e:
            problems.append(f"{name}: {e}")
            self.fits, self.why = None, "unknown: bad input"
        try:
            self.bound = Bound(runs, regime_dir, self.fits)
        except InputError as e:
            problems.append(f"{name}: {e}")
            self.bound = Bound([], regime_dir, None)
        self.targets = regime_targets(name, runs, self.fits, self.why, self.bound)


def collect(results, problems):
    """[Regime]; a run whose inputs fail is left out and its problem
    appended to @problems."""
    regimes = []
    for name in sorted(os.listdir(results)):
        regime_dir = os.path.join(results, name)
        if not os.path.isdir(regime_dir):
            continue
        configs = sorted((c for c in os.listdir(regime_dir)
                          if os.path.isdir(os.path.join(regime_dir, c))), key=order_key)
        if not configs:
            print(f"{PROGRAM}: note: {regime_dir}: no configuration directories, ignored",
                  file=sys.stderr)
            continue
        runs = []
        for config in configs:
            config_dir = os.path.join(regime_dir, config)
            repeats = sorted((d for d in os.listdir(config_dir) if d.startswith("run-")
                              and d[4:].isdigit() and os.path.isdir(os.path.join(config_dir, d))),
                             key=lambda d: int(d[4:]))
            try:
                if repeats:
                    runs.append(Repeated([Run(name, config, os.path.join(config_dir, d),
                                              regime_dir) for d in repeats]))
                else:
                    runs.append(Run(name, config, config_dir, regime_dir))
            except InputError as e:
                problems.append(f"{name}/{config}: skipped: {e}")
        if runs:
            regimes.append(Regime(name, runs, problems, regime_dir))
    return regimes


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="RESULTS/REGIME/CONFIG/{rank-*.csv,meta.json,...}")
    parser.add_argument("--out", help="where summary.csv, targets.csv and the plot go "
                        "(default: RESULTS)")
    parser.add_argument("--no-plot", action="store_true", help="no gnuplot files")
    parser.add_argument("--strict", action="store_true",
                        help="exit 3 when a target is not met")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.results):
        parser.error(f"{args.results}: not a directory")
    out_dir = args.out or args.results
    if not os.path.isdir(out_dir):
        parser.error(f"--out {out_dir}: not a directory")

    problems = []
    regimes = collect(args.results, problems)
    for regime in regimes:
        print_regime(regime, sys.stdout)
    if regimes:
        try:
            write_summary(os.path.join(out_dir, "summary.csv"), regimes)
            write_targets(os.path.join(out_dir, "targets.csv"), regimes)
            print(f"wrote {os.path.join(out_dir, 'summary.csv')} and "
                  f"{os.path.join(out_dir, 'targets.csv')}")
            if not args.no_plot:
                note = write_plot(out_dir, regimes)
                print(note or f"wrote {os.path.join(out_dir, 'e2e.png')}")
        except OSError as e:
            problems.append(f"{e.filename}: {e.strerror}")
        except InputError as e:
            problems.append(str(e))
    else:
        problems.append(f"{args.results}: no results (expected RESULTS/REGIME/CONFIG/rank-*.csv)")
    for problem in problems:
        print(f"{PROGRAM}: error: {problem}", file=sys.stderr)
    if problems:
        return 1
    if args.strict and any(t.met is False for regime in regimes for t in regime.targets):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
