# usage: imported by bench/compare (not run on its own)
"""bench/compare's verdicts, ratio lines, results files, markdown summary
and gnuplot plots.  Every number here comes from the measured results.
Results are keyed by (scenario, network); each carries its network's meta."""
import json
import os
import subprocess

from cmplib import GIB, MIB, TOP, Failure, human
from figures import (claim, fmt_us, lat, measured, measured_phase, net_name,
                     ratio, table)
from limits import limit_text
from perf import (MEMORY_SCENARIOS, disk_goal_claims, disk_text, fixed_cell,
                  fixed_text, memory_claims, prefix_lines, ram_split,
                  ram_split_parts, ram_split_text, seek_tail_text, stall_text)


SEED = {  # what the seed document reported, quoted beside each verdict
    "memory-sized": "same latency, 7.4x less RAM (267 MiB vs 1.97 GiB), 0 misses",
    "disk-sized": "+68% throughput (118 vs 70 QPS), less RAM, ~25% lower cost, "
                  "HDD tail near spindle rate (~210 MB/s); extstore <= 0.4% misses",
    "durability": "extstore lost 41.5% of a full-speed load; goblin-store 0",
    "small-objects": "memcached ~12x less RAM (152 MiB vs 1.78 GiB) and ~2x faster",
    "memory-sized-same-ram": "(not run by the seed; issue 23's tried run: goblin-store "
                             "0.12x memcached's QPS holding 430 MiB against 306 MiB)",
    "memory-sized-seed": "same latency, 7.4x less RAM (267 MiB vs 1.97 GiB), 0 misses, "
                         "at this scale (~2 GiB set, 3.7 GiB server)",
}


# `stats goblin` counters taken around each goblin-store phase
HEAD_COUNTERS = ("head_hits", "head_misses", "head_admissions",
                 "head_evictions", "evictions", "disk_evictions", "disk_reads",
                 "disk_read_bytes")
# ... and these where the build has them (deltas only when both ends do)
OPTIONAL_COUNTERS = ("delivery_stalls", "prefix_bytes", "prefix_objects_0",
                     "prefix_objects_le_256k", "prefix_objects_le_512k",
                     "prefix_objects_le_1m", "prefix_objects_gt_1m",
                     "chunk_hits", "chunk_hit_bytes")


def head_delta(before, after):
    """The head cache over one phase: counter deltas, the heads and objects
    held at its end, and the head hit ratio (lookups of on-disk objects
    whose head was in RAM; None without such lookups)."""
    out = {k: after[k] - before[k] for k in HEAD_COUNTERS}
    out.update({k: after[k] - before[k] for k in OPTIONAL_COUNTERS
                if k in before and k in after})
    out["ram_heads"], out["objects"] = after["ram_heads"], after["objects"]
    looks = out["head_hits"] + out["head_misses"]
    out["head_hit_ratio"] = round(out["head_hits"] / looks, 4) if looks else None
    return out


def heads_text(p):
    """One line on goblin-store's head cache in its measured phase."""
    h = measured_phase(p).get("heads")
    if not h:
        return "no head counters"
    hr = h["head_hit_ratio"]
    return ("head hits %d, misses %d (hit ratio %s); admitted %d, dropped %d; "
            "%d heads in RAM for %d objects" % (
                h["head_hits"], h["head_misses"],
                "n/a" if hr is None else "%.3f" % hr, h["head_admissions"],
                h["head_evictions"], h["ram_heads"], h["objects"]))


def phase_line(res):
    st = res.get("run") or res["populate"]
    line = ("%d requests, %.1f req/s, %.1f MB/s, hits %d, misses %d, errors %d, "
            "verify errors %d" % (st["requests"], st["qps"], st["payload_mb_per_s"],
                                  st["hits"], st["misses"], st["errors"],
                                  st["verify_errors"]))
    if not res.get("run"):
        line = ("%d sets in %.1f s (%.1f MB/s), errors %d"
                % (st["sets"], st["seconds"], st["payload_mb_per_s"], st["errors"]))
    return line


def disk_bytes(p):
    """Bytes the peer occupies on each emulated device."""
    if p["kind"] == "goblin-store":
        g = p["stats_goblin"]
        return {"ssd": g["ssd_used_bytes"], "hdd": g["hdd_used_bytes"]}
    return {"ssd": 0, "hdd": sum(p["files_bytes"].values())}


def fio_hdd_seq_mbps(res):
    """The spindle's streaming rate: fio's best 1 MiB sequential read."""
    rates = [j["mbps"] for dev in res["meta"]["fio_check"]["devices"]
             if dev["device"] == "hdd" for j in dev["jobs"] if j["rw"] == "read"]
    if not rates:
        raise Failure("the fio check has no hdd sequential read job")
    return max(rates)


