# usage: imported by bench/restart (not run on its own)
"""bench/restart's checks, ratios, console lines and results files
(<date>-restart.json and .md).  Every number comes from the measured run."""
import json
import os

from cmplib import human

PCTS = ("p50", "p90", "p99", "max")


def populate_figures(res):
    """A goblin-bench populate as the figures the report uses."""
    p = res["populate"]
    return {"sets": p["sets"], "errors": p["errors"], "seconds": p["seconds"],
            "qps": p["qps"], "mb_per_s": p["payload_mb_per_s"],
            "set_us": {k: p["latency_us"]["set_complete"][k] for k in PCTS},
            "devices": res["devices"]}


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def check(text, holds, measured):
    return {"check": text, "holds": bool(holds), "measured": measured}


def _restart_checks(r):
    n = r["objects"]
    out = [check("every object stored", r["stored"] == n,
                 "%d of %d stored, %d set errors" % (r["stored"], n,
                                                     r["populate"]["errors"]))]
    for key, name in (("kill9", "kill -9"), ("clean", "clean stop")):
        x = r[key]
        rb = x["read_back"]
        out.append(check("%s: recovered = stored" % name,
                         x["stats"]["recovered_objects"] == r["stored"],
                         "recovered_objects %d of %d stored" % (
                             x["stats"]["recovered_objects"], r["stored"])))
        out.append(check("%s: every object read back byte for byte" % name,
                         rb["hits"] == n and rb["misses"] == 0
                         and rb["verify_errors"] == 0 and rb["get_errors"] == 0,
                         "%d hits, %d missing, %d wrong, %d errors" % (
                             rb["hits"], rb["misses"], rb["verify_errors"],
                             rb["get_errors"])))
    kinds = [("live store, keys cached while populating", r["live"][0], "head hit"),
             ("live store, keys never cached", r["live"][1], "head miss"),
             ("first pass after kill -9", r["kill9"]["passes"][0], "head miss"),
             ("third pass after kill -9", r["kill9"]["passes"][2], "head hit")]
    for text, p, want in kinds:
        c = p["counters"]
        out.append(check("%s: every GET a %s" % (text, want),
                         p["kind"] == want and p["hits"] == p["gets"],
                         "%d gets, %d hits; head hits %d, head misses %d" % (
                             p["gets"], p["hits"], c["head_hits"], c["head_misses"])))
    return out


def _restart_ratios(r):
    out = {}
    for label, miss, hit in (("after_kill9", r["kill9"]["passes"][0],
                              r["kill9"]["passes"][2]),
                             ("live", r["live"][1], r["live"][0])):
        for w in ("ttfb", "first_payload", "complete"):
            for p in ("p50", "p99"):
                out["%s_%s_%s_miss_over_hit" % (label, w, p)] = ratio(
                    miss["ttfb_us"][w][p], hit["ttfb_us"][w][p])
    for key in ("kill9", "clean"):
        x = r[key]
        ms = x["stats"]["recovery_ms"]
        out["%s_recovered_per_s" % key] = (round(x["stats"]["recovered_objects"]
                                                 / (ms / 1000.0)) if ms else None)
        out["%s_first_get_over_fresh_listen" % key] = ratio(
            x["first_get_s"], r["fresh_start"]["listen_s"])
    return out


def _sync_view(s):
    """{conns: (off run, on run)}."""
    by = {}
    for run in s["runs"]:
        by.setdefault(run["conns"], {})[run["sync_interval"] != "0"] = run
    return {c: (v.get(False), v.get(True)) for c, v in sorted(by.items(), reverse=True)}


