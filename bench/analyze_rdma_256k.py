#!/usr/bin/env python3
"""usage: bench/analyze_rdma_256k.py --runs DIR --out STEM [options]

The analysis of bench/run_rdma_256k_ib.sh (the seed's section 5 method),
python3 stdlib and gnuplot.  Reads the goblin-bench --json files in DIR
(populate, serial-1..N, sweep-Q, twoqp-1..N) and the daemon's stats
(stats-populated.txt, stats-done.txt), and writes

  STEM.json  everything: parameters, the serial repetitions merged into one
             distribution per time (exactly, from the histogram buckets),
             medians, the QP sweep, the two-QP runs' mean and sample
             standard deviation, the checks
  STEM.md    the same as markdown tables
  STEM.png   the serial CDFs of the three times and the sweep (gnuplot)

and prints a summary.  Every line and file says which transport measured:
the emulated one (libfabric tcp) is labelled EMULATED everywhere.  Exit 1
when a check fails (a byte mismatch, a miss, an error, percentiles out of
order, a sweep point missing, objects not all RAM heads).
"""
import argparse
import glob
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile

SEED = {"keys": 16384, "requests": 200000, "reps": 5,
        "sweep": list(range(1, 13)), "sweep_duration": "10s", "runs": 3,
        "run_duration": "30s", "window": "8M"}
TIMES = ("header", "bulk_ready", "complete")
PCTS = (50, 90, 99, 99.9)
CDF = (0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100)
WHAT = ("header: the VALUE line arrived; bulk_ready: the last BULK_READY "
        "arrived, which the server sends only after the object's RDMA "
        "writes completed, so the whole object is in the window (full-"
        "window readiness, not first-byte arrival); complete: the memcache "
        "END line arrived.  Each from the GET's send, in microseconds.")


def load(path):
    with open(path) as f:
        return json.load(f)