def open_ratios(r, peer, gob):
    """goblin-store/peer complete latency in the open-loop phase."""
    if "open" not in gob["phases"] or "open" not in peer["phases"]:
        return
    for pct_ in ("p50", "p99", "p99_9"):
        r["open_complete_%s_goblin_over_peer" % pct_] = ratio(
            open_lat(gob, pct_), open_lat(peer, pct_))


def open_lat(p, pct_):
    return p["phases"]["open"]["run"]["latency_us"]["complete"][pct_]


def evaluate(scen, res):
    """Adds res['ratios'] and res['claims'] (goblin-store vs its peer)."""
    peer, gob = res["peers"]
    mp, mg = measured(peer), measured(gob)
    r = {"qps_goblin_over_peer": ratio(mg["qps"], mp["qps"]),
         "ram_peer_over_goblin": ratio(peer["ram"]["usage_bytes"],
                                       gob["ram"]["usage_bytes"]),
         "rss_peer_over_goblin": ratio(peer["ram"]["server_rss_bytes"],
                                       gob["ram"]["server_rss_bytes"])}
    for which in ("ttfb", "complete"):
        for pct_ in ("p50", "p99", "p99_9"):
            r["%s_%s_goblin_over_peer" % (which, pct_)] = ratio(
                lat(gob, which, pct_), lat(peer, which, pct_))
    claims = []
    open_ratios(r, peer, gob)
    if scen in MEMORY_SCENARIOS:
        claims = memory_claims(scen, res, r, peer, gob, mp, mg)
        gob["ram_split"] = ram_split(gob)
    elif scen == "disk-sized":
        prices = res["scale"]["prices_per_gib_month"]
        for p in (peer, gob):
            m = measured(p)
            d = disk_bytes(p)
            stored = res["scale"]["set_bytes"] * (m["hits"] / m["gets"] if m["gets"] else 0)
            month = (p["ram"]["usage_bytes"] * prices["ram"] + d["ssd"] * prices["ssd"]
                     + d["hdd"] * prices["hdd"]) / GIB
            p["cost"] = {"ram_bytes": p["ram"]["usage_bytes"], "ssd_bytes": d["ssd"],
                         "hdd_bytes": d["hdd"], "stored_bytes": int(stored),
                         "dollars_per_month": round(month, 4),
                         "dollars_per_stored_gib_month":
                             round(month / (stored / GIB), 4) if stored else None}
        fio = fio_hdd_seq_mbps(res)
        hdd = gob["phases"]["run"]["devices"]["hdd"]["read_mb_per_s"]
        r["hdd_read_mb_per_s_goblin"] = hdd
        r["hdd_read_mb_per_s_peer"] = peer["phases"]["run"]["devices"]["hdd"]["read_mb_per_s"]
        r["hdd_fio_seq_mb_per_s"] = fio
        r["hdd_goblin_over_fio"] = ratio(hdd, fio)
        cg, cp = (gob["cost"]["dollars_per_stored_gib_month"],
                  peer["cost"]["dollars_per_stored_gib_month"])
        r["cost_goblin_over_peer"] = ratio(cg or 0, cp or 0)
        claims = [
            claim("throughput >= 1.68x memcached+extstore's (seed +68%)",
                  r["qps_goblin_over_peer"] >= 1.68,
                  "goblin-store/extstore QPS = %.2f (%.1f vs %.1f)" % (
                      r["qps_goblin_over_peer"], mg["qps"], mp["qps"])),
            claim("HDD read throughput >= 80% of the spindle's fio figure",
                  r["hdd_goblin_over_fio"] >= 0.8,
                  "goblin-store read the HDD at %.1f MB/s; fio 1 MiB sequential "
                  "(best of QD1, QD8): %.1f MB/s (%.0f%%)" % (hdd, fio, 100 * r["hdd_goblin_over_fio"])),
            claim("less RAM than memcached+extstore",
                  gob["ram"]["usage_bytes"] < peer["ram"]["usage_bytes"],
                  "%s vs %s" % (human(gob["ram"]["usage_bytes"]),
                                human(peer["ram"]["usage_bytes"]))),
            claim("lower cost per stored GiB (seed ~25% lower)",
                  cg is not None and cp is not None and cg < cp,
                  "$%s vs $%s per stored GiB-month (%.2fx)" % (
                      cg, cp, r["cost_goblin_over_peer"])),
            claim("extstore holds the set (seed <= 0.4% misses)",
                  mp["misses"] <= 0.004 * mp["gets"],
                  "misses: extstore %d of %d gets, goblin-store %d of %d" % (
                      mp["misses"], mp["gets"], mg["misses"], mg["gets"])),
        ]
        claims += disk_goal_claims(res, r, gob, mp, mg)
    elif scen == "durability":
        for p in (peer, gob):
            pop = p["phases"]["populate"]["populate"]
            rb = p["phases"]["read-back"]["run"]
            p["durability"] = {
                "keys": res["scale"]["keys"], "acknowledged": pop["sets"],
                "rejected": pop["set_errors"], "missing": rb["misses"],
                "missing_acknowledged": max(0, rb["misses"] - pop["set_errors"]),
                "corrupt": rb["verify_errors"], "read_errors": rb["get_errors"],
                "load_mb_per_s": pop["payload_mb_per_s"],
                "lost_fraction": round(rb["misses"] / res["scale"]["keys"], 4)}
        dp, dg = peer["durability"], gob["durability"]
        claims = [
            claim("goblin-store loses 0 objects and serves 0 corrupt ones",
                  dg["missing"] == 0 and dg["corrupt"] == 0 and dg["read_errors"] == 0,
                  "goblin-store: %d missing (%d acknowledged), %d corrupt, %d read "
                  "errors, %d sets refused" % (dg["missing"], dg["missing_acknowledged"],
                                               dg["corrupt"], dg["read_errors"],
                                               dg["rejected"])),
            claim("memcached+extstore sheds part of a full-speed load (seed 41.5%)",
                  dp["missing"] > 0,
                  "extstore: %d of %d missing (%.1f%%), %d corrupt" % (
                      dp["missing"], dp["keys"], 100 * dp["lost_fraction"], dp["corrupt"])),
        ]
    elif scen == "small-objects":
        ram_m = ratio(gob["ram"]["usage_bytes"], peer["ram"]["usage_bytes"])
        q = ratio(mp["qps"], mg["qps"])
        r["ram_goblin_over_peer"] = ram_m
        r["qps_peer_over_goblin"] = q
        sg, gr = gob.get("stats_goblin") or {}, gob["ram"]
        where = ("goblin-store: RSS %s; arena %s live in %s segments; index %s"
                 " B/object; cgroup cache %s, of it %s the region's shmem" % (
                     human(gr.get("rss_bytes", 0)),
                     human(sg.get("arena_bytes_live", 0)),
                     sg.get("arena_segments", "?"),
                     sg.get("index_bytes_per_object", "?"),
                     human(gr.get("cache_bytes", 0)),
                     human(gr.get("shmem_bytes", 0))))
        claims = [
            claim("goblin-store's RAM <= 1.2x memcached's (issue 14)",
                  ram_m <= 1.2,
                  "%.2fx (%s vs %s); %s" % (
                      ram_m, human(gob["ram"]["usage_bytes"]),
                      human(peer["ram"]["usage_bytes"]), where)),
            claim("goblin-store's QPS >= 0.9x memcached's (issue 14)",
                  q <= 1 / 0.9,
                  "%.2fx (%.0f vs %.0f)" % (1 / q, mg["qps"], mp["qps"])),
            claim("memcached wins on small objects (seed: ~12x less RAM, ~2x QPS)",
                  ram_m > 1 or q > 1,
                  "memcached uses %.2fx less RAM and serves %.2fx the QPS" % (
                      ram_m, q)),
            claim("0 misses", mp["misses"] == 0 and mg["misses"] == 0,
                  "misses: memcached %d, goblin-store %d" % (mp["misses"], mg["misses"])),
        ]
    h = measured_phase(gob).get("heads") or {}
    r["goblin_head_hit_ratio"] = h.get("head_hit_ratio")
    res["ratios"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}
    for c in claims:
        c["network"] = net_name(res)
    res["claims"] = claims
    res["seed_reported"] = SEED[scen]


