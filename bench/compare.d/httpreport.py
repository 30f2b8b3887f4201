# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare's published files: each tier's JSON, the plot
(throughput bars over TTFB CDFs) and the markdown summary."""
import json
import os
import shutil

from cmplib import human
from httpcmp import COLORS, GOALS, median_run, runs_of, x
from report import fmt_us, gnuplot, table


def plot(results, png, work):
    """Throughput bars (median, min-max bars) over TTFB CDFs, per tier."""
    tiers = [t for t in ("ram", "disk") if t in results]
    title = {"ram": "RAM-resident", "disk": "disk-tier"}
    script = ["set terminal pngcairo size %d,860 font ',10'" % (640 * len(tiers)),
              "set output '%s'" % png,
              "set multiplot layout 2,%d title 'ngx\\_http\\_goblin\\_module vs "
              "nginx static files and HTTP caches (%s)'" % (len(tiers), results[tiers[0]]["date"])]
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
                   "set grid xtics ytics", "set key top left",
                   "plot " + ", ".join(lines)]
    script.append("unset multiplot")
    gnuplot("\n".join(script) + "\n", work)


HDR = ["target", "req/s median (runs)", "MB/s", "TTFB p50", "TTFB p99",
       "complete p99"]


def row(res, t, extra=()):
    m = res["medians"][t]
    return [t, "%.0f (%s)" % (m["qps"], ", ".join(
        "%.0f" % r["qps"] for r in runs_of(res, t))), "%.1f" % m["mb_per_s"],
        fmt_us(m["ttfb_p50_us"]), fmt_us(m["ttfb_p99_us"]),
        fmt_us(m["complete_p99_us"])] + list(extra)


def span(res, t, k, us=True):
    """'min-max (IQR q1-q3)' of one metric over a target's runs."""
    q = res["spread"][t][k]
    f = fmt_us if us else (lambda v: "%.0f" % v)
    return "%s - %s (IQR %s - %s)" % (f(q["min"]), f(q["max"]), f(q["q1"]),
                                       f(q["q3"]))


def ram_lines(res):
    p, r = res["params"], res["ratios"]
    cpu = p["cpus"]
    L = ["## RAM-resident objects\n",
         "%d objects of %s, all in goblin-store's RAM head region and as "
         "files in a warm page cache; one nginx (1 worker, sendfile) serves "
         "both; goblin-bench, %d connections, %d rounds of %s runs, the "
         "targets alternating (goblin, static; static, goblin; ...); no "
         "memory cap. CPUs: client %s, nginx %s, goblin-store %s (%s). A "
         "head GET still costs goblin-store a lookup and a release over the "
         "ring (the pin), so it is not idle: its cpu use is in the table. "
         "nginx's cpu per GET differs by how the bytes leave: the module "
         "hands the socket the head from the mapped region (the kernel "
         "copies it), static files go out by sendfile (page references).\n"
         % (p["keys"], p["size"], p["conns"], p["reps"], p["duration"],
            cpu["client"], cpu["nginx"], cpu["goblin-store"], cpu["shared"])]
    med = res["medians"]
    L += table(HDR + ["cpu nginx, goblin-store (s/s)", "nginx cpu per GET"],
               [row(res, t, ["%.2f, %.2f" % (med[t]["cpu_nginx"],
                                             med[t]["cpu_goblin-store"]),
                             fmt_us(1e6 * med[t]["cpu_nginx"] / med[t]["qps"])])
                for t in res["targets"]])
    L += ["", "Spread over the runs (min - max, interquartile range):\n"]
    L += table(["target", "req/s", "TTFB p50", "TTFB p99"],
               [[t, span(res, t, "qps", False), span(res, t, "ttfb_p50_us"),
                 span(res, t, "ttfb_p99_us")] for t in res["targets"]])
    L += ["",
          "- Throughput goblin/static (ratio of medians) **%.2f** (goal >= "
          "%.2f): %s." % (r["throughput"], GOALS["throughput"],
                          "**met**" if res["verdict"]["throughput"] else "**not met**"),
          "- p99 TTFB goblin/static (ratio of medians) **%.2f** (goal <= "
          "%.2f): %s." % (r["ttfb_p99"], GOALS["ttfb_p99"],
                          "**met**" if res["verdict"]["ttfb_p99"] else "**not met**"),
          "- In words: the module serves RAM-resident objects at %.0f%% of "
          "static-file throughput, and its slowest 1%% of first bytes take "
          "%s as long as static's.\n" % (100 * r["throughput"], x(r["ttfb_p99"]))]
    return L


PEER_WORDS = {
    "goblin": "goblin-store (256 KiB heads in RAM, 1 MiB prefix on the SSD, "
              "tail on the HDD) + nginx with the module, filled by PUT",
    "static": "nginx (1 worker, sendfile) serving the same bytes as files on "
              "the HDD, cold page cache at start",
    "static-aio": "the same plus `aio threads`",
    "nginx-cache": "nginx `proxy_cache` (1 worker, sendfile), `slice 1m`, "
                   "cache on the HDD; RAM: the page cache",
    "varnish": "Varnish 7, objects up to the size that fits in `-s malloc` "
               "(the RAM cache) there, larger ones in `-s file` on the HDD "
               "(mmap'ed: its resident pages count as page cache)",
    "ats": "Traffic Server 9, one event thread, its raw cache a file on the "
           "HDD, `ram_cache.size` = the RAM cache"}