def stats_file(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                try:
                    out[parts[0]] = int(parts[1])
                except ValueError:
                    out[parts[0]] = parts[1]
    return out


class Hist:
    """A merged log-linear histogram: bucket high (ns) -> count."""

    def __init__(self):
        self.buckets = {}
        self.count = 0
        self.sum_us = 0.0
        self.max_us = 0.0

    def add(self, h):
        for high, n in h.get("buckets_ns", []):
            self.buckets[high] = self.buckets.get(high, 0) + n
        self.count += h["count"]
        self.sum_us += h["mean"] * h["count"]
        self.max_us = max(self.max_us, h["max"])

    def pct(self, p):
        """As goblin-bench: the bucket holding the ceil(p% * n)-th sample,
        its highest value, capped at the maximum."""
        if not self.count:
            return 0.0
        rank = min(max(math.ceil(p / 100.0 * self.count), 1), self.count)
        seen = 0
        for high in sorted(self.buckets):
            seen += self.buckets[high]
            if seen >= rank:
                return min(high / 1e3, self.max_us)
        return self.max_us

    def summary(self):
        out = {"count": self.count,
               "mean": round(self.sum_us / self.count, 3) if self.count else 0,
               "max": self.max_us}
        for p in PCTS:
            out["p" + str(p).replace(".", "_")] = round(self.pct(p), 3)
        out["cdf"] = [[p, round(self.pct(p), 3)] for p in CDF]
        return out

    def curve(self):
        """(us, cumulative fraction) per bucket, for the plot."""
        seen, pts = 0, []
        for high in sorted(self.buckets):
            seen += self.buckets[high]
            pts.append((min(high / 1e3, self.max_us), seen / self.count))
        return pts


def run_row(d):
    r = d["run"]
    lat = r["latency_us"]
    return {"gets": r["gets"], "seconds": r["seconds"],
            "gets_per_s": r["qps"],
            "gbit_per_s": r["payload_gbit_per_s"],
            "verify_errors": r["verify_errors"], "misses": r["misses"],
            "errors": r["errors"], "lost": r["lost"],
            "conn_failures": r["conn_failures"],
            "qps": d["params"]["rdma"]["qps"],
            "transport": d["params"]["rdma"]["transport"],
            "p50_us": {t: lat[t]["p50"] for t in TIMES},
            "p99_us": {t: lat[t]["p99"] for t in TIMES}}


def ordered(lat):
    """header <= bulk_ready <= complete at every sampled percentile."""
    if not lat["header"]["count"]:
        return True
    for i, (p, h) in enumerate(lat["header"]["cdf"]):
        b = lat["bulk_ready"]["cdf"][i][1]
        c = lat["complete"]["cdf"][i][1]
        if not h <= b <= c:
            return False
    return all(lat["header"][k] <= lat["bulk_ready"][k] <=
               lat["complete"][k] for k in ("p50", "p90", "p99", "p99_9"))


def collect(a):
    runs = {}
    for path in glob.glob(os.path.join(a.runs, "*.json")):
        runs[os.path.basename(path)[:-5]] = load(path)
    serial = [runs["serial-%d" % i] for i in range(1, a.reps + 1)
              if "serial-%d" % i in runs]
    sweep = {q: runs.get("sweep-%d" % q) for q in a.sweep}
    twoqp = [runs["twoqp-%d" % i] for i in range(1, a.runs_n + 1)
             if "twoqp-%d" % i in runs]
    return runs, serial, sweep, twoqp


def analyze(a):
    runs, serial, sweep, twoqp = collect(a)
    emulated = a.transport == "tcp"
    merged = {t: Hist() for t in TIMES}
    for d in serial:
        for t in TIMES:
            merged[t].add(d["run"]["latency_us"][t])
    merged_s = {t: merged[t].summary() for t in TIMES}
    sweep_rows = []
    for q in a.sweep:
        if sweep[q]:
            sweep_rows.append(dict(run_row(sweep[q]), qps=q))
    best = max(sweep_rows, key=lambda r: r["gbit_per_s"], default=None)
    two = [run_row(d) for d in twoqp]
    gbits = [r["gbit_per_s"] for r in two]
    measured = serial + [d for d in sweep.values() if d] + twoqp
    st_pop = stats_file(os.path.join(a.runs, "stats-populated.txt"))
    st_done = stats_file(os.path.join(a.runs, "stats-done.txt"))
    rows = [run_row(d) for d in measured]
    checks = {
        "no_mismatches": all(r["verify_errors"] == 0 for r in rows),
        "no_misses_errors_or_lost": all(
            r["misses"] == r["errors"] == r["lost"] == r["conn_failures"]
            == 0 for r in rows),
        "transport_as_labelled": all(r["transport"] == a.transport
                                     for r in rows),
        "percentiles_ordered": all(ordered(d["run"]["latency_us"])
                                   for d in measured) and
        ordered(merged_s),
        "serial_reps_complete": len(serial) == a.reps and all(
            r["gets"] == a.requests for r in map(run_row, serial)),
        "sweep_complete": [r["qps"] for r in sweep_rows] == a.sweep and all(
            r["gets"] > 0 for r in sweep_rows),
        "two_qp_runs_complete": len(two) == a.runs_n and all(
            r["gets"] > 0 and r["qps"] == 2 for r in two),
        "populated": "populate" in runs and
        runs["populate"]["populate"]["sets"] == a.keys,
    }
    if a.server == "local":
        checks["all_objects_ram_heads"] = (
            st_pop.get("ram_head_objects") == a.keys and
            st_done.get("evictions", 1) == 0 and
            st_done.get("ram_head_objects") == a.keys)
        checks["server_counted_every_get"] = (
            st_done.get("rdma_get_hits") == sum(r["gets"] for r in rows))
    scaled = {k: getattr(a, k2) for k, k2 in
              (("keys", "keys"), ("requests", "requests"), ("reps", "reps"),
               ("sweep", "sweep"), ("sweep_duration", "sweep_duration"),
               ("runs", "runs_n"), ("run_duration", "run_duration"),
               ("window", "window"))
              if getattr(a, k2) != SEED[k]}
    return {
        "method": "goblin-store benchmarks, section 5 (native RDMA, 256 KiB "
                  "objects): fixed-seed uniform working set, serial "
                  "repetitions, QP sweep, two-QP closed-loop runs",
        "transport": a.transport, "emulated": emulated, "label": a.label,
        "note": ("EMULATED: libfabric's tcp provider over loopback on a host "
                 "without RDMA hardware; the method is the seed's, the "
                 "numbers are not InfiniBand numbers" if emulated else
                 "verbs (rdma_cm + ibverbs RC queue pairs) on " + a.devices),
        "rdma_devices": a.devices.split(),
        "quick": bool(a.quick), "scaled": scaled,
        "params": {"keys": a.keys, "object_bytes": 262144,
                   "working_set_bytes": a.keys * 262144,
                   "requests_per_rep": a.requests, "reps": a.reps,
                   "sweep_qps": a.sweep, "sweep_duration": a.sweep_duration,
                   "two_qp_runs": a.runs_n, "run_duration": a.run_duration,
                   "window": a.window, "seed": a.seed, "memory": a.memory,
                   "server": a.server, "link_gbit": a.link_gbit},
        "host": {"cpus": os.cpu_count(), "kernel": platform.release(),
                 "machine": platform.machine()},
        "wall_s": a.wall_s,
        "timestamps": WHAT,
        "populate": runs["populate"]["populate"] if "populate" in runs
        else None,
        "serial": {"reps": [dict(run_row(d), rep=i + 1)
                            for i, d in enumerate(serial)],
                   "samples": merged_s["header"]["count"],
                   "merged_us": merged_s,
                   "median_us": {t: merged_s[t]["p50"] for t in TIMES}},
        "sweep": sweep_rows,
        "sweep_max": None if not best else {
            "qps": best["qps"], "gbit_per_s": best["gbit_per_s"],
            "pct_of_link": None if emulated else
            round(100 * best["gbit_per_s"] / a.link_gbit, 2)},
        "two_qp": {"runs": two, "gbit_per_s": gbits,
                   "mean": statistics.mean(gbits) if gbits else None,
                   "stdev": statistics.stdev(gbits) if len(gbits) > 1
                   else None},
        "stats": {"populated": st_pop, "done": st_done},
        "checks": checks, "ok": all(checks.values()),
        "_curves": {t: merged[t].curve() for t in TIMES},
    }


def fmt(v, nd=1):
    return "-" if v is None else ("%.*f" % (nd, v))


def markdown(r):
    tag = "EMULATED (libfabric tcp, no RDMA hardware)" if r["emulated"] \
        else "verbs"
    p = r["params"]
    s = r["serial"]
    out = ["# RDMA 256 KiB: latency and throughput -- %s" % tag, "",
           "> %s" % r["note"], ""]
    if r["quick"] or r["scaled"]:
        out += ["Scaled from the seed's method (%s): %s." % (
            "--quick" if r["quick"] else "options",
            ", ".join("%s %s" % (k, v) for k, v in r["scaled"].items())), ""]
    out += ["%d keys x 256 KiB (%.2f GiB), seed %d, window %s, transport %s; "
            "wall time %d s; %d CPUs." % (
                p["keys"], p["working_set_bytes"] / 2 ** 30, p["seed"],
                p["window"], r["transport"], r["wall_s"], r["host"]["cpus"]),
            "", r["timestamps"], "",
            "## Serial: %d x %d GETs, one queue pair (%d samples) [%s]" % (
                p["reps"], p["requests_per_rep"], s["samples"], tag), "",
            "| time (us) | p50 | p90 | p99 | p99.9 | max | mean |",
            "|---|---|---|---|---|---|---|"]
    for t in TIMES:
        m = s["merged_us"][t]
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            t, fmt(m["p50"], 3), fmt(m["p90"]), fmt(m["p99"]),
            fmt(m["p99_9"]), fmt(m["max"]), fmt(m["mean"])))
    out += ["", "| rep | GETs | Gbit/s | p50 header | p50 bulk-ready | "
            "p50 complete | mismatches |", "|---|---|---|---|---|---|---|"]
    for x in s["reps"]:
        out.append("| %d | %d | %.3f | %.1f | %.1f | %.1f | %d |" % (
            x["rep"], x["gets"], x["gbit_per_s"], x["p50_us"]["header"],
            x["p50_us"]["bulk_ready"], x["p50_us"]["complete"],
            x["verify_errors"]))
    out += ["", "## QP sweep, closed loop, %s each [%s]" % (
        p["sweep_duration"], tag), "",
        "| QPs | Gbit/s | %% of %g Gbit/s | GETs/s | p50 complete (us) | "
        "p99 complete (us) | mismatches |" % p["link_gbit"],
        "|---|---|---|---|---|---|---|"]
    for x in r["sweep"]:
        pct = "n/a (emulated)" if r["emulated"] else \
            "%.2f" % (100 * x["gbit_per_s"] / p["link_gbit"])
        out.append("| %d | %.3f | %s | %.0f | %.1f | %.1f | %d |" % (
            x["qps"], x["gbit_per_s"], pct, x["gets_per_s"],
            x["p50_us"]["complete"], x["p99_us"]["complete"],
            x["verify_errors"]))
    t = r["two_qp"]
    out += ["", "## Two QPs, %d x %s [%s]" % (p["two_qp_runs"],
                                              p["run_duration"], tag), "",
            "Gbit/s: %s; mean %s, sample stdev %s." % (
                ", ".join("%.3f" % g for g in t["gbit_per_s"]),
                fmt(t["mean"], 3), fmt(t["stdev"], 3)), "",
            "## Checks", ""]
    for k, v in r["checks"].items():
        out.append("- %s: %s" % (k, "ok" if v else "FAILED"))
    return "\n".join(out) + "\n"


