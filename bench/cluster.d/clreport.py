# usage: imported by bench/cluster and its selftest (not run on its own)
"""bench/cluster's figures: the headline numbers (derive), the console
lines, and the published files: JSON, a Markdown note and two PNGs drawn
with gnuplot (throughput and p99 against nodes; the rejoining node's hit
ratio over time, warm and --fresh)."""
import json
import os
import shutil
import subprocess
import tempfile

GOAL_SPEEDUP = 2.7
GOAL_AGREEMENT = 0.9999


def pctl(sorted_values, p):
    """The p-th percentile (nearest rank) of an ascending list; 0 if empty."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, -(-len(sorted_values) * p // 100) - 1))
    return sorted_values[int(k)]


def pct(x):
    return "%.0f%%" % (100 * x)


def limit_text(lim):
    """The limit row: each node's HDD (and its MB per seek) and SSD, then
    the CPU: the machine's share of its cores, and by process."""
    parts = []
    for n in lim["nodes"]:
        h = n["hdd"]
        t = "%s HDD %s" % (n["host"], pct(h["busy"]))
        if h.get("read_bytes_per_seek"):
            t += " (%.2f MB/seek)" % (h["read_bytes_per_seek"] / 1e6)
        t += ", SSD %s" % pct(n["ssd"]["busy"])
        parts.append(t)
    hdd = "; ".join(parts)
    cpu = ("CPU %s of %d cores: the bench's processes %s (of one core: nodes %s, front %s, "
           "client %s, device models %s), the rest %s (kernel threads, other work on the "
           "machine)" % (pct(lim["machine_cpu"]), lim["cores"], pct(lim.get("own_cpu", 0)),
                         "+".join(pct(n["cpu"]) for n in lim["nodes"]),
                         pct(lim["front_cpu"]), pct(lim["client_cpu"]),
                         pct(lim["models_cpu"]), pct(lim.get("rest_cpu", 0))))
    if lim["binding"] == "HDD":
        return "**%s**; %s" % (hdd, cpu)
    return "**%s**; %s" % (cpu, hdd)


def derive(res):
    """The headline figures the issue asks for, at the JSON's top level."""
    pl = res.get("placement")
    if pl:
        res["placement_agreement"] = pl["placement_agreement"]
        res["placement_lowest_pair"] = pl["lowest_pair"][1]
    runs = res.get("scaling") or []
    by = {r["nodes"]: r for r in runs}
    if 1 in by:
        q1 = by[1]["stats"]["qps"]
        for n in (2, 3):
            if n in by and q1:
                res["speedup_%d_nodes_over_1" % n] = round(by[n]["stats"]["qps"] / q1, 3)
        bal = res.get("scaling_balanced")
        if bal and q1:
            res["speedup_3_nodes_over_1_balanced"] = round(bal["stats"]["qps"] / q1, 3)
            res["ring_shares"] = bal["ring_shares"]
            res["speedup_bound_uniform_keys"] = round(1 / max(bal["ring_shares"].values()), 3)
    loss = res.get("loss") or []
    if loss:
        res["survivor_errors"] = sum(x["survivor_errors"] for x in loss)
        res["wrong_bodies"] = sum(x["wrong_bodies"] for x in loss)
        for x in loss:
            key = "rejoin_seconds" if x["mode"] == "warm" else "rejoin_seconds_fresh"
            res[key] = x["rejoin_seconds"]
    goals = {}
    if "placement_agreement" in res:
        goals["placement"] = {"goal": ">= 99.99% of keys on the same node, each pair, "
                              "before and after a node is removed",
                              "met": res["placement_agreement"] >= GOAL_AGREEMENT}
    if "speedup_3_nodes_over_1" in res:
        goals["speedup"] = {"goal": ">= %.1fx one node's GETs/s at 3 nodes" % GOAL_SPEEDUP,
                            "met": res["speedup_3_nodes_over_1"] >= GOAL_SPEEDUP}
        h1 = by[1]["limit"]["nodes"][0]["hdd"]["busy"]
        if h1 < 0.95:
            goals["speedup"]["note"] = ("%.2fx over one node whose HDD was only %.0f%% busy: "
                                        "flattering, see \"Reading it\""
                                        % (res["speedup_3_nodes_over_1"], 100 * h1))
    if "survivor_errors" in res:
        goals["node_loss"] = {"goal": "0 errors for the survivors' keys, no wrong body",
                              "met": res["survivor_errors"] == 0 and res["wrong_bodies"] == 0}
    if "rejoin_seconds" in res:
        w, f = res.get("rejoin_seconds"), res.get("rejoin_seconds_fresh")
        goals["rejoin"] = {"goal": "the warm node's hit ratio back to 95% sooner than a "
                           "--fresh one's", "met": w is not None and (f is None or w < f)}
    res["goals"] = goals
    return res


