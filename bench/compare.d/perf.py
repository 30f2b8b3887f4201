# usage: imported by bench/compare.d/report.py (not run on its own)
"""Issue 23's figures and verdicts: the memory-sized scenarios' goals
(memory-sized, memory-sized-same-ram, memory-sized-seed), goblin-store's
RAM split, and in disk-sized the MB read per HDD seek beside the mean
tail, delivery stalls, the SSD prefix figures and the fixed-prefix session
beside the adaptive one.  Every number comes from the measured results;
a stat this build lacks reads as None ("n/a"), never as 0."""
import os
import re

from cmplib import human
from figures import claim, fmt_us, lat, measured, measured_phase, net_name, table
from limits import pct

JUDGED_NET = "1g"       # the memory-sized QPS and latency claims: the seed's regime
HDD_BUSY_GOAL = 0.95    # disk-sized: goblin-store keeps the spindle this busy
# ... judged where the link can carry what an HDD-bound goblin-store serves
# (~3x the HDD's bytes, the rest from RAM and SSD): not at 1g, whose ~118
# MB/s binds first (the limit row shows it)
HDD_LINK_BOUND_NETS = ("1g",)
LINK_BUSY_GOAL = 0.95   # disk-sized at those networks: the link this busy (issue 23)
SEEK_TAIL_GOAL = 0.9    # disk-sized: MB read per HDD seek over the mean tail
EXTSTORE_QPS_GOAL = 6   # disk-sized: goblin-store's QPS over extstore's
# the memory-sized scenarios (memory_claims: each one's goals)
MEMORY_SCENARIOS = ("memory-sized", "memory-sized-same-ram", "memory-sized-seed")


def memory_claims(scen, res, r, peer, gob, mp, mg):
    """The verdicts of a memory-sized scenario: memory-sized (QPS, latency
    and issue 23's RAM goal judged at 1g, the seed's; the old RAM claim
    elsewhere), memory-sized-seed (1g only: issue 23 at the seed's scale),
    memory-sized-same-ram (every network: issue 23's same-RAM goal)."""
    q, p50, p99 = (r["qps_goblin_over_peer"], r["complete_p50_goblin_over_peer"],
                   r["complete_p99_goblin_over_peer"])
    ram_x = r["ram_peer_over_goblin"]
    ram_text = "memcached/goblin-store RAM = %.2fx (%s vs %s)" % (
        ram_x, human(peer["ram"]["usage_bytes"]), human(gob["ram"]["usage_bytes"]))
    qps_text = "goblin-store/memcached QPS = %.2f (%.1f vs %.1f)" % (q, mg["qps"], mp["qps"])
    claims = []
    if scen == "memory-sized-same-ram":
        claims += [
            claim("throughput within 5% of memcached (issue 23, --memory = -m)",
                  q >= 0.95, qps_text),
            claim("complete p99 within 5% of memcached (issue 23, --memory = -m)",
                  p99 <= 1.05, "goblin-store/memcached complete p99 = %.2f (%s vs %s)" % (
                      p99, fmt_us(lat(gob, "complete", "p99")),
                      fmt_us(lat(peer, "complete", "p99")))),
            claim("cgroup RAM no more than memcached's (issue 23, --memory = -m)",
                  gob["ram"]["usage_bytes"] <= peer["ram"]["usage_bytes"], ram_text),
        ]
    elif net_name(res) == JUDGED_NET:
        claims += [
            claim("throughput within 10% of memcached", q >= 0.9, qps_text),
            claim("latency within 10% of memcached (complete p50, p99)",
                  p50 <= 1.1 and p99 <= 1.1,
                  "goblin-store/memcached complete p50 = %.2f, p99 = %.2f" % (p50, p99)),
        ]
        if scen == "memory-sized-seed":
            claims.append(claim("RAM >= 10x less than memcached at the seed's scale "
                                "(issue 23; seed 7.4x)", ram_x >= 10, ram_text))
        else:
            claims.append(claim("RAM >= 8x less than memcached at the rig's scale "
                                "(issue 23; seed 7.4x)", ram_x >= 8, ram_text))
    else:
        claims.append(claim("RAM >= 6x less than memcached (seed 7.4x)", ram_x >= 6,
                            ram_text))
    return claims + [
        claim("0 misses", mp["misses"] == 0 and mg["misses"] == 0,
              "misses: memcached %d, goblin-store %d" % (mp["misses"], mg["misses"])),
    ]


# goblin-store's RAM, part by part (`stats goblin` after the run): (name, stat)
RAM_PARTS = (("heads", "ram_head_bytes"), ("cached chunks", "ram_chunk_bytes"),
             ("I/O buffers", "io_buffer_bytes"), ("index", "index_bytes"))


