# usage: imported by bench/cache-fill (not run on its own)
"""Scenario 5: the warm-hit run of bench/http-compare --tier disk (the
seed's gpd objects, goblin-bench --proto http, every byte verified), with
every cache, goblin-store included, filled through the origin instead of
by PUT.  The origin holds goblin-bench's own values (PUT into it once,
through nginx's WebDAV PUT, so goblin-bench verifies what the caches
serve); each cache then runs alone under the disk tier's memory cap
(rig.cg_limit): one verified sweep through it from the origin, its
writes flushed, and http-compare's measured runs (disktier.measured), the
origin's requests counted (0 for a cache that holds the set)."""
import os
import subprocess

import cmplib
from cmplib import Failure, goblin_bench
from disktier import measured, sweep
from hlib import BENCH
from httpcmp import SEED, medians

KEYS, RAM = (768, 384 << 20)            # http-compare's disk tier
QUICK_KEYS, QUICK_RAM = (160, 160 << 20)


def params(quick):
    """The disk tier's figures (keys, server RAM, conns, duration, reps),
    as attributes disktier.sweep and disktier.measured read."""
    class P:
        pass
    p = P()
    p.disk_keys, p.server_ram = (QUICK_KEYS, QUICK_RAM) if quick else (KEYS, RAM)
    p.conns, p.disk_duration = 16, "2s" if quick else "5s"
    p.disk_reps = 2 if quick else 3
    return p


def base_args(p):
    return ["--proto", "http", "--dist", "gpd", "--keys", str(p.disk_keys),
            "--seed", str(SEED), "--timeout", "120s"]


def populate_origin(ctx, p, work):
    """goblin-bench's values PUT into the origin (its WebDAV location),
    from the client's namespace; returns the set's bytes."""
    o = ctx.origin
    res = goblin_bench(BENCH, base_args(p) + ["--host", o.host, "--port", str(o.port),
                                              "--http-prefix", "/obj/", "--conns", "4",
                                              "--populate-only"],
                       os.path.join(work, "origin-populate.json"), ctx.cpu, rig=ctx.rig)
    pop = res["populate"]
    if pop["set_errors"] or pop["sets"] != p.disk_keys:
        raise Failure("the origin stored %d of %d objects (%d errors)"
                      % (pop["sets"], p.disk_keys, pop["set_errors"]))
    return pop["set_bytes"]


def sizes(ctx, p):
    """The objects' sizes, from the origin's files."""
    return [os.path.getsize(os.path.join(ctx.origin.root, "obj", "gb:%d" % k))
            for k in range(p.disk_keys)]


class OriginCount:
    """disktier.measured's view of the origin: requests it logged."""

    def __init__(self, origin):
        self.origin = origin

    def requests(self):
        return len(self.origin.entries())


def warm_run(ctx, p, tag, servers, port, cache_dir, d):
    """The sweep that fills the cache through the origin, the flush, the
    measured runs; the limit row of the measured runs."""
    b = base_args(p) + ["--port", str(port), "--http-prefix", "/obj/"]
    oc = OriginCount(ctx.origin)
    o = oc.requests()
    fill = sweep(ctx.rig, b, p, tag, "fill", d, servers)
    fill["origin_requests"] = oc.requests() - o
    if fill["origin_requests"] < p.disk_keys:
        raise Failure("%s s5: %d origin requests while filling %d keys: not a "
                      "miss each" % (tag, fill["origin_requests"], p.disk_keys))
    res = subprocess.run(["sync", "-f", cache_dir], capture_output=True, text=True)
    if res.returncode:
        raise Failure("sync -f %s: %s" % (cache_dir, res.stderr.strip()))
    w, mark = ctx.window([s.proc.pid for s in servers]), oc.requests()
    s = measured(ctx.rig, b, p, tag, d, servers, oc, warm=False)
    n = sum(r["origin_requests"] for r in s["runs"])
    s["limit"] = w.limit(sum(e[2] for e in ctx.origin.entries()[mark:]))
    s["fill"] = fill
    s["medians"] = med = medians(s["runs"])
    med["origin_requests"] = n
    cmplib.log("%s s5: %.1f req/s, %.1f MB/s, TTFB p99 %.1f ms, origin %d req" % (
        tag, med["qps"], med["mb_per_s"], med["ttfb_p99_us"] / 1e3, n))
    return s


def figures(s):
    """What the report shows of scenario 5: the median run's figures and
    the origin's requests during the measured runs (goal: 0)."""
    m = s["medians"]
    f = {"qps": m["qps"], "mb_per_s": m["mb_per_s"],
         "ttfb_p50_s": m["ttfb_p50_us"] / 1e6, "ttfb_p99_s": m["ttfb_p99_us"] / 1e6,
         "origin_requests": m["origin_requests"], "runs": s["runs"],
         "fill": s["fill"], "limit": s["limit"]}
    f["goals"] = {"warm": {"met": m["origin_requests"] == 0,
                           "goal": "0 origin requests once warm"}}
    return f