def fmt_s(x):
    return "never (within the run)" if x is None else "%.2f s" % x


def console(res):
    out = []
    if "placement_agreement" in res:
        out.append("placement agreement (lowest pair, %s): %.6f" % (
            res["placement_lowest_pair"], res["placement_agreement"]))
    for r in res.get("scaling") or []:
        s = r["stats"]
        out.append("%d node(s): %.1f GETs/s %.1f MB/s p99 %.1f ms; %s" % (
            r["nodes"], s["qps"], s["mb_per_s"], s["p99_ms"], limit_text(r["limit"])))
    bal = res.get("scaling_balanced")
    if bal:
        s = bal["stats"]
        out.append("3 nodes, a third of the GETs each: %.1f GETs/s %.1f MB/s p99 %.1f ms; %s"
                   % (s["qps"], s["mb_per_s"], s["p99_ms"], limit_text(bal["limit"])))
    if "speedup_3_nodes_over_1" in res:
        out.append("speedup 3 nodes over 1: %.2fx (balanced %s)" % (
            res["speedup_3_nodes_over_1"], res.get("speedup_3_nodes_over_1_balanced")))
    for x in res.get("loss") or []:
        out.append("loss/rejoin %s: survivor errors %d, rejoin %s" % (
            x["mode"], x["survivor_errors"], fmt_s(x["rejoin_seconds"])))
    if res.get("failure"):
        out.append("FAILED: " + res["failure"])
    return "\n".join(out)


def gnuplot(script, work):
    r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, cwd=work)
    if r.returncode:
        raise RuntimeError("gnuplot failed: " + r.stderr.strip()[-400:])


def plot_scaling(res, png, work):
    dat = os.path.join(work, "scaling.dat")
    with open(dat, "w") as f:
        for r in res["scaling"]:
            s = r["stats"]
            hdd = sum(n["hdd"]["busy"] for n in r["limit"]["nodes"]) / len(r["limit"]["nodes"])
            f.write("%d %f %f %f %f\n" % (r["nodes"], s["qps"], s["p99_ms"],
                                          100 * hdd, 100 * r["limit"]["machine_cpu"]))
    q1 = res["scaling"][0]["stats"]["qps"]
    gnuplot("\n".join([
        "set terminal pngcairo size 1280,480 font ',10'",
        "set output '%s'" % png,
        "set multiplot layout 1,2 title 'bench/cluster: GETs through the front, "
        "1-3 nodes, each with its own emulated HDD and SSD'",
        "set grid", "set xrange [0.5:3.5]", "set xtics 1", "set xlabel 'nodes'",
        "set ylabel 'completed GETs/s'", "set key top left",
        "plot '%s' using 1:2 with linespoints lw 2 title 'GETs/s', "
        "x*%f with lines dt 2 title 'linear (n x one node)', "
        "x*%f*%f with lines dt 3 title 'goal (%.1fx at 3)'"
        % (dat, q1, q1, GOAL_SPEEDUP / 3, GOAL_SPEEDUP),
        "set ylabel 'percent / ms'", "set yrange [0:*]",
        "plot '%s' using 1:3 with linespoints lw 2 title 'p99 complete (ms)', "
        "'' using 1:4 with linespoints title 'HDD busy, mean of nodes (%%)', "
        "'' using 1:5 with linespoints title 'machine CPU (%% of cores)'" % dat,
        "unset multiplot"]) + "\n", work)