def ratio_lines(scen, res):
    peer, gob = res["peers"]
    r, sc = res["ratios"], res["scale"]
    out = ["", "== %s at %s: %d keys (%s, %s set), server RAM %s, %d connections" % (
        scen, net_name(res), sc["keys"], sc["dist"], human(sc["set_bytes"]),
        human(sc["server_ram_bytes"]), sc["conns"])]
    for p in (peer, gob):
        m = measured(p)
        out.append("   %-20s %8.1f req/s %8.1f MB/s  ttfb p50 %8.0f us  complete "
                   "p50 %8.0f p99 %8.0f us  misses %d  RAM %s" % (
                       p["peer"], m["qps"], m["payload_mb_per_s"],
                       lat(p, "ttfb", "p50"), lat(p, "complete", "p50"),
                       lat(p, "complete", "p99"), m["misses"],
                       human(p["ram"]["usage_bytes"])))
    out.append("   ratios goblin-store/%s: QPS %.3g, complete p50 %.3g, p99 %.3g, "
               "ttfb p50 %.3g; RAM %s/goblin-store %.3gx" % (
                   peer["peer"], r["qps_goblin_over_peer"],
                   r["complete_p50_goblin_over_peer"], r["complete_p99_goblin_over_peer"],
                   r["ttfb_p50_goblin_over_peer"], peer["peer"], r["ram_peer_over_goblin"]))
    for p in (peer, gob):
        out.append("   limit %-14s %s" % (p["peer"], limit_text(measured_phase(p)["limits"])))
    if "ram_split" in gob:
        out.append("   goblin-store RAM split: " + ram_split_text(gob["ram_split"]))
    if "disk" in gob:
        out.append("   goblin-store: " + disk_text(gob["disk"]))
        out.append("   prefix_* in stats goblin: %s" % (", ".join(
            "%s %s" % kv for kv in gob["disk"]["prefix_stats"].items()) or "none"))
        out.append("   fixed prefix vs adaptive, equal SSD bytes: " + fixed_text(res))
    if "open_loop" in sc:
        out.append("   open loop, %s arrivals at %.1f/s: complete p50 / p99 / p99.9 %s; "
                   "%s" % (sc["open_loop"]["arrivals"], sc["open_loop"]["rate_per_s"],
                           " vs ".join("%s %s" % (p["peer"], open_text(p)) for p in (peer, gob)),
                           "; ".join("%s queued %d, unissued %d" % (
                               p["peer"], p["phases"]["open"]["run"]["open_loop"]["queued"],
                               p["phases"]["open"]["run"]["open_loop"]["unissued"])
                               for p in (peer, gob))))
    out.append("   goblin-store --memory %s, --ram-head %s%s: %s" % (
        human(sc["goblin_memory_bytes"]), human(sc.get("goblin_ram_head_bytes", 0)),
        ", hot set keys [%d, +%d)" % (sc["hot_start"], sc["hot_keys"])
        if "hot_keys" in sc else "", heads_text(gob)))
    for row in beside_rows(res):
        out.append("   %-34s this run %-16s last published %s" % tuple(row[:3]))
    for c in res["claims"]:
        out.append("   %-9s %s: %s" % ("HOLDS" if c["holds"] else "NOT MET",
                                       c["claim"], c["measured"]))
    return out


