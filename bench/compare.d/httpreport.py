# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare's published files: each tier's JSON, the plot
(throughput bars over TTFB CDFs) and the markdown summary."""
import json
import os
import shutil

from cmplib import human
from httpcmp import COLORS, DISK_TARGETS, GOALS, goblin_memory, median_run, runs_of, x
from report import fmt_us, gnuplot, table


def plot(results, png, work):
    """Throughput bars (median, min-max bars) over TTFB CDFs, per tier."""
    tiers = [t for t in ("ram", "disk") if t in results]
    title = {"ram": "RAM-resident", "disk": "disk-tier"}
    script = ["set terminal pngcairo size %d,860 font ',10'" % (520 * len(tiers)),
              "set output '%s'" % png,
              "set multiplot layout 2,%d title 'ngx\\_http\\_goblin\\_module vs "
              "nginx static files (%s)'" % (len(tiers), results[tiers[0]]["date"])]
    for tier in tiers:
        res = results[tier]
        dat = os.path.join(work, "bars-%s.dat" % tier)
        with open(dat, "w") as f:
            for i, t in enumerate(res["targets"]):
                q = [r["qps"] for r in runs_of(res, t)]
                f.write("%d \"%s\" %g %g %g %d\n" % (
                    i, t, res["medians"][t]["qps"], min(q), max(q),
                    int(COLORS[t][1:], 16)))
        script += ["set title '%s: throughput (median of %d runs, min-max)'"
                   % (title[tier], res["params"]["reps"]),
                   "set style fill solid 0.8 border -1", "unset logscale",
                   "set ylabel 'req/s'", "set yrange [0:*]", "set grid ytics",
                   "unset xlabel", "set xrange [-0.6:%g]" % (len(res["targets"]) - 0.4),
                   "set offsets 0, 0, graph 0.12, 0", "unset key",
                   "plot '%s' using 1:3:(0.6):6:xtic(2) with boxes lc rgb variable, "
                   "'' using 1:3:4:5 with yerrorbars lc rgb 'black' pt 0, "
                   "'' using 1:5:(sprintf('%%.0f', $3)) with labels offset 0,1"
                   % dat]
    for tier in tiers:
        res = results[tier]
        lines = []
        for t in res["targets"]:
            dat = os.path.join(work, "cdf-%s-%s.dat" % (tier, t))
            with open(dat, "w") as f:
                for pct, us in median_run(runs_of(res, t))["ttfb_cdf"]:
                    f.write("%g %g\n" % (max(us, 1) / 1000.0, pct))
            lines.append("'%s' using 1:2 with lines lw 2 lc rgb '%s' title '%s'"
                         % (dat, COLORS[t], t))
        script += ["set title '%s: time to first byte (median-throughput run)'"
                   % title[tier], "set logscale x", "set xrange [*:*]",
                   "set yrange [0:100]", "set offsets 0, 0, 0, 0",
                   "set xlabel 'TTFB (ms, log scale)'", "set ylabel 'percentile'",
                   "set grid xtics ytics", "set key bottom right",
                   "plot " + ", ".join(lines)]
    script.append("unset multiplot")
    gnuplot("\n".join(script) + "\n", work)


def summary(results, meta, png):
    L = ["# ngx_http_goblin_module vs nginx static files: %s\n" % meta["date"],
         "Made by `%s` at git %s on %s (%d cpus, kernel %s); %s, %s, %s. "
         "Medians of each target's runs; every byte of every response "
         "verified by goblin-bench.\n" % (
             meta["command"], meta["git_head"][:12], meta["host"], meta["cpus"],
             meta["kernel"], meta["nginx"], meta["goblin_store"],
             meta["goblin_bench"]),
         "![throughput and TTFB](%s)\n" % png]
    hdr = ["target", "req/s (runs)", "MB/s", "TTFB p50", "TTFB p99",
           "complete p99"]

    def row(res, t, extra=()):
        m = res["medians"][t]
        return [t, "%.0f (%s)" % (m["qps"], ", ".join(
            "%.0f" % r["qps"] for r in runs_of(res, t))), "%.1f" % m["mb_per_s"],
            fmt_us(m["ttfb_p50_us"]), fmt_us(m["ttfb_p99_us"]),
            fmt_us(m["complete_p99_us"])] + list(extra)
    if "ram" in results:
        res, p = results["ram"], results["ram"]["params"]
        r = res["ratios"]
        L += ["## RAM-resident objects\n",
              "%d objects of %s, all in goblin-store's RAM head region and as "
              "files in a warm page cache; one nginx (1 worker, sendfile) "
              "serves both; goblin-bench, %d connections, %d runs of %s per "
              "target, alternating; no cpu pinning, no memory cap.\n" % (
                  p["keys"], p["size"], p["conns"], p["reps"], p["duration"])]
        L += table(hdr, [row(res, t) for t in res["targets"]])
        L += ["",
              "- Throughput goblin/static **%.2f** (goal >= %.2f): %s." % (
                  r["throughput"], GOALS["throughput"],
                  "**met**" if res["verdict"]["throughput"] else "**not met**"),
              "- p99 TTFB goblin/static **%.2f** (goal <= %.2f): %s." % (
                  r["ttfb_p99"], GOALS["ttfb_p99"],
                  "**met**" if res["verdict"]["ttfb_p99"] else "**not met**"),
              "- In words: the module serves RAM-resident objects at %.0f%% of "
              "static-file throughput, and its slowest 1%% of first bytes take "
              "%s as long as static's.\n" % (100 * r["throughput"],
                                               x(r["ttfb_p99"]))]
    if "disk" in results:
        res, p = results["disk"], results["disk"]["params"]
        L += ["## Disk-tier objects\n",
              "%d objects of the seed's gpd sizes (%s in all; 256 KiB - 8 MiB, "
              "mean 1 MiB) in the emulated rig: server cgroup capped at %s "
              "(page cache included), server cpu %s, client and device models "
              "on cpu %s; HDD model 5.04 ms/access, 210 MB/s; SSD 0.58 ms, "
              "250 MB/s. One after the other, each alone in the emptied "
              "cgroup: **goblin** = goblin-store (`--memory %s`, 256 KiB heads "
              "in RAM, 1 MiB prefix on the SSD, tail on the HDD) + nginx with "
              "the module; **static** = nginx (1 worker, sendfile) serving the "
              "same bytes as files on the emulated HDD, cold page cache at "
              "start; **static-aio** = the same plus `aio threads`. Each: a "
              "sweep reading every key once (all verified), then %d runs of "
              "%s of uniform GETs, %d connections.\n" % (
                  p["keys"], human(res["set_bytes"]), human(p["server_ram"]),
                  res["rig"]["server_cpu"], res["rig"]["client_cpu"],
                  human(goblin_memory(p["keys"])), p["reps"], p["duration"],
                  p["conns"])]
        L += table(hdr + ["HDD, SSD read MB/s", "read from disk / served",
                          "cgroup RAM"],
                   [row(res, t, ["%.1f, %.1f" % (res["medians"][t]["hdd_read_mb_per_s"],
                                                 res["medians"][t]["ssd_read_mb_per_s"]),
                                 "%.0f%%" % (100 * res["medians"][t]["disk_read_fraction"]),
                                 human(res["sessions"][t]["ram"]["usage_bytes"])])
                    for t in res["targets"]])
        L.append("")
        for t in DISK_TARGETS[1:]:
            r = res["ratios"][t]
            L.append("- goblin/%s: throughput **%s** (MB/s %s), TTFB p50 %s, "
                     "p99 **%s**, complete p99 %s." % (
                         t, x(r["throughput"]), x(r["mb_per_s"]), x(r["ttfb_p50"]),
                         x(r["ttfb_p99"]), x(r["complete_p99"])))
        best = max(DISK_TARGETS[1:], key=lambda t: res["medians"][t]["qps"])
        r = res["ratios"][best]
        med = res["medians"]
        L += ["- In words (no goal was set): against the faster static "
              "configuration (%s), goblin-store with the module serves %s "
              "requests per second (%s); its median first byte comes %s (%s) "
              "and its p99 first byte %s (%s). Bytes read from the emulated "
              "disks per byte served: goblin %.0f%%, %s %.0f%% (the rest from "
              "RAM heads or the page cache)." % (
                  best, "more" if r["throughput"] > 1 else "fewer",
                  x(r["throughput"]), "sooner" if r["ttfb_p50"] < 1 else "later",
                  x(r["ttfb_p50"]), "sooner" if r["ttfb_p99"] < 1 else "later",
                  x(r["ttfb_p99"]), 100 * med["goblin"]["disk_read_fraction"],
                  best, 100 * med[best]["disk_read_fraction"]),
              "- Rig fidelity (`fio_check` in the JSON), measured/model IOPS: "
              "%s.\n" % fio_line(res["fio_check"])]
    return "\n".join(L) + "\n"


def fio_line(fio):
    return ", ".join("%s %s %.2f" % (d["device"], j["job"], j["ratio"])
                     for d in fio["devices"] for j in d["jobs"])


def publish(results, meta, out_dir, work):
    """Renders every file in <work>, then moves them into <out_dir>: all
    of them or none."""
    stage = os.path.join(work, "publish")
    os.makedirs(stage)
    names = ["%s-http-%s.json" % (meta["date"], t) for t in results]
    for name, res in zip(names, results.values()):
        with open(os.path.join(stage, name), "w") as f:
            json.dump(dict(res, meta=meta), f, indent=1)
    names.append("%s-http.png" % meta["date"])
    plot(results, os.path.join(stage, names[-1]), work)
    names.append("%s-http-summary.md" % meta["date"])
    with open(os.path.join(stage, names[-1]), "w") as f:
        f.write(summary(results, meta, names[-2]))
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        shutil.move(os.path.join(stage, name), os.path.join(out_dir, name))
    return [os.path.join(out_dir, name) for name in names]