def plot_rejoin(res, png, work):
    lines = []
    for x in res["loss"]:
        dat = os.path.join(work, "rejoin-%s.dat" % x["mode"])
        with open(dat, "w") as f:
            for t, r, n in x["series"]:
                if r is not None:
                    f.write("%f %f\n" % (t - x["restart_at_s"], 100 * r))
        lines.append("'%s' using 1:2 with lines lw 2 title '%s (restart at 0; killed at %.1f s)'"
                     % (dat, x["mode"] if x["mode"] == "warm" else "--fresh",
                        x["kill_at_s"] - x["restart_at_s"]))
    hb = 100 * 0.95 * res["loss"][0]["hit_ratio_before"]
    gnuplot("\n".join([
        "set terminal pngcairo size 960,480 font ',10'",
        "set output '%s'" % png,
        'set title "bench/cluster: the killed node\x27s keys answered from its own pools, HIT or REVALIDATED (1 s windows)"',
        "set grid", "set xlabel 'seconds from the restart'", "set ylabel 'hit ratio (%)'",
        "set yrange [0:105]", "set key bottom right",
        "plot " + ", ".join(lines) + ", %f with lines dt 2 title '95%% of before'" % hb,
    ]) + "\n", work)


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def markdown(res, name, argv):
    out = ["# bench/cluster, %s" % res["date"], ""]
    out.append("Run: `bench/cluster %s` (%s run, %.0f s%s)." % (
        argv, "quick" if res.get("quick") else "full", res.get("run_seconds", 0),
        ", at commit %s" % res["code_commit"] if res.get("code_commit") else ""))
    if res.get("failure"):
        out += ["", "**The run failed: %s** (the figures below are what it measured "
                "before)." % res["failure"]]
    out += ["", "## Goals", ""]
    for k, g in res.get("goals", {}).items():
        out.append("- %s: **%s** — %s%s" % (k, "met" if g["met"] else "missed", g["goal"],
                                            " (%s)" % g["note"] if g.get("note") else ""))
    pl = res.get("placement")
    if pl:
        out += ["", "## Placement: %d keys" % pl["keys"], "",
                "The node each placement puts a key on (front: the X-Node of a GET through "
                "`ngx_goblin_module/nodes.conf`; clients: the node their write landed on). "
                "After: the third node killed, the clients listing the other two, the front "
                "walking past it.", ""]
        rows = []
        for w in ("before", "after"):
            for p, v in pl[w]["pairs"].items():
                rows.append((w, p, "%.6f" % v, "same ring"))
            for p, v in pl[w]["different_rings"].items():
                rows.append((w, p, "%.4f" % v, "different rings (not meant to agree)"))
        out.append(md_table(("", "pair", "agreement", ""), rows))
        out += ["", "placement_agreement (lowest same-ring pair): **%.6f** (%s); spread before: %s"
                % (pl["placement_agreement"], pl["lowest_pair"][1],
                   pl["before"]["spread"]["front-ketama"])]
    sc = res.get("scaling")
    if sc:
        out += ["", "## GET throughput through the front, 1-3 nodes", "",
                "%d objects of 256 KiB - 1 MiB (uniform), filled through the front from the "
                "origin; each node a goblin-store (`%s`) and nginx in cache mode on its own "
                "emulated HDD (%s us access, %s MB/s, %s channel) and SSD (%s us, %s MB/s, %s "
                "channels); %d connections per node, uniform random keys, every body compared "
                "whole; %.0f s measured after 3 s." % (
                    res["args"]["objects"], " ".join(res["store_flags"]),
                    res["devices"]["hdd"]["access_us"], res["devices"]["hdd"]["bandwidth_mbps"],
                    res["devices"]["hdd"]["channels"], res["devices"]["ssd"]["access_us"],
                    res["devices"]["ssd"]["bandwidth_mbps"], res["devices"]["ssd"]["channels"],
                    res["args"]["conns_per_node"], res["args"]["seconds"]), ""]
        q1 = sc[0]["stats"]["qps"]

        def row(nodes, r):
            s = r["stats"]
            return (nodes, r["conns"], "%.1f" % s["qps"], "%.2fx" % (s["qps"] / q1),
                    "%.1f" % s["mb_per_s"], "%.1f ms" % s["p50_ms"], "%.1f ms" % s["p99_ms"],
                    s["errors_whole_run"], limit_text(r["limit"]))
        rows = [row(r["nodes"], r) for r in sc]
        bal = res.get("scaling_balanced")
        if bal:
            rows.append(row("3, a third of the GETs each", bal))
        out.append(md_table(("nodes", "conns", "GETs/s", "vs 1", "MB/s", "p50", "p99",
                             "errors", "limit"), rows))
        if bal:
            out += ["", "Uniform keys give each node the ring's share of the GETs (%s of "
                    "these objects, memcache port %s: ketama's 160 points per node are not "
                    "equal arcs), and in a closed loop the busiest node bounds the rest: at "
                    "most %.2fx one node. The last row draws the keys so that each node gets "
                    "a third." % (
                        ", ".join("%s %.1f%%" % (h, 100 * v)
                                  for h, v in bal["ring_shares"].items()),
                        res["args"].get("mc_port") or "drawn at random",
                        1 / max(bal["ring_shares"].values()))]
        if "speedup_3_nodes_over_1" in res:
            out += ["", "speedup_3_nodes_over_1: **%.2fx** (goal %.1fx); with a third of "
                    "the GETs on each node: **%sx**." % (
                        res["speedup_3_nodes_over_1"], GOAL_SPEEDUP,
                        res.get("speedup_3_nodes_over_1_balanced"))]
        out += ["", "![throughput](%s-scaling.png)" % name]
    loss = res.get("loss")
    if loss:
        out += ["", "## Node loss and rejoin", "",
                "Three nodes under load (%d connections), the front's `fail_timeout=%s` "
                "(nodes.conf ships %s: the front sends a failed node's keys back only after "
                "it). The third node killed (`kill -9`, store and nginx), restarted on its own "
                "pools (warm), then killed again and started `--fresh`. Hit ratio: the node's "
                "keys' GETs answered whole by it from its own pools (`X-Cache: HIT`, or "
                "`REVALIDATED`: a recovered object's first use after the restart, a 304 from "
                "the origin, no body), over 1 s windows; rejoin: from the restart until a "
                "window reaches 95%% of the ratio before the kill." % (
                    3 * res["args"]["conns_per_node"], res["args"]["fail_timeout"],
                    res.get("nodes_conf_fail_timeout") or "30s"), ""]
        rows = []
        for x in loss:
            rows.append((x["mode"], x["home_keys"], x["survivor_gets"], x["survivor_errors"],
                         x["wrong_bodies"], cut_at_kill(x),
                         fmt_dict(x["lost_share"]["while_gone"]),
                         x["origin_refills"]["while_gone"], x["origin_refills"]["after_restart"],
                         x.get("origin_revalidations", {}).get("after_restart", "-"),
                         "%.3f" % x["hit_ratio_before"], "%.2f s" % x["restart_ready_s"],
                         fmt_s(x["first_served_after_s"]), fmt_s(x["rejoin_seconds"])))
        out.append(md_table(("restart", "its keys", "survivor GETs", "survivor errors",
                             "wrong bodies", "its GETs cut at the kill", "its keys while gone", "refills while gone",
                             "refills after", "304s after", "hit ratio before", "restart to serving",
                             "front sends it keys", "rejoin (95%)"), rows))
        out += ["", "survivor_errors: **%d**; rejoin_seconds: **%s** warm, **%s** `--fresh`."
                % (res.get("survivor_errors", -1), fmt_s(res.get("rejoin_seconds")),
                   fmt_s(res.get("rejoin_seconds_fresh"))),
                "", "![rejoin](%s-rejoin.png)" % name]
    out += reading(res)
    out += ["- " + n for n in res.get("notes", [])]
    if res.get("earlier_runs"):
        out += ["", "## Other full runs", "",
                "Not the run above; kept for how much the figures move between runs on "
                "this shared machine.", ""]
        out += ["- " + e for e in res["earlier_runs"]]
    return "\n".join(out) + "\n"