def evaluate(res):
    """Adds res['checks'] and res['ratios']."""
    checks, ratios = [], {}
    if "restart" in res:
        checks += _restart_checks(res["restart"])
        ratios.update(_restart_ratios(res["restart"]))
    if "sync" in res:
        for conns, (off, on) in _sync_view(res["sync"]).items():
            ratios["sync_c%d_qps_on_over_off" % conns] = ratio(on["qps"], off["qps"])
            for p in ("p50", "p99"):
                ratios["sync_c%d_set_%s_on_over_off" % (conns, p)] = ratio(
                    on["set_us"][p], off["set_us"][p])
            checks.append(check(
                "%d conns: --sync-interval %s synced, off did not" % (
                    conns, res["sync"]["interval"]),
                on["counters"]["syncs"] > 0 and off["counters"]["syncs"] == 0,
                "syncs: %d on, %d off" % (on["counters"]["syncs"],
                                          off["counters"]["syncs"])))
    res["checks"], res["ratios"] = checks, ratios


def fmt_us(us):
    return "-" if us is None else "%.2f ms" % (us / 1000) if us >= 1000 else "%.0f us" % us


def fmt_s(s):
    return "-" if s is None else "%.3f s" % s


def fmt_x(x):
    return "-" if x is None else "%.2fx" % x


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def restart_rows(r):
    rows = []
    for key, name in (("kill9", "kill -9"), ("clean", "clean stop (SIGTERM)")):
        x = r[key]
        rows.append([name, fmt_s(x["stop_s"]), fmt_s(x["listen_s"]),
                     fmt_s(x["first_get_s"]), "%d ms" % x["stats"]["recovery_ms"],
                     "%d of %d" % (x["stats"]["recovered_objects"], r["stored"]),
                     "%d / %d / %d" % (x["read_back"]["hits"], x["read_back"]["misses"],
                                       x["read_back"]["verify_errors"])])
    return rows


def pass_rows(r):
    rows = []
    named = [("live, cached while populating", r["live"][0]),
             ("live, never cached", r["live"][1])]
    named += [("after kill -9, pass %d" % (i + 1), p)
              for i, p in enumerate(r["kill9"]["passes"])]
    for name, p in named:
        t, f, c = (p["ttfb_us"][w] for w in ("ttfb", "first_payload", "complete"))
        rows.append([name, "[%d, %d)" % tuple(p["keys"]), p["kind"],
                     "%d / %d" % (p["counters"]["head_hits"], p["counters"]["head_misses"]),
                     "%s / %s" % (fmt_us(t["p50"]), fmt_us(t["p99"])),
                     "%s / %s" % (fmt_us(f["p50"]), fmt_us(f["p99"])),
                     "%s / %s" % (fmt_us(c["p50"]), fmt_us(c["p99"]))])
    return rows


def sync_rows(s):
    rows = []
    for run in s["runs"]:
        rows.append(["off" if run["sync_interval"] == "0" else run["sync_interval"],
                     run["conns"], run["sets"], "%.0f" % run["qps"],
                     "%.1f" % run["mb_per_s"], fmt_us(run["set_us"]["p50"]),
                     fmt_us(run["set_us"]["p99"]), run["counters"]["syncs"],
                     sum(d.get("fsyncs", 0) for d in run["devices"].values())])
    return rows


def lines(res):
    """The console report."""
    out = []
    rt = res["ratios"]
    if "restart" in res:
        r = res["restart"]
        out += ["", "== restart: %d objects of %s, --ram-head %s, --memory %s" % (
            r["objects"], human(r["value_bytes"]), human(r["ram_head_bytes"]),
            human(r["memory_bytes"])),
            "   populate: %.0f sets/s, %.1f MB/s" % (r["populate"]["qps"],
                                                    r["populate"]["mb_per_s"])]
        for row in restart_rows(r):
            out.append("   %-21s stop %s, listening %s, first GET %s after exec; "
                       "recovery %s; recovered %s; read back hits/missing/wrong %s"
                       % tuple(row))
        for row in pass_rows(r):
            out.append("   %-30s %s %-9s head hits/misses %-11s ttfb p50/p99 %s, "
                       "first payload %s, complete %s" % tuple(row))
        out.append("   head miss / head hit after kill -9: first payload p50 %s, "
                   "p99 %s; first byte p50 %s, p99 %s" % (
                       fmt_x(rt["after_kill9_first_payload_p50_miss_over_hit"]),
                       fmt_x(rt["after_kill9_first_payload_p99_miss_over_hit"]),
                       fmt_x(rt["after_kill9_ttfb_p50_miss_over_hit"]),
                       fmt_x(rt["after_kill9_ttfb_p99_miss_over_hit"])))
    if "sync" in res:
        out += ["", "== sync: set load, %s values" % human(res["sync"]["value_bytes"])]
        for row in sync_rows(res["sync"]):
            out.append("   sync %-5s %2d conns: %6d sets, %6s sets/s, %6s MB/s, "
                       "set p50 %s p99 %s, %d syncs, %d device fsyncs" % tuple(row))
        for conns, _ in _sync_view(res["sync"]).items():
            out.append("   %d conns, --sync-interval %s / off: sets/s %s, set p50 %s, "
                       "p99 %s" % (conns, res["sync"]["interval"],
                                   fmt_x(rt["sync_c%d_qps_on_over_off" % conns]),
                                   fmt_x(rt["sync_c%d_set_p50_on_over_off" % conns]),
                                   fmt_x(rt["sync_c%d_set_p99_on_over_off" % conns])))
    out.append("")
    for c in res["checks"]:
        out.append("   %-8s %s: %s" % ("holds" if c["holds"] else "FAILS",
                                       c["check"], c["measured"]))
    return out