def open_text(p):
    return " / ".join(fmt_us(open_lat(p, x)) for x in ("p50", "p99", "p99_9"))


def beside_rows(res):
    """[figure, this run, last published, file] rows: the ratios, each
    peer's QPS and RAM, goblin-store's head settings."""
    last = res.get("last_published")
    if not last:
        return []
    peer, gob = res["peers"]
    lp, lg = last["peers"].get(peer["kind"], {}), last["peers"].get("goblin-store", {})
    r, lr, sc, ls = res["ratios"], last["ratios"], res["scale"], last["scale"]

    def f(v, fmt):
        return "-" if v is None else fmt % v
    rows = []
    for key, name in (("qps_goblin_over_peer", "QPS goblin-store/%s" % peer["peer"]),
                      ("ram_peer_over_goblin", "RAM %s/goblin-store" % peer["peer"])):
        rows.append([name, f(r[key], "%.3gx"), f(lr.get(key), "%.3gx")])
    for kind, now, then in ((peer["peer"], peer, lp), ("goblin-store", gob, lg)):
        rows.append(["%s req/s" % kind, "%.1f" % measured(now)["qps"],
                     f(then.get("qps"), "%.1f")])
        rows.append(["%s RAM" % kind, human(now["ram"]["usage_bytes"]),
                     "-" if then.get("ram_bytes") is None else human(then["ram_bytes"])])
        if "durability" in now:
            rows.append(["%s missing" % kind, str(now["durability"]["missing"]),
                         f(then.get("missing"), "%d")])
    rows.append(["goblin-store --memory / --ram-head", "%s / %s" % (
        human(sc["goblin_memory_bytes"]), human(sc["goblin_ram_head_bytes"])),
        "%s / %s" % (human(ls["goblin_memory_bytes"]),
                     human(ls["goblin_ram_head_bytes"]) if "goblin_ram_head_bytes"
                     in ls else "default")])
    rows.append(["goblin-store head hit ratio", f(r.get("goblin_head_hit_ratio"), "%.3f"),
                 f(lr.get("goblin_head_hit_ratio"), "%.3f")])
    return [row + [last["file"]] for row in rows]


def claim_lines(results):
    out = ["", "claims:"]
    for (scen, net), res in results.items():
        for c in res["claims"]:
            out.append("  %-13s %-8s %-8s %s -- %s" % (
                scen, net, "holds" if c["holds"] else "NOT MET", c["claim"], c["measured"]))
    return out


# ---- files ----

def json_name(stem, scen, net):
    return "%s-%s-%s.json" % (stem, scen, net)