def cut_at_kill(x):
    """The lost share's GETs in flight at the kill that failed (a cut
    response: the node died mid-body, too late for the front to walk on)."""
    ls = x["lost_share"]
    ph = ls.get("at_kill", ls.get("before_kill", {}))
    return sum(v for k, v in ph.items() if not k.startswith("200 ") or "WRONG" in k)


def reading(res):
    """What binds and what the figures mean, from the figures."""
    out = ["", "## Reading it", ""]
    sc = res.get("scaling") or []
    if sc:
        for r in sc:
            lim = r["limit"]
            hdd = [n["hdd"]["busy"] for n in lim["nodes"]]
            out.append("- %d node(s): the HDDs %s busy, the machine's %d cores %s (the bench's "
                       "processes %s, the rest %s): %s." % (
                           r["nodes"], "/".join(pct(h) for h in hdd), lim["cores"],
                           pct(lim["machine_cpu"]), pct(lim.get("own_cpu", 0)),
                           pct(lim.get("rest_cpu", 0)),
                           "the HDD binds" if lim["binding"] == "HDD" else
                           "the CPU binds, the HDDs close behind"))
        h1 = sc[0]["limit"]["nodes"][0]["hdd"]["busy"]
        if sc[0]["nodes"] == 1 and h1 < 0.95:
            out.append("- One node's HDD was only %s busy: its %.1f GETs/s is below what its "
                       "disk gives, and the speedups over it are flattering by as much." % (
                           pct(h1), sc[0]["stats"]["qps"]))
        out.append("- \"The rest\" is the CPU no process of the bench was charged: kernel "
                   "threads (the loop devices' direct I/O, FUSE, network softirq) and whatever "
                   "else runs on the machine (the 2 cores are shared with other work), so the "
                   "3-node figure is what one 2-core machine carrying nine device models, "
                   "four nginx, three stores and the client gives, not a bound of the nodes.")
        out.append("- One seek a GET: everything past an object's 64 KiB head is on the HDD "
                   "(`--ssd-prefix 0`), about %.2f MB a seek at %s us access, so one node "
                   "serves about %.0f GETs/s at 100%% HDD (its GETs/s over its HDD's busy "
                   "share)." % (
                       sc[0]["limit"]["nodes"][0]["hdd"]["read_bytes_per_seek"] / 1e6
                       if sc[0]["limit"]["nodes"][0]["hdd"].get("read_bytes_per_seek") else 0,
                       res["devices"]["hdd"]["access_us"],
                       sc[0]["stats"]["qps"] / max(h1, 0.01)))
    loss = res.get("loss") or []
    if loss:
        w = [x for x in loss if x["mode"] == "warm"]
        f = [x for x in loss if x["mode"] == "fresh"]
        if w and w[0].get("first_served_after_s") is not None:
            w = w[0]
            own = {k[len("200 own node "):]: v
                   for k, v in w["lost_share"].get("after_restart", {}).items()
                   if k.startswith("200 own node ")}
            out.append("- Warm rejoin: the front sent the node its keys again %.1f s after the "
                       "restart (its `fail_timeout`, %s here, counted from the last failed try; "
                       "%s as nodes.conf ships it), and %.1f s later (one 1 s window) its hit "
                       "ratio was back: it served its objects from its own pools (its GETs "
                       "after the restart: %s; the origin saw %s revalidations, a 304 each; "
                       "%s). rejoin_seconds is therefore the front's fail_timeout plus a "
                       "window; the node itself was ready %.2f s after its start." % (
                           w["first_served_after_s"], res["args"]["fail_timeout"],
                           res.get("nodes_conf_fail_timeout") or "30s",
                           w.get("seconds_after_first_served") or 0, fmt_dict(own),
                           w.get("origin_revalidations", {}).get("after_restart", "uncounted"),
                           "it refilled none" if not own.get("MISS") else
                           "it refilled %d" % own["MISS"], w["restart_ready_s"]))
        if f and f[0].get("first_served_after_s") is not None:
            f = f[0]
            out.append("- `--fresh`: the same front delay, then %.1f s of misses filled from the "
                       "origin (%d origin requests after the restart for its %d keys) before "
                       "its hit ratio reached 95%% of before." % (
                           f.get("seconds_after_first_served") or 0,
                           f["origin_refills"]["after_restart"], f["home_keys"]))
        out.append("- While the node was gone, its keys went to the ring's next node, which "
                   "filled each from the origin once (`MISS`, then `HIT`; in the second, "
                   "`--fresh` run it still held what it filled in the first); the other nodes' "
                   "keys saw no error. Its own GETs in flight at the kill were cut (the "
                   "response had started, so the front could not walk on): the client sees a "
                   "closed connection, never a short body taken for whole.")
    return out


def fmt_dict(d):
    return ", ".join("%s: %d" % kv for kv in d.items()) or "-"


def publish(res, outdir, date, argv):
    os.makedirs(outdir, exist_ok=True)
    name = "%s-cluster" % date
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    work = tempfile.mkdtemp(prefix="goblin-cluster-plot.", dir="/var/tmp")
    try:
        if res.get("scaling"):
            plot_scaling(res, os.path.abspath(os.path.join(outdir, name + "-scaling.png")), work)
        if res.get("loss"):
            plot_rejoin(res, os.path.abspath(os.path.join(outdir, name + "-rejoin.png")), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(outdir, name + ".md"), "w") as f:
        f.write(markdown(res, name, argv))