def markdown(res):
    m, rt = res["meta"], res["ratios"]
    L = ["# goblin-store warm restart and --sync-interval: %s (%s run)\n" % (
        m["date"], m["mode"]),
        "Made by `%s` at git %s on %s (%d cpus, kernel %s); %s, %s. Rig "
        "(bench/rig): the server alone in a memory cgroup (limit %s) on cpu %s; "
        "goblin-bench and the device models on cpu %s; SSD model %s us per "
        "access, %s MB/s, %s channels; HDD %s us, %s MB/s. Absolute numbers on "
        "this shared 2-core machine drift; ratios are from the same run.\n" % (
            m["command"], m["git_head"][:12], m["host"], m["cpus"], m["kernel"],
            m["goblin_store"], m["goblin_bench"], human(int(m["rig"]["server_ram"])),
            m["rig"]["server_cpu"], m["rig"]["client_cpu"],
            m["devices"]["ssd"]["access_us"], m["devices"]["ssd"]["bandwidth_mbps"],
            m["devices"]["ssd"]["channels"], m["devices"]["hdd"]["access_us"],
            m["devices"]["hdd"]["bandwidth_mbps"])]
    L.append("## Checks\n")
    L += table(["check", "result", "measured"],
               [[c["check"], "holds" if c["holds"] else "**fails**", c["measured"]]
                for c in res["checks"]])
    L.append("")
    if "restart" in res:
        L += restart_md(res["restart"], rt)
    if "sync" in res:
        L += sync_md(res["sync"], rt)
    return "\n".join(L) + "\n"