def plot(r, png):
    """Serial CDFs (log x) and the sweep, side by side, with gnuplot."""
    tag = "EMULATED tcp" if r["emulated"] else "verbs"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as work:
        for t in TIMES:
            with open(os.path.join(work, t + ".dat"), "w") as f:
                for us, frac in r["_curves"][t]:
                    f.write("%g %g\n" % (us, frac))
        with open(os.path.join(work, "sweep.dat"), "w") as f:
            for x in r["sweep"]:
                f.write("%d %g\n" % (x["qps"], x["gbit_per_s"]))
        script = "\n".join([
            "set terminal pngcairo size 1400,560 noenhanced",
            "set output '%s'" % png,
            "set multiplot layout 1,2 title 'RDMA 256 KiB GET [%s]'" % tag,
            "set title 'serial, %d samples'" % r["serial"]["samples"],
            "set logscale x", "set xlabel 'us from send'",
            "set ylabel 'fraction of GETs'", "set key bottom right",
            "set grid",
            "plot 'header.dat' using 1:2 with steps title 'header (VALUE)', "
            "'bulk_ready.dat' using 1:2 with steps title 'bulk ready "
            "(last BULK_READY)', 'complete.dat' using 1:2 with steps "
            "title 'complete (END)'",
            "unset logscale x", "set title 'closed loop, QP sweep'",
            "set xlabel 'queue pairs'", "set ylabel 'payload Gbit/s'",
            "set xtics 1", "set yrange [0:*]",
            "plot 'sweep.dat' using 1:2 with linespoints title '%s'" % tag,
            "unset multiplot", ""])
        res = subprocess.run(["gnuplot"], input=script, text=True, cwd=work,
                             capture_output=True)
        if res.returncode:
            raise RuntimeError("gnuplot: " + res.stderr.strip()[-300:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[2])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True, help="output path without "
                    "extension")
    ap.add_argument("--transport", choices=("verbs", "tcp"), required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--devices", default="")
    ap.add_argument("--quick", type=int, default=0)
    ap.add_argument("--keys", type=int, default=SEED["keys"])
    ap.add_argument("--requests", type=int, default=SEED["requests"])
    ap.add_argument("--reps", type=int, default=SEED["reps"])
    ap.add_argument("--sweep", default=" ".join(map(str, SEED["sweep"])))
    ap.add_argument("--sweep-duration", default=SEED["sweep_duration"])
    ap.add_argument("--runs-n", type=int, default=SEED["runs"])
    ap.add_argument("--run-duration", default=SEED["run_duration"])
    ap.add_argument("--window", default=SEED["window"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--link-gbit", type=float, default=40.0)
    ap.add_argument("--memory", default="")
    ap.add_argument("--server", default="local")
    ap.add_argument("--wall-s", type=int, default=0)
    a = ap.parse_args()
    a.sweep = [int(q) for q in a.sweep.split()]
    r = analyze(a)
    try:
        plot(r, a.out + ".png")
    except (OSError, RuntimeError) as e:
        print("analyze: no PNG: %s" % e)
        r["checks"]["png"] = False
        r["ok"] = False
    del r["_curves"]
    with open(a.out + ".json", "w") as f:
        json.dump(r, f, indent=1)
        f.write("\n")
    with open(a.out + ".md", "w") as f:
        f.write(markdown(r))
    m = r["serial"]["median_us"]
    print("serial     %d samples: median header %.3f us, bulk-ready %.3f us,"
          " complete %.3f us" % (r["serial"]["samples"], m["header"],
                                 m["bulk_ready"], m["complete"]))
    for x in r["sweep"]:
        print("sweep      %2d QPs: %.3f Gbit/s" % (x["qps"], x["gbit_per_s"]))
    t = r["two_qp"]
    print("two-QP     %s Gbit/s: mean %s, stdev %s" % (
        ", ".join("%.3f" % g for g in t["gbit_per_s"]), fmt(t["mean"], 3),
        fmt(t["stdev"], 3)))
    for k, v in r["checks"].items():
        print("check      %s: %s" % (k, "ok" if v else "FAILED"))
    print("wrote      %s.json, .md, .png" % a.out)
    return 0 if all(r["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