def publish(results, out_dir, stem, work):
    """Writes the JSON, plots and summary into <out_dir>, named <stem>-...
    (the date, and the label if any); returns paths."""
    files = []
    for (scen, net), res in results.items():
        path = os.path.join(out_dir, json_name(stem, scen, net))
        with open(path + ".new", "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(path + ".new", path)
        files.append(path)
    files += plots(results, out_dir, stem, work)
    path = os.path.join(out_dir, "%s-summary.md" % stem)
    with open(path, "w") as f:
        f.write(summary(results, stem, out_dir))
    files.append(path)
    return files


def gnuplot(script, work):
    res = subprocess.run(["gnuplot"], input=script, capture_output=True,
                         text=True, cwd=work)
    if res.returncode:
        raise Failure("gnuplot failed: " + res.stderr.strip()[-400:])


COLORS = {"memcached": "#1f77b4", "memcached+extstore": "#1f77b4",
          "goblin-store": "#d62728"}


def networks(results):
    """The networks of <results>, in run order."""
    return list(dict.fromkeys(net for _, net in results))


def scenarios(results):
    return list(dict.fromkeys(scen for scen, _ in results))


def plots(results, out_dir, stem, work):
    files = []
    for (scen, net), res in results.items():
        png = os.path.join(out_dir, "%s-%s-%s-cdf.png" % (stem, scen, net))
        lines = []
        for i, p in enumerate(res["peers"]):
            for which, dash in (("complete", 1), ("ttfb", 2)):
                dat = os.path.join(work, "%s-%s-%d-%s.dat" % (scen, net, i, which))
                with open(dat, "w") as f:
                    for pct_, us in measured(p)["latency_us"][which]["cdf"]:
                        f.write("%g %g\n" % (max(us, 1) / 1000.0, pct_))
                lines.append("'%s' using 1:2 with lines lw 2 dt %d lc rgb '%s' "
                             "title '%s %s'" % (dat, dash, COLORS[p["kind"]],
                                                p["peer"], "complete" if which ==
                                                "complete" else "first byte"))
        gnuplot("set terminal pngcairo size 900,520 font ',10'\n"
                "set output '%s'\nset logscale x\nset grid\n"
                "set xlabel 'latency (ms, log scale)'\nset ylabel 'percentile'\n"
                "set yrange [0:100]\nset key bottom right\n"
                "set title '%s at %s: latency CDF (%s, %d keys, %d conns)'\nplot %s\n" % (
                    png, scen, net, res["scale"]["dist"], res["scale"]["keys"],
                    res["scale"]["conns"], ", \\\n  ".join(lines)), work)
        files.append(png)
    for net in networks(results):
        sub = {scen: res for (scen, n), res in results.items() if n == net}
        files.append(bars(sub, out_dir, "%s-%s" % (stem, net), work, "throughput",
                          lambda scen, p: (100.0 * p["durability"]["missing"] /
                                           p["durability"]["keys"] if scen == "durability"
                                           else measured(p)["qps"]),
                          lambda scen: "% of keys missing" if scen == "durability"
                          else "req/s"))
        files.append(bars(sub, out_dir, "%s-%s" % (stem, net), work, "ram",
                          lambda scen, p: p["ram"]["usage_bytes"] / MIB,
                          lambda scen: "server RAM, MiB (cgroup)"))
    return files


def bars(results, out_dir, stem, work, name, value, unit):
    png = os.path.join(out_dir, "%s-%s.png" % (stem, name))
    n = len(results)
    script = ["set terminal pngcairo size %d,420 font ',10'" % (400 * n),
              "set output '%s'" % png, "set style fill solid 0.8 border -1",
              "set boxwidth 0.6", "set yrange [0:*]", "set grid ytics",
              "set offsets 0, 0, graph 0.12, 0",
              "unset key", "set multiplot layout 1,%d title '%s by scenario "
              "(%s)'" % (n, "Throughput" if name == "throughput" else "Server RAM",
                         stem)]
    for scen, res in results.items():
        dat = os.path.join(work, "%s-%s-%s.dat" % (stem, name, scen))
        with open(dat, "w") as f:
            for i, p in enumerate(res["peers"]):
                f.write("%d \"%s\" %g %d\n" % (i, p["peer"], value(scen, p),
                                               int(COLORS[p["kind"]][1:], 16)))
        script += ["set title '%s'" % scen, "set ylabel '%s'" % unit(scen),
                   "set xrange [-0.6:1.6]",
                   "plot '%s' using 1:3:(0.6):4:xtic(2) "
                   "with boxes lc rgb variable, '' using 1:3:(sprintf($3 >= 100 ? '%%.0f' : '%%.3g', $3)) "
                   "with labels offset 0,0.8" % dat]
    script.append("unset multiplot")
    gnuplot("\n".join(script) + "\n", work)
    return png


def net_text(network):
    """A network as the rig measured it (bench/rig/net-check's figures)."""
    if "rate_bps" not in network:
        return "no link (%s)" % network["name"]
    rtt = network.get("rtt_us")
    rtt = rtt.get("p50") if isinstance(rtt, dict) else rtt
    return ("%.3g Gbit/s, RTT %s us (target %s us); TCP goodput client to server "
            "%.3g, server to client %.3g Gbit/s (target %.3g)%s" % (
                network["rate_bps"] / 1e9, "-" if rtt is None else "%.0f" % rtt,
                network.get("target_rtt_us", "-"), network.get("c2s_bps", 0) / 1e9,
                network.get("s2c_bps", 0) / 1e9,
                network.get("target_goodput_bps", 0) / 1e9,
                "" if network.get("ok", True) else "; **check failed**: " +
                "; ".join(network.get("problems", []))))


def network_rows(by_net):
    """The rows of a scenario's side-by-side table: one column per network
    (<by_net>: net -> results), each figure a row; 'limit' rows last."""
    first = next(iter(by_net.values()))
    names = [p["peer"] for p in first["peers"]]
    peer = names[0]

    def row(label, f):
        return [label] + [f(res) for res in by_net.values()]

    def each(label, f, fmt="{peer} {label}"):
        return [row(fmt.format(peer=n, label=label), lambda res, i=i: f(res["peers"][i]))
                for i, n in enumerate(names)]
    rows = [row("network, as measured", lambda res: net_text(res["network"]))]
    rows += each("req/s", lambda p: "%.1f" % measured(p)["qps"])
    rows += each("complete p50 / p99 / p99.9", lambda p: " / ".join(
        fmt_us(lat(p, "complete", x)) for x in ("p50", "p99", "p99_9")))
    rows += each("first byte p50", lambda p: fmt_us(lat(p, "ttfb", "p50")))
    rows.append(row("QPS goblin-store/%s" % peer,
                    lambda res: "%.3gx" % res["ratios"]["qps_goblin_over_peer"]))
    rows.append(row("complete p50, p99 goblin-store/%s" % peer, lambda res: "%.3gx, %.3gx" % (
        res["ratios"]["complete_p50_goblin_over_peer"],
        res["ratios"]["complete_p99_goblin_over_peer"])))
    rows += each("RAM", lambda p: human(p["ram"]["usage_bytes"]))
    rows.append(row("RAM (cgroup) %s/goblin-store" % peer,
                    lambda res: "%.3gx" % res["ratios"]["ram_peer_over_goblin"]))
    if "ram_split" in first["peers"][1]:
        rows.append(row("goblin-store RAM: heads / cached chunks / I/O buffers / index "
                        "/ rest of the cgroup", lambda res: " / ".join(
                            "-" if v is None else human(v) for v in ram_split_parts(
                                res["peers"][1]["ram_split"]))))
    if "disk" in first["peers"][1]:
        rows.append(row("goblin-store MB read per HDD seek / mean tail", lambda res:
                        seek_tail_text(res["peers"][1]["disk"])))
        rows.append(row("goblin-store delivery stalls (per 1000 GETs), mean SSD prefix",
                        lambda res: stall_text(res["peers"][1]["disk"])))
        rows.append(row("fixed prefix at equal SSD bytes: delivery stalls (per 1000 "
                        "GETs)", lambda res: fixed_cell(res)))
    if "durability" in first["peers"][0]:
        rows += each("missing", lambda p: "%d (%.1f%%)" % (
            p["durability"]["missing"], 100 * p["durability"]["lost_fraction"]))
    if "open_loop" in first["scale"]:
        rows.append(row("open loop: offered rate", lambda res: "%.1f/s, %s arrivals" % (
            res["scale"]["open_loop"]["rate_per_s"], res["scale"]["open_loop"]["arrivals"])))
        rows += each("open loop complete p50 / p99 / p99.9", open_text)
        rows += each("open loop queued / unissued", lambda p: "%d / %d" % (
            p["phases"]["open"]["run"]["open_loop"]["queued"],
            p["phases"]["open"]["run"]["open_loop"]["unissued"]))
    rows += each("limit", lambda p: limit_text(measured_phase(p)["limits"]), "{label}, {peer}")
    if "open_loop" in first["scale"]:
        rows += each("limit in the open loop", lambda p: limit_text(
            p["phases"]["open"]["limits"]), "{label}, {peer}")
    return rows


def summary_head(results):
    by_net = {net: next(res for (s, n), res in results.items() if n == net)
              for net in networks(results)}
    meta = next(iter(by_net.values()))["meta"]
    L = ["# goblin-store vs memcached and memcached+extstore: %s (%s run%s)\n" % (
        meta["date"], meta["mode"], ", " + meta["label"] if meta.get("label") else "")]
    L.append("Made by `%s` (`make bench` for the full run) at git %s on %s "
             "(%d cpus, kernel %s); %s, %s, %s.\n" % (
                 meta["command"], meta["git_head"][:12], meta["host"], meta["cpus"],
                 meta["kernel"], meta["goblin_store"], meta["memcached"],
                 meta["goblin_bench"]))
    rig = meta["rig"]
    L.append("Rig (bench/rig): every server runs alone in the same memory cgroup "
             "(limit %s, page cache included) pinned to cpu %s; goblin-bench and "
             "the device models run on cpu %s. Ratios are goblin-store over its "
             "peer unless named otherwise; absolute numbers on this shared 2-core "
             "machine drift. Each network had its own rig bring-up:\n" % (
                 human(int(rig["server_ram"])), rig["server_cpu"], rig["client_cpu"]))
    L += table(["network", "as measured", "wall time (all its scenarios)"],
               [[net, net_text(res["network"]), "%.0f s" % res["meta"].get("wall_seconds", 0)]
                for net, res in by_net.items()])
    L.append("\nThe \"limit\" rows name the resource that bounds each peer's measured "
             "phase (in bold) and how busy each resource was over it: the emulated "
             "HDD and SSD (seeks x access time + bytes / bandwidth, per channel, "
             "over the run time; MB read per HDD seek), the link (payload bytes / "
             "run time / the link's TCP goodput, the busier direction), the "
             "server's core and the client's (CPU time / run time). A saturated "
             "device can read a little above 100%: I/O booked in the run may end "
             "just after it.\n")
    return L


def summary(results, stem, out_dir):
    L = summary_head(results)
    L.append("## Claims\n")
    in_order = sorted(results.items(), key=lambda kv: scenarios(results).index(kv[0][0]))
    L += table(["scenario", "network", "claim", "verdict", "measured"],
               [[scen, net, c["claim"], "holds" if c["holds"] else "**does not hold**",
                 c["measured"]] for (scen, net), res in in_order for c in res["claims"]])
    L.append("")
    fails = [(s, n, c) for (s, n), res in in_order for c in res["claims"]
             if not c["holds"]]
    if fails:
        L.append("In plain words, goblin-store falls short here:\n")
        for scen, net, c in fails:
            L.append("- %s at %s: the claim \"%s\" does not hold on this rig -- %s." % (
                scen, net, c["claim"], c["measured"]))
        L.append("")
    for scen in scenarios(results):
        by_net = {n: res for (s, n), res in results.items() if s == scen}
        first = next(iter(by_net.values()))
        sc = first["scale"]
        L.append("## %s\n" % scen)
        L.append("%d keys, `--dist %s`, set %s (%s the %s RAM budget), %d "
                 "connections%s. Seed reported: %s.\n" % (
                     sc["keys"], sc["dist"], human(sc["set_bytes"]),
                     "%.2fx" % (sc["set_bytes"] / sc["server_ram_bytes"]),
                     human(sc["server_ram_bytes"]), sc["conns"],
                     ", %d s measured" % sc["duration_s"] if "duration_s" in sc else "",
                     first["seed_reported"]))
        L += table(["figure"] + list(by_net), network_rows(by_net))
        L.append("")
        for net, res in by_net.items():
            L += scenario_detail(scen, net, res, stem, out_dir)
    L.append("## Throughput and RAM\n")
    for net in networks(results):
        L.append("![throughput at %s](%s-%s-throughput.png)\n" % (net, stem, net))
        L.append("![server RAM at %s](%s-%s-ram.png)\n" % (net, stem, net))
    L.append("## The rig's fio check\n")
    for net in networks(results):
        res = next(r for (s, n), r in results.items() if n == net)
        L += fio_table(net, res["meta"]["fio_check"])
    return "\n".join(L) + "\n"


def scenario_detail(scen, net, res, stem, out_dir):
    """A scenario at one network: each peer's figures, command line, head
    cache, the last published run beside it, device counters, the CDF."""
    sc = res["scale"]
    L = ["### %s at %s\n" % (scen, net)]
    L += table(["peer", "req/s", "MB/s", "first byte p50 / p99",
                "complete p50 / p99 / p99.9", "hits", "misses", "errors",
                "RAM (cgroup)", "RSS"],
               [[p["peer"], "%.1f" % measured(p)["qps"],
                 "%.1f" % measured(p)["payload_mb_per_s"],
                 "%s / %s" % (fmt_us(lat(p, "ttfb", "p50")), fmt_us(lat(p, "ttfb", "p99"))),
                 "%s / %s / %s" % (fmt_us(lat(p, "complete", "p50")),
                                   fmt_us(lat(p, "complete", "p99")),
                                   fmt_us(lat(p, "complete", "p99_9"))),
                 measured(p)["hits"], measured(p)["misses"], measured(p)["errors"],
                 human(p["ram"]["usage_bytes"]), human(p["ram"]["server_rss_bytes"])]
                for p in res["peers"]])
    L.append("")
    for p in res["peers"]:
        pop = p["phases"]["populate"]["populate"]
        L.append("- %s: `%s`; populate %d sets, %d refused, %.1f MB/s" % (
            p["peer"], " ".join(os.path.basename(a) if i == 0 else a
                                for i, a in enumerate(p["argv"])),
            pop["sets"], pop["set_errors"], pop["payload_mb_per_s"]))
    L.append("- goblin-store's head cache in the measured phase (`stats "
             "goblin` deltas), --memory %s, --ram-head %s%s: %s" % (
                 human(sc["goblin_memory_bytes"]), human(sc["goblin_ram_head_bytes"]),
                 "; hot set: keys [%d, %d), one in %d, read uniformly" % (
                     sc["hot_start"], sc["hot_start"] + sc["hot_keys"],
                     round(sc["keys"] / sc["hot_keys"])) if "hot_keys" in sc else "",
                 heads_text(res["peers"][1])))
    rows = beside_rows(res)
    if rows:
        L.append("\nBeside the last published run ([%s](%s), %s run at git %s):\n" % (
            os.path.basename(rows[0][3]), os.path.relpath(
                os.path.join(TOP, rows[0][3]), out_dir),
            res["last_published"]["mode"], res["last_published"]["git_head"][:12]))
        L += table(["figure", "this run", "last published"], [r[:3] for r in rows])
    if "ram_split" in res["peers"][1]:
        L.append("\ngoblin-store's RAM after the run, part by part (`stats goblin`: "
                 "ram_head_bytes, ram_chunk_bytes, io_buffer_bytes, index_bytes; the "
                 "rest is the cgroup's usage, or the RSS, less their sum): %s.\n" % (
                     ram_split_text(res["peers"][1]["ram_split"])))
    if scen == "disk-sized":
        L += cost_lines(res)
        L += prefix_lines(res)
    if scen == "durability":
        L.append("")
        L += table(["peer", "load MB/s", "acknowledged", "refused", "missing",
                    "of them acknowledged", "corrupt"],
                   [[p["peer"], "%.1f" % d["load_mb_per_s"], d["acknowledged"],
                     d["rejected"], "%d (%.1f%%)" % (d["missing"], 100 * d["lost_fraction"]),
                     d["missing_acknowledged"], d["corrupt"]]
                    for p in res["peers"] for d in [p["durability"]]])
    L.append("")
    for p in res["peers"]:
        d = measured_phase(p)["devices"]
        L.append("- %s, measured phase on the emulated devices: HDD %d reads "
                 "(%d seeks, %.1f MB/s), SSD %d reads (%d seeks, %.1f MB/s); "
                 "model replies late: %d" % (
                     p["peer"], d["hdd"]["reads"], d["hdd"]["seeks"],
                     d["hdd"]["read_mb_per_s"], d["ssd"]["reads"],
                     d["ssd"]["seeks"], d["ssd"]["read_mb_per_s"],
                     d["hdd"]["late"] + d["ssd"]["late"]))
    L.append("\n![%s at %s latency CDF](%s-%s-%s-cdf.png)\n" % (scen, net, stem, scen, net))
    return L


def cost_lines(res):
    sc = res["scale"]
    L = [""]
    L += table(["peer", "RAM", "SSD", "HDD", "stored", "$/month",
                "$ per stored GiB-month", "HDD read MB/s in the run"],
               [[p["peer"], human(p["cost"]["ram_bytes"]),
                 human(p["cost"]["ssd_bytes"]), human(p["cost"]["hdd_bytes"]),
                 human(p["cost"]["stored_bytes"]),
                 "%.3f" % p["cost"]["dollars_per_month"],
                 p["cost"]["dollars_per_stored_gib_month"],
                 "%.1f" % p["phases"]["run"]["devices"]["hdd"]["read_mb_per_s"]]
                for p in res["peers"]])
    L.append("\nPrices per GiB-month: RAM $%g, SSD $%g, HDD $%g; RAM is "
             "the cgroup's usage after the run, disk what each peer "
             "occupies (goblin-store's allocated extents, extstore's "
             "file), stored the set times the run's hit ratio. The "
             "HDD's fio 1 MiB sequential rate (best of QD1, QD8): "
             "%.1f MB/s." % (
                 sc["prices_per_gib_month"]["ram"], sc["prices_per_gib_month"]["ssd"],
                 sc["prices_per_gib_month"]["hdd"], res["ratios"]["hdd_fio_seq_mb_per_s"]))
    return L


def fio_table(net, fio):
    L = ["At %s: fio on each emulated device (direct, read-only), measured against "
         "what the model's parameters predict; ok when measured/predicted "
         "lies in [%g, %g]. All ok: %s.\n" % (
             net, fio["min_ratio"], fio["max_ratio"], "yes" if fio["ok"] else
             "**no** -- the device model was slower than its parameters "
             "(the machine was busy); disk-bound numbers are pessimistic")]
    L += table(["device", "job", "IOPS", "MB/s", "predicted IOPS", "ratio", "ok"],
               [["%s (%g us, %g MB/s, %d ch)" % (
                   d["device"], d["model"]["access_us"], d["model"]["bandwidth_mbps"],
                   d["model"]["channels"]), j["job"], "%.1f" % j["iops"],
                 "%.1f" % j["mbps"], "%.1f" % j["predicted_iops"], "%.3f" % j["ratio"],
                 "ok" if j["ok"] else "OFF"] for d in fio["devices"] for j in d["jobs"]])
    L.append("")
    return L