def ram_split(p):
    """goblin-store's RAM split: each of RAM_PARTS (None where this build
    has no such stat), and the rest of the process, the cgroup's usage and
    the RSS less their sum."""
    g = p.get("stats_goblin") or {}
    out = {key: g.get(key) for _, key in RAM_PARTS}
    known = sum(v for v in out.values() if v)
    cg, rss = p["ram"]["usage_bytes"], p["ram"]["server_rss_bytes"]
    out.update(cgroup_bytes=cg, rss_bytes=rss, rest_of_cgroup_bytes=cg - known,
               rest_of_rss_bytes=rss - known, ram_region_bytes=g.get("ram_region_bytes"),
               ram_used_bytes=g.get("ram_used_bytes"))
    return out


def ram_split_text(sp):
    """One line: each part, then the rest of the cgroup's usage and RSS."""
    parts = ["%s %s" % (name, "n/a (no %s stat)" % key if sp[key] is None
                        else human(sp[key])) for name, key in RAM_PARTS]
    region = ("; the RAM region (--memory) %s, %s of it allocated" % (
        human(sp["ram_region_bytes"]), human(sp["ram_used_bytes"] or 0))
        if sp.get("ram_region_bytes") is not None else "")
    return "%s; rest of the process %s of the cgroup's %s (of the RSS %s: %s)%s" % (
        ", ".join(parts), human(sp["rest_of_cgroup_bytes"]), human(sp["cgroup_bytes"]),
        human(sp["rss_bytes"]), human(sp["rest_of_rss_bytes"]), region)


# `stats goblin`'s mean SSD prefix, by the names it may carry: a mean; a
# sum over a count; else a histogram of prefix_<size> counts
PREFIX_MEAN_KEYS = ("prefix_mean_bytes", "prefix_bytes_mean", "prefix_avg_bytes",
                    "prefix_bytes_avg")
PREFIX_SUM_KEYS = (("prefix_bytes_total", "prefix_objects"),
                   ("prefix_bytes_sum", "prefix_count"),
                   ("prefix_bytes_sum", "prefix_objects"),
                   ("prefix_bytes", "prefix_objects"))
PREFIX_BUCKET = re.compile(r"^prefix_(?:bytes_)?(?:le_|lt_|upto_|eq_)?(\d+)([kmg]?)"
                           r"(?:_?b|_bytes)?$", re.I)


def prefix_stats(g):
    """Every prefix_* figure of `stats goblin` <g>."""
    return {k: v for k, v in sorted(g.items()) if k.startswith("prefix_")}


def prefix_mean(g):
    """The mean SSD prefix goblin-store chose for its objects, from the
    prefix_* figures of `stats goblin` <g>: PREFIX_MEAN_KEYS, else a sum over
    a count (PREFIX_SUM_KEYS), else a histogram prefix_<size>[K|M|G] (or
    prefix_bytes_le_<size> ...) of object counts, each counted at its
    bucket's size; None without any of these."""
    for k in PREFIX_MEAN_KEYS:
        if isinstance(g.get(k), (int, float)):
            return float(g[k])
    for total, count in PREFIX_SUM_KEYS:
        if isinstance(g.get(total), (int, float)) and g.get(count):
            return g[total] / g[count]
    # goblin-store's: prefix_bytes over the prefix_objects_* counts
    count = sum(v for k, v in g.items() if k.startswith("prefix_objects_")
                and isinstance(v, (int, float)))
    if isinstance(g.get("prefix_bytes"), (int, float)) and count:
        return g["prefix_bytes"] / count
    n = weighted = 0
    for k, v in g.items():
        m = PREFIX_BUCKET.match(k)
        if m and isinstance(v, (int, float)):
            size = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
            n += v
            weighted += v * size
    return weighted / n if n else None


def adaptive_prefix_mean(gob):
    """The mean SSD prefix of the objects goblin-store session <gob> wrote
    in its relayout phase (prefix_bytes / prefix_objects over it: the
    prefixes it sized from what it had measured), else prefix_mean() of its
    stats at the end; None without either."""
    rl = ((gob.get("phases") or {}).get("relayout") or {}).get("heads") or {}
    mean = prefix_mean(rl)
    return mean if mean is not None else prefix_mean(gob.get("stats_goblin") or {})


