# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare's published files: each tier's JSON, the plot
(throughput bars over TTFB CDFs) and the markdown summary, with the disk
tier's -ssd peers (peers.PEERS) and the resource that binds each target."""
import json
import os
import shutil

import limits
from cmplib import MIB, human
from disktier import SATURATED
from httpcmp import COLORS, GOALS, median_run, runs_of, x
from peers import PEERS, SSD, base
from report import fmt_us, gnuplot, table


LABEL_PX = 110


def plot(results, png, work):
    """Throughput bars (median, min-max bars) over TTFB CDFs, per tier."""
    tiers = [t for t in ("ram", "disk") if t in results]
    title = {"ram": "RAM-resident", "disk": "disk-tier"}
    # a bar's label, up to 'nginx-cache-ssd' at 10 pt, takes LABEL_PX
    wide = max([640] + [LABEL_PX * len(results[t]["targets"]) for t in tiers])
    script = ["set terminal pngcairo size %d,860 font ',10'" % (wide * len(tiers)),
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
           "HDD, `ram_cache.size` the RAM cache less 64 MiB (at least half "
           "of it): with all of it, its process outgrew the cgroup once "
           "the RAM cache filled and was OOM-killed",
    "nginx-cache-ssd": "nginx-cache's configuration with each object's first 1 MiB slice in a "
                       "second `proxy_cache_path` on the SSD (`max_size` = "
                       "the SSD's bytes), the later slices on the HDD "
                       "(`proxy_cache` picks the zone by `$slice_range`), "
                       "and `aio threads` (the cache files read off the event "
                       "loop, as static-aio)",
    "varnish-ssd": "varnish's configuration with a second `-s file` on the SSD: after "
                   "malloc, the smallest objects that fit in it (the most "
                   "objects off the HDD; Varnish keeps an object whole in "
                   "one storage), the rest in the file on the HDD",
    "ats-ssd": "ats's configuration with two spans, the SSD's bytes and the HDD's rest "
               "of ats's cache (Traffic Server has no tiers: it hashes each "
               "object onto one stripe, weighted by their sizes)"}


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


def bound(m):
    """What binds a target's runs: its busiest resource when saturated
    (disktier.SATURATED), else none, its busiest named."""
    what = "%s %s" % (m["binding"], limits.pct(m["binding_busy"]))
    return what if m.get("saturated", True) else "none saturated (busiest %s)" % what


def busy_text(m):
    """The median run's busy fraction of each resource, the binding one
    (the busiest) first and in bold; '-' for results without them."""
    if "busy" not in m:
        return "-"
    parts = []
    for key, name in limits.NAMES:
        if key in m["busy"]:
            text = "%s %s" % (name, limits.pct(m["busy"][key]))
            if name == m["binding"]:
                parts.insert(0, "**%s**" % text if m.get("saturated", True) else
                             "none saturated: " + text)
            else:
                parts.append(text)
    return ", ".join(parts)


def ats_words(res):
    for t in ("ats", "ats-ssd"):
        s = res["sessions"].get(t)
        if s and "ram_budget" in s:
            return ", Traffic Server %s" % human(s["ram_budget"]["ram_cache_bytes"])
    return ""


def ssd_words(res):
    """How the -ssd peers used the SSD, from their sessions."""
    ssd = [t for t in res["targets"] if t.endswith(SSD)]
    if not ssd:
        return []
    p, gob = res["params"], res["sessions"]["goblin"].get("stats_goblin", {})
    L = ["", "The -ssd caches get %s of SSD: the bytes goblin-store held there "
         "after its fill (%s, heads' copies and prefixes; its pool is %s, "
         "left part free), whole MiB:\n" % (
             human(p["sizes_mib"]["peer_ssd"] * MIB),
             human(gob.get("ssd_used_bytes", 0)),
             human(gob.get("ssd_pool_bytes", 0)))]
    for t in ssd:
        s = res["sessions"][t]
        u, on = s["ssd_use"], s["fill"].get("cache_bytes", {})
        disk = " (allocated on disk after the fill: SSD %s, HDD %s)" % (
            human(on["ssd"]), human(on["hdd"])) if on.get("ssd") is not None else ""
        if base(t) == "nginx-cache":
            what = "the %d objects' first slices, %s" % (
                u["objects"], human(u["object_bytes"]))
        elif base(t) == "varnish":
            what = "the %d objects of more than %s and at most %s, %s%s" % (
                u["objects"], human(u["objects_over"]), human(u["objects_up_to"]),
                human(u["object_bytes"]),
                ": every object not in malloc, nothing in the file on the HDD"
                if s.get("varnishstat", {}).get("SMF.disk.g_bytes") == 0 else "")
        else:
            what = "a %s span beside the HDD's %s: %.0f%% of the objects " \
                   "by the hash" % (human(u["ssd_mib"] * MIB),
                                    human(u["hdd_mib"] * MIB),
                                    100 * u["share_of_cache"])
        L.append("- **%s**: %s%s;" % (t, what, disk))
    L[-1] = L[-1][:-1] + "."
    return L


