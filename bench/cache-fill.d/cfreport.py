# usage: imported by bench/cache-fill and its selftest (not run on its own)
"""bench/cache-fill's arithmetic and report: each scenario's figures from
its requests and the origin's log, the issue's goals (issue 24) judged
from the measurements (the origin's own first byte and transfer time,
measured in the same run), each peer's ratios to goblin-store, the limit
row, and the Markdown."""
import limits

MS = 1e3
# issue 24's goals: slack over the origin's own figures
GOAL_TTFB_SLACK_S = 0.005       # scenario 1: origin first byte + 5 ms
GOAL_COMPLETE = 1.10            # scenarios 1, 3: within 10% of the origin's
GOAL_RANGE_TTFB = 2.0           # scenario 2: within 2x the origin's first byte


def pctl(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-q * len(v) // 100)) - 1))
    return v[k]


def origin_window(entries, prefix):
    """(requests, body bytes) the origin logged for URIs under <prefix>."""
    hits = [e for e in entries if e[0].startswith(prefix)]
    return len(hits), sum(e[2] for e in hits)


def goal(ok, text):
    return {"met": bool(ok), "goal": text}


def s1_figures(reqs, good, req_n, req_bytes, size, origin):
    """64 concurrent cold GETs: <reqs> curl figures, <good> how many were
    whole and correct; <origin>: its ttfb_s and transfer_s."""
    ttfb = [r["ttfb_s"] for r in reqs if r["ttfb_s"] is not None] or [float("inf")]
    done = [r["total_s"] for r in reqs if r["total_s"] is not None] or [float("inf")]
    f = {"clients": len(reqs), "verified": good, "origin_requests": req_n,
         "origin_bytes": req_bytes, "origin_bytes_x": round(req_bytes / size, 3),
         "ttfb_p50_s": pctl(ttfb, 50), "ttfb_p99_s": pctl(ttfb, 99),
         "ttfb_max_s": max(ttfb), "complete_p99_s": pctl(done, 99)}
    ttfb_cap = origin["ttfb_s"] + GOAL_TTFB_SLACK_S
    done_cap = origin["transfer_s"] * GOAL_COMPLETE
    f["goals"] = {
        "verified": goal(good == len(reqs), "every body whole, sha256 right"),
        "one_request": goal(req_n == 1, "1 origin request"),
        "one_x_bytes": goal(req_bytes <= size, "1x the object's bytes"),
        "first_byte": goal(f["ttfb_max_s"] <= ttfb_cap,
                           "every first byte <= origin's + 5 ms (%.1f ms)"
                           % (ttfb_cap * MS)),
        "completion": goal(f["complete_p99_s"] <= done_cap,
                           "completion p99 <= 1.1x origin transfer (%.0f ms)"
                           % (done_cap * MS))}
    return f


def s2_figures(r, good, req_n, req_bytes, origin):
    f = {"verified": int(good), "ttfb_s": r["ttfb_s"], "total_s": r["total_s"],
         "origin_requests": req_n, "origin_bytes": req_bytes}
    cap = origin["ttfb_s"] * GOAL_RANGE_TTFB
    f["goals"] = {"verified": goal(good, "the 1 MiB range whole, sha256 right"),
                  "first_byte": goal(r["ttfb_s"] is not None and r["ttfb_s"] <= cap,
                                     "first byte <= 2x origin's (%.1f ms)"
                                     % (cap * MS))}
    return f


def s3_figures(fast, good, slow_bytes, req_n, req_bytes, origin):
    f = {"verified": int(good), "fast_total_s": fast["total_s"],
         "fast_ttfb_s": fast["ttfb_s"], "slow_bytes_meanwhile": slow_bytes,
         "origin_requests": req_n, "origin_bytes": req_bytes,
         "vs_origin_transfer": round(fast["total_s"] / origin["transfer_s"], 3)
         if fast["total_s"] else None}
    cap = origin["transfer_s"] * GOAL_COMPLETE
    f["goals"] = {"verified": goal(good, "the fast client's body whole, sha256 right"),
                  "completion": goal(fast["total_s"] is not None and
                                     fast["total_s"] <= cap,
                                     "fast client done <= 1.1x origin transfer "
                                     "(%.0f ms)" % (cap * MS))}
    return f


def s4_figures(reqs, good, statuses):
    errors = len(reqs) - good
    return {"requests": len(reqs), "stale_served": good, "errors": errors,
            "statuses": statuses,
            "goals": {"no_errors": goal(errors == 0 and reqs,
                                        "every request served (stale), 0 errors")}}


def limit_row(origin_bytes, seconds, rate_bps, origin_rate, deltas, params,
              server_cpu, client_cpu):
    """limits.phase_limits with the origin's bytes as what crosses the
    shaped link (client side to server side), plus the origin's rate as a
    resource of its own (bytes / T / limit_rate)."""
    lim = limits.phase_limits({"get_bytes": 0, "set_bytes": origin_bytes},
                              deltas, params, seconds, rate_bps, server_cpu,
                              client_cpu)
    busy = origin_bytes / seconds / origin_rate
    lim["origin"] = {"busy": round(busy, 4), "rate_bytes_per_s": origin_rate}
    if busy > lim["binding_busy"]:
        lim["binding"], lim["binding_busy"] = "origin rate", round(busy, 4)
    return lim


def limit_cell(lim):
    text = "origin rate %s" % limits.pct(lim["origin"]["busy"])
    rest = limits.limit_text(lim)
    if lim["binding"] == "origin rate":
        return "**%s**, %s" % (text, rest.replace("**", ""))
    return "%s, %s" % (rest, text)


# per scenario: (figure, label, unit) in the table, lower is better for all
COLUMNS = {
    "s1": (("origin_requests", "origin req", ""), ("origin_bytes_x", "origin bytes", "x"),
           ("ttfb_p50_s", "TTFB p50", "ms"), ("ttfb_p99_s", "TTFB p99", "ms"),
           ("ttfb_max_s", "TTFB max", "ms"), ("complete_p99_s", "done p99", "ms")),
    "s2": (("ttfb_s", "TTFB", "ms"), ("total_s", "done", "ms"),
           ("origin_requests", "origin req", ""), ("origin_bytes", "origin MB", "MB")),
    "s3": (("fast_total_s", "fast done", "ms"), ("vs_origin_transfer", "/ origin xfer", "x"),
           ("origin_requests", "origin req", ""), ("origin_bytes", "origin MB", "MB")),
    "s4": (("stale_served", "stale served", ""), ("errors", "errors", "")),
    "s5": (("qps", "req/s", "f"), ("mb_per_s", "MB/s", "f"), ("ttfb_p50_s", "TTFB p50", "ms"),
           ("ttfb_p99_s", "TTFB p99", "ms"), ("origin_requests", "origin req", "")),
}
KEYS = ("s1", "s2", "s3", "s4", "s5")
TITLES = {"s1": "1. %(clients)d concurrent cold GETs of one %(mib)d MiB object",
          "s2": "2. Range: bytes=%(range)s on a cold %(mib)d MiB object",
          "s3": "3. a 1 MB/s first client, then a fast one",
          "s4": "4. origin down, object stale (stale-if-error=600)",
          "s5": "5. warm hits after a fill through the origin (http-compare's disk "
                "tier: %(keys)s gpd objects, %(ram)s MiB cgroup, median of %(reps)s runs)"}


def cell(v, unit):
    if v is None:
        return "-"
    if unit == "ms":
        return "%.1f ms" % (v * MS)
    if unit == "MB":
        return "%.1f" % (v / 1e6)
    if unit == "x":
        return "%.2fx" % v
    if unit == "f":
        return "%.1f" % v
    return str(v)


def ratio(peer, base, key):
    """peer / goblin of one figure (None where either lacks it or goblin's is 0)."""
    a, b = peer.get(key), base.get(key)
    if a is None or b in (None, 0):
        return None
    return round(a / b, 2)


def ratios(results, key):
    """Every peer's ratio to goblin of each column of scenario <key>."""
    if key not in results.get("goblin", {}):
        return {}
    base = results["goblin"][key]
    return {p: {c[0]: ratio(r[key], base, c[0]) for c in COLUMNS[key]}
            for p, r in results.items() if p != "goblin" and key in r}


def verdict(goals):
    missed = [g["goal"] for g in goals.values() if not g["met"]]
    return "met" if not missed else "missed: " + "; ".join(missed)


def scenario_table(results, key, order):
    cols = COLUMNS[key]
    head = ["peer"] + [c[1] for c in cols] + ["vs goblin", "goals", "binds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rat = ratios(results, key)
    for p in order:
        f = results.get(p, {}).get(key)
        if f is None:
            continue
        rr = rat.get(p, {})
        vs = ", ".join("%s %.2f" % (c[1], rr[c[0]]) for c in cols
                       if rr.get(c[0]) is not None) or "-"
        lim = f.get("limit")
        lines.append("| " + " | ".join(
            [p] + [cell(f.get(c[0]), c[2]) for c in cols] +
            [vs, verdict(f["goals"]), limit_cell(lim) if lim else "-"]) + " |")
    return lines


def markdown(res):
    o, p = res["origin"], res["params"]
    names = {"clients": p["clients"], "mib": p["size"] >> 20,
             "range": res["object"]["range"]}
    w = res.get("s5_params", {})
    names.update(keys=w.get("keys", "-"), ram=w.get("server_ram", 0) >> 20,
                 reps=w.get("reps", "-"))
    out = ["# bench/cache-fill, %s" % res["date"], "",
           "Run: `%s` (%s run)." % (res["command"], "quick" if res["quick"] else "full"),
           "", "Origin (nginx, limit_rate %.0f MB/s, across the rig's `--net %s` link): "
           "first byte %.1f ms, %d MiB in %.0f ms (median of %d direct GETs)." % (
               p["origin_rate"] / 1e6, p["net"], o["ttfb_s"] * MS, names["mib"],
               o["transfer_s"] * MS, o["samples"]), ""]
    for key in KEYS:
        if not any(key in r for r in res["results"].values()):
            continue
        out += ["## " + TITLES[key] % names, ""] + scenario_table(
            res["results"], key, res["peers"]) + [""]
    if res.get("failures"):
        out += ["## What did not run", ""] + ["- %s: %s" % kv for kv in
                                              sorted(res["failures"].items())] + [""]
    out += res.get("notes", [])
    return "\n".join(out) + "\n"