def disk_figures(gob):
    """goblin-store in disk-sized: MB read per HDD seek beside the mean
    tail (hdd_bytes / hdd_objects: object size less its head and SSD
    prefix, over the objects that have one), delivery stalls over the run
    (per GET), the prefix_* figures and their mean."""
    g = gob.get("stats_goblin") or {}
    ph = measured_phase(gob)
    per_seek = ph["limits"]["hdd"]["read_bytes_per_seek"]
    tail = g["hdd_bytes"] / g["hdd_objects"] if g.get("hdd_objects") else None
    stalls = (ph.get("heads") or {}).get("delivery_stalls")
    gets = ph["run"]["gets"]
    return {"hdd_read_bytes_per_seek": per_seek, "mean_tail_bytes":
            round(tail) if tail is not None else None,
            "seek_over_tail": round(per_seek / tail, 4) if per_seek and tail else None,
            "delivery_stalls": stalls, "delivery_stalls_total": g.get("delivery_stalls"),
            "stalls_per_1000_gets": round(1000 * stalls / gets, 3)
            if stalls is not None and gets else None,
            "ssd_bytes": g.get("ssd_bytes"), "ssd_used_bytes": g.get("ssd_used_bytes"),
            "index_bytes_per_object": g.get("index_bytes_per_object"),
            "mean_prefix_bytes": adaptive_prefix_mean(gob),
            "prefix_stats": prefix_stats(g)}


def disk_text(d):
    """One line of disk_figures."""
    def mb(v):
        return "-" if v is None else "%.2f MB" % (v / 1e6)
    return ("%s read per HDD seek, mean tail %s (%s); delivery stalls %s; mean SSD "
            "prefix %s; SSD object bytes %s; index %s B/object" % (
                mb(d["hdd_read_bytes_per_seek"]), mb(d["mean_tail_bytes"]),
                "-" if d["seek_over_tail"] is None else "%.2fx" % d["seek_over_tail"],
                "n/a (no delivery_stalls stat)" if d["delivery_stalls"] is None
                else "%d (%s per 1000 GETs)" % (d["delivery_stalls"],
                                                d["stalls_per_1000_gets"]),
                "n/a (no prefix_ stats)" if d["mean_prefix_bytes"] is None
                else human(d["mean_prefix_bytes"]),
                "-" if d["ssd_bytes"] is None else human(d["ssd_bytes"]),
                "-" if d.get("index_bytes_per_object") is None
                else "%.0f" % d["index_bytes_per_object"]))


def fixed_text(res):
    """The fixed-prefix session beside the adaptive one, one line."""
    fp = res.get("fixed_prefix")
    if not fp:
        return "not run"
    if "skipped" in fp:
        return "skipped: " + fp["skipped"]
    a, f = res["peers"][1]["disk"], fp["session"]["disk"]

    def n(v):
        return "n/a" if v is None else str(v)
    return ("--fixed-prefix --ssd-prefix %s (the adaptive mean %s): fixed %.1f vs "
            "adaptive %.1f req/s, delivery stalls %s vs %s (%s vs %s per 1000 GETs), "
            "SSD object bytes %s vs %s" % (
                human(fp["ssd_prefix_bytes"]), human(fp["adaptive_mean_prefix_bytes"]),
                measured(fp["session"])["qps"], measured(res["peers"][1])["qps"],
                n(f["delivery_stalls"]), n(a["delivery_stalls"]),
                n(f["stalls_per_1000_gets"]), n(a["stalls_per_1000_gets"]),
                human(f["ssd_bytes"] or 0), human(a["ssd_bytes"] or 0)))


def hdd_busy_claim(gob):
    lim = measured_phase(gob)["limits"]
    hdd = lim["hdd"]
    return claim("goblin-store keeps the HDD busy >= %s of the run, the binding "
                 "resource" % pct(HDD_BUSY_GOAL),
                 hdd["busy"] >= HDD_BUSY_GOAL and lim["binding"] == "HDD",
                 "HDD busy %s of %.1f s (%d seeks, %.2f MB read per seek); "
                 "binding: %s %s" % (
                     pct(hdd["busy"]), lim["seconds"], hdd["seeks"],
                     (hdd["read_bytes_per_seek"] or 0) / 1e6, lim["binding"],
                     pct(lim["binding_busy"])))