def disk_lines(res):
    p, med = res["params"], res["medians"]
    peers = [t for t in res["targets"] if t in PEERS]
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
              "the cgroup, on the client cpu); each has a RAM cache of %s "
              "(goblin-store's `--memory`: %s)%s%s." % (
                  human(p["ram_cache"]), human(p["goblin_memory"])
                  if "goblin_memory" in p else "?", ats_words(res),
                  varnish_words(res))]
        L += ssd_words(res)
    L += ["", "Each: a sweep reading every key once (all verified), then %d "
          "runs of %s of uniform GETs, %d connections. \"origin\" = requests "
          "that reached the origin during the measured runs (0: every byte "
          "came from the cache). \"bound by\": each resource's busy fraction "
          "(median of the runs; the device models' access and transfer "
          "time booked, the server's processes' cpu time on its one cpu, "
          "goblin-bench's on the client cpu), the busiest first, in bold when at "
          "least %.0f%% busy; below that none binds the run: a server that "
          "waits on one read at a time is bound by its latency.\n"
          % (p["reps"], p["duration"], p["conns"], 100 * SATURATED)]
    L += table(HDR + ["HDD, SSD bytes read / served", "RAM peak (cgroup)",
                      "origin", "bound by"],
               [row(res, t, ["%.2f, %.2f" % (med[t]["hdd_read_per_served"],
                                             med[t]["ssd_read_per_served"]),
                             human(med[t]["ram_peak_bytes"]),
                             str(med[t]["origin_requests"])
                             if t in peers else "-", busy_text(med[t])])
                for t in res["targets"]])
    L.append("")
    for t in res["targets"][1:]:
        r = res["ratios"][t]
        what = " (%s bound by %s; goblin by %s)" % (
            t, bound(med[t]), bound(med["goblin"])) \
            if "binding" in med[t] and "binding" in med["goblin"] else ""
        L.append("- goblin/%s: throughput **%s** (MB/s %s), TTFB p50 %s, p99 "
                 "**%s**, complete p99 %s%s." % (
                     t, x(r["throughput"]), x(r["mb_per_s"]), x(r["ttfb_p50"]),
                     x(r["ttfb_p99"]), x(r["complete_p99"]), what))
    if peers:
        behind = [t for t in peers if res["ratios"][t]["throughput"] <= 1
                  or res["ratios"][t]["ttfb_p99"] >= 1]
        L.append("- Goal (issue 11): goblin-store ahead of every cache on "
                 "throughput and p99 TTFB: %s." % (
                     "**met** (%s)" % ", ".join(peers) if not behind else
                     "**not met** against %s" % ", ".join(behind)))
        ssd = [t for t in peers if t.endswith(SSD)]
        if ssd:
            ssd_behind = [t for t in behind if t in ssd]
            L.append("- Issue 27 (fair peers): ahead of the caches given the "
                     "same SSD bytes too: %s." % (
                         "**yes** (%s)" % ", ".join(ssd) if not ssd_behind else
                         "**no**, not of %s" % ", ".join(ssd_behind)))
    if "static" in res["ratios"]:
        r = res["ratios"]["static"]
        L.append("- Goal (issue 23): goblin-store at least level with nginx static "
                 "files on throughput: %s (goblin/static %s)." % (
                     "**met**" if r["throughput"] >= 1 else "**not met**",
                     x(r["throughput"])))
    L.append("- Rig fidelity (`fio_check` in the JSON), measured/model IOPS: "
             "%s.\n" % fio_line(res["fio_check"]))
    return L


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