def restart_md(r, rt):
    L = ["## Restart of %d objects\n" % r["objects"]]
    L.append("goblin-bench populated %d objects of %s (`--dist fixed`, seed 1, "
             "%d connections) at %.0f sets/s (%.1f MB/s); the store had "
             "`--ram-head %s --memory %s`: every object is larger than its "
             "head, so it lives whole on the SSD pool and RAM caches %d heads "
             "at most. Sizes are the seed's geometry scaled down (a head a "
             "quarter of the object, as 256 KiB of the seed's 1 MiB mean) so "
             "that %d objects (%s) fit the rig's 16 GiB emulated SSD. After "
             "the populate: %s on the SSD pool, journal %s (%d records).\n" % (
                 r["objects"], human(r["value_bytes"]), r["conns"],
                 r["populate"]["qps"], r["populate"]["mb_per_s"],
                 human(r["ram_head_bytes"]), human(r["memory_bytes"]),
                 r["memory_bytes"] // r["ram_head_bytes"], r["objects"],
                 human(r["objects"] * r["value_bytes"]),
                 human(r["stored_stats"]["ssd_used_bytes"]),
                 human(r["stored_stats"]["journal_bytes"]),
                 r["stored_stats"]["journal_records"]))
    L.append("Times are from the exec of the restarted server: until its "
             "port accepts, and until the first `get` of a stored key "
             "returns the object. recovery_ms and recovered_objects are "
             "the server's own (`stats goblin`). Read back: every object "
             "once, in order, each byte checked by goblin-bench "
             "(hits / missing / wrong).\n")
    L += table(["restart", "stop took", "listening", "first GET served",
                "recovery_ms", "recovered", "read back"], restart_rows(r))
    L.append("\nA fresh start on empty pools listened after %s.\n"
             % fmt_s(r["fresh_start"]["listen_s"]))
    L.append("### TTFB: head miss vs head hit\n")
    L.append("Each pass reads keys once, in order, on one connection "
             "(no queueing). Its kind comes from the `stats goblin` "
             "head_hits / head_misses deltas over the pass. First byte is "
             "the reply's first byte (the VALUE line), first payload the "
             "object's first byte. Right after the restart no head is in "
             "RAM: pass 1 reads each head from the SSD (and caches it while "
             "RAM has free slots); passes 2 and 3 read the same keys again, "
             "their kind column says whether the heads were then in RAM. A p99 is the "
             "%dth slowest of %d GETs and moves with other work on this "
             "machine: two passes of one kind show its spread.\n"
             % (max(1, r["window"] // 100), r["window"]))
    L += table(["pass", "keys", "kind", "head hits / misses",
                "first byte p50 / p99", "first payload p50 / p99",
                "complete p50 / p99"], pass_rows(r))
    L.append("\nHead miss over head hit, after kill -9 (pass 1 / pass 3): "
             "first payload p50 %s, p99 %s; first byte p50 %s, p99 %s. On the "
             "live store (never cached / cached while populating): first "
             "payload p50 %s, p99 %s.\n" % (
                 fmt_x(rt["after_kill9_first_payload_p50_miss_over_hit"]),
                 fmt_x(rt["after_kill9_first_payload_p99_miss_over_hit"]),
                 fmt_x(rt["after_kill9_ttfb_p50_miss_over_hit"]),
                 fmt_x(rt["after_kill9_ttfb_p99_miss_over_hit"]),
                 fmt_x(rt["live_first_payload_p50_miss_over_hit"]),
                 fmt_x(rt["live_first_payload_p99_miss_over_hit"])))
    L.append("The daemon's log after the kill -9 restart:\n\n```\n%s\n```\n"
             % "\n".join(r["kill9"]["log"]))
    return L


def sync_md(s, rt):
    L = ["## Cost of --sync-interval %s\n" % s["interval"]]
    L.append("Sets of %s values on a `--fresh` store, goblin-bench "
             "populate (each key once), with `--sync-interval 0` (off, the "
             "default) and `%s`. With 16 connections one fdatasync covers "
             "the sets of an interval; with 1 each set waits for one. The "
             "device model answers an fsync once the I/O booked before it "
             "is done and its backing file is fdatasync'ed on this VM's "
             "disk, so a sync costs what that disk's flush costs, not an "
             "emulated figure.\n" % (human(s["value_bytes"]), s["interval"]))
    L += table(["--sync-interval", "conns", "sets", "sets/s", "MB/s",
                "set p50", "set p99", "syncs", "device fsyncs"], sync_rows(s))
    L.append("")
    for conns, _ in _sync_view(s).items():
        L.append("- %d connections, %s over off: sets/s %s, set p50 %s, p99 %s" % (
            conns, s["interval"], fmt_x(rt["sync_c%d_qps_on_over_off" % conns]),
            fmt_x(rt["sync_c%d_set_p50_on_over_off" % conns]),
            fmt_x(rt["sync_c%d_set_p99_on_over_off" % conns])))
    L.append("")
    return L


def publish(res, out_dir, date):
    """Writes <date>-restart.json and .md into <out_dir>; returns paths."""
    files = []
    base = os.path.join(out_dir, "%s-restart" % date)
    with open(base + ".json.new", "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(base + ".json.new", base + ".json")
    files.append(base + ".json")
    with open(base + ".md", "w") as f:
        f.write(markdown(res))
    files.append(base + ".md")
    return files