def disk_goal_claims(res, r, gob, mp, mg):
    """disk-sized's issue 23 goals: at loopback and 10g the HDD binding and
    busy, MB per seek against the mean tail, 6x extstore's QPS; at 1g the
    link busy.  Also sets gob['disk'] (and the fixed-prefix session's) and
    their ratios."""
    d = gob["disk"] = disk_figures(gob)
    fp = res.get("fixed_prefix") or {}
    if "session" in fp:
        fp["session"]["disk"] = disk_figures(fp["session"])
        r["stalls_per_1000_gets_fixed_prefix"] = fp["session"]["disk"]["stalls_per_1000_gets"]
    r["hdd_bytes_per_seek_over_mean_tail"] = d["seek_over_tail"]
    r["stalls_per_1000_gets_goblin"] = d["stalls_per_1000_gets"]
    if net_name(res) in HDD_LINK_BOUND_NETS:
        link = measured_phase(gob)["limits"]["link"]
        busy = link["busy"] if link else 0
        return [claim("goblin-store keeps the link busy >= %s of the run (issue 23)"
                      % pct(LINK_BUSY_GOAL), busy >= LINK_BUSY_GOAL,
                      "link busy %s (server to client %s of %.3g Gbit/s goodput)" % (
                          pct(busy), pct(link["down"]) if link else "-",
                          link["rate_bps"] / 1e9 if link else 0))]
    q = r["qps_goblin_over_peer"]
    return [
        hdd_busy_claim(gob),
        claim("MB read per HDD seek >= %gx the mean tail (issue 23)" % SEEK_TAIL_GOAL,
              d["seek_over_tail"] is not None and d["seek_over_tail"] >= SEEK_TAIL_GOAL,
              disk_text(d)),
        claim("throughput >= %dx memcached+extstore's (issue 23; was 4.4-4.5x)"
              % EXTSTORE_QPS_GOAL, q >= EXTSTORE_QPS_GOAL,
              "goblin-store/extstore QPS = %.2f (%.1f vs %.1f)" % (q, mg["qps"], mp["qps"])),
    ]


def ram_split_parts(sp):
    """The RAM split's figures in RAM_PARTS order, then the cgroup's rest."""
    return [sp[key] for _, key in RAM_PARTS] + [sp["rest_of_cgroup_bytes"]]


def seek_tail_text(d):
    if d["hdd_read_bytes_per_seek"] is None or d["mean_tail_bytes"] is None:
        return "-"
    return "%.2f MB / %.2f MB (%.2fx)" % (d["hdd_read_bytes_per_seek"] / 1e6,
                                          d["mean_tail_bytes"] / 1e6, d["seek_over_tail"])


def stall_text(d):
    return "%s (%s), %s" % (
        "n/a" if d["delivery_stalls"] is None else d["delivery_stalls"],
        "-" if d["stalls_per_1000_gets"] is None else d["stalls_per_1000_gets"],
        "n/a" if d["mean_prefix_bytes"] is None else human(d["mean_prefix_bytes"]))


def fixed_cell(res):
    fp = res.get("fixed_prefix") or {}
    if "session" not in fp:
        return "skipped" if "skipped" in fp else "-"
    f = fp["session"]["disk"]
    return "%s (%s) at --ssd-prefix %s" % (
        "n/a" if f["delivery_stalls"] is None else f["delivery_stalls"],
        "-" if f["stalls_per_1000_gets"] is None else f["stalls_per_1000_gets"],
        human(fp["ssd_prefix_bytes"]))


def prefix_lines(res):
    """disk-sized: goblin-store's tail reads, stalls and prefix figures, and
    the fixed-prefix session beside the adaptive one."""
    gob = res["peers"][1]
    d = gob["disk"]
    L = ["", "goblin-store's HDD reads and SSD prefix: %s. The mean tail is "
         "hdd_bytes / hdd_objects (object size less ram_head + the SSD prefix, "
         "over the objects with a tail); MB per seek is the device model's read "
         "bytes over its seeks in the measured phase; delivery stalls (gaps over "
         "10 ms after the first byte) are the `stats goblin` delta over it." % disk_text(d),
         "", "prefix_* figures of `stats goblin` after the run: %s." % (
             ", ".join("`%s` %s" % kv for kv in d["prefix_stats"].items()) or "none"),
         "", "Fixed prefix vs adaptive at equal SSD bytes: %s." % fixed_text(res)]
    fp = res.get("fixed_prefix") or {}
    if "session" in fp:
        f = fp["session"]
        L += [""] + table(
            ["goblin-store", "--ssd-prefix", "req/s", "complete p99", "delivery stalls",
             "per 1000 GETs", "MB per HDD seek", "HDD busy", "SSD object bytes"],
            [[name, prefix, "%.1f" % measured(p)["qps"], fmt_us(lat(p, "complete", "p99")),
              "-" if p["disk"]["delivery_stalls"] is None else p["disk"]["delivery_stalls"],
              "-" if p["disk"]["stalls_per_1000_gets"] is None
              else p["disk"]["stalls_per_1000_gets"],
              "-" if p["disk"]["hdd_read_bytes_per_seek"] is None
              else "%.2f" % (p["disk"]["hdd_read_bytes_per_seek"] / 1e6),
              pct(measured_phase(p)["limits"]["hdd"]["busy"]),
              "-" if p["disk"]["ssd_bytes"] is None else human(p["disk"]["ssd_bytes"])]
             for name, prefix, p in (("adaptive", "(max, default)", gob),
                                     ("--fixed-prefix", human(fp["ssd_prefix_bytes"]), f))])
        L.append("\n- fixed-prefix session: `%s`" % " ".join(
            os.path.basename(a) if i == 0 else a for i, a in enumerate(f["argv"])))
    return L
