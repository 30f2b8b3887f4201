# usage: imported by bench/http-compare and bench/http-compare.d/selftest
"""The disk tier's part of bench/http-compare's summary with the -ssd
peers (peers.PEERS) and the resource that binds each target.  It replaces
bench/compare.d/httpreport.py's disk_lines (install()), which knows the
three HDD-only caches by name; the plot's colours and the targets' words
for the -ssd peers are added to that module's tables."""
import httpreport
from cmplib import MIB, human
from httpcmp import COLORS, x
from httpreport import HDR, PEER_WORDS, fio_line, row, table, varnish_words
import limits
from disktier import SATURATED
from peers import PEERS, SSD, base

SSD_COLORS = {"nginx-cache-ssd": "#98df8a", "varnish-ssd": "#c5b0d5",
              "ats-ssd": "#ffbb78"}
SSD_WORDS = {
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


ATS_WORDS = ("Traffic Server 9, one event thread, its raw cache a file on the "
             "HDD, `ram_cache.size` the RAM cache less 64 MiB (at least half "
             "of it): with all of it, its process outgrew the cgroup once "
             "the RAM cache filled and was OOM-killed")


def install():
    COLORS.update(SSD_COLORS)
    PEER_WORDS.update(SSD_WORDS)
    PEER_WORDS["ats"] = ATS_WORDS
    httpreport.disk_lines = disk_lines
    httpreport.plot = wide_plot


PLOT = httpreport.plot
LABEL_PX = 110          # a bar's label, up to 'nginx-cache-ssd' at 10 pt


def wide_plot(results, png, work):
    """httpreport's plot, each tier's panel LABEL_PX per target wide (640
    px at least): nine disk-tier targets' labels overlap at 640.  The
    width is the first line of the script it hands report.gnuplot; a
    script that starts otherwise is drawn as it is."""
    wide = max([640] + [LABEL_PX * len(r["targets"]) for r in results.values()])
    tiers = len([t for t in ("ram", "disk") if t in results])

    def gnuplot(script, work):
        old = "set terminal pngcairo size %d," % (640 * tiers)
        if script.startswith(old):      # else as httpreport wrote it
            script = script.replace(old, "set terminal pngcairo size %d,"
                                    % (wide * tiers), 1)
        real(script, work)
    real, httpreport.gnuplot = httpreport.gnuplot, gnuplot
    try:
        PLOT(results, png, work)
    finally:
        httpreport.gnuplot = real


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