def disk_lines(res):
    p, med = res["params"], res["medians"]
    peers = [t for t in res["targets"] if t in ("nginx-cache", "varnish", "ats")]
    L = ["## Disk-tier objects\n",
         "%d objects of the seed's gpd sizes (%s in all; 256 KiB - 8 MiB, "
         "mean 1 MiB) in the emulated rig: server cgroup capped at %s (page "
         "cache included), server cpu %s, client and device models on cpu "
         "%s; HDD model 5.04 ms/access, 210 MB/s; SSD 0.58 ms, 250 MB/s. One "
         "after the other, each alone in the emptied cgroup:\n" % (
             p["keys"], human(res["set_bytes"]), human(p["server_ram"]),
             res["rig"]["server_cpu"], res["rig"]["client_cpu"])]
    L += ["- **%s**: %s%s" % (t, PEER_WORDS[t], ";" if t != res["targets"][-1]
                               else ".") for t in res["targets"]]
    if peers:
        L += ["", "The caches are filled by one sweep through them from an "
              "origin (nginx serving the files from the host's disk, outside "
              "the cgroup, on the client cpu); each has a RAM cache of %s, "
              "goblin-store's `--memory`%s." % (
                  human(p["ram_cache"]), varnish_words(res))]
    L += ["", "Each: a sweep reading every key once (all verified), then %d "
          "runs of %s of uniform GETs, %d connections. \"origin\" = requests "
          "that reached the origin during the measured runs (0: every byte "
          "came from the cache).\n" % (p["reps"], p["duration"], p["conns"])]
    L += table(HDR + ["HDD, SSD bytes read / served", "RAM peak (cgroup)",
                      "origin"],
               [row(res, t, ["%.2f, %.2f" % (med[t]["hdd_read_per_served"],
                                             med[t]["ssd_read_per_served"]),
                             human(med[t]["ram_peak_bytes"]),
                             str(med[t]["origin_requests"])
                             if t in peers else "-"])
                for t in res["targets"]])
    L.append("")
    for t in res["targets"][1:]:
        r = res["ratios"][t]
        L.append("- goblin/%s: throughput **%s** (MB/s %s), TTFB p50 %s, p99 "
                 "**%s**, complete p99 %s." % (
                     t, x(r["throughput"]), x(r["mb_per_s"]), x(r["ttfb_p50"]),
                     x(r["ttfb_p99"]), x(r["complete_p99"])))
    if peers:
        behind = [t for t in peers if res["ratios"][t]["throughput"] <= 1
                  or res["ratios"][t]["ttfb_p99"] >= 1]
        L.append("- Goal (issue 11): goblin-store ahead of every cache on "
                 "throughput and p99 TTFB: %s." % (
                     "**met** (%s)" % ", ".join(peers) if not behind else
                     "**not met** against %s" % ", ".join(behind)))
    if "static" in res["ratios"]:
        r = res["ratios"]["static"]
        L.append("- Goal (issue 23): goblin-store at least level with nginx static "
                 "files on throughput: %s (goblin/static %s)." % (
                     "**met**" if r["throughput"] >= 1 else "**not met**",
                     x(r["throughput"])))
    L.append("- Rig fidelity (`fio_check` in the JSON), measured/model IOPS: "
             "%s.\n" % fio_line(res["fio_check"]))
    return L


def varnish_words(res):
    s = res["sessions"].get("varnish")
    if not s:
        return ""
    b = s["ram_budget"]
    return ("; Varnish's malloc holds the %d objects of at most %s (%s), the "
            "other %d its file" % (b["malloc_objects"],
                                   human(b["malloc_objects_up_to"]),
                                   human(b["malloc_object_bytes"]),
                                   res["params"]["keys"] - b["malloc_objects"]))


def summary(results, meta, png):
    L = ["# ngx_http_goblin_module vs nginx static files and HTTP caches: %s\n"
         % meta["date"],
         "Made by `%s` at git %s on %s (%d cpus, kernel %s); %s, %s, %s%s. "
         "Medians of each target's runs; every byte of every response "
         "verified by goblin-bench. Network: loopback (client and servers "
         "on one host, unshaped).\n" % (
             meta["command"], meta["git_head"][:12], meta["host"], meta["cpus"],
             meta["kernel"], meta["nginx"], meta["goblin_store"],
             meta["goblin_bench"], "".join(
                 ", " + v for v in meta.get("peers", {}).values())),
         "![throughput and TTFB](%s)\n" % png]
    if meta.get("quick"):
        L.append("**--quick: a development run** (few keys, short runs); "
                 "not a published measurement.\n")
    if "ram" in results:
        L += ram_lines(results["ram"])
    if "disk" in results:
        L += disk_lines(results["disk"])
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
