# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare's measurements: the targets and goals, goblin-store's
defaults it sizes by, one goblin-bench run's numbers, medians and ratios."""
import statistics

from cmplib import KIB, MIB, Failure

RAM_HEAD = 256 * KIB                # goblin-store's --ram-head default
BLOCK = 2 * MIB                     # goblin-store's --block default
SEED = 1
GOALS = {"throughput": 0.90, "ttfb_p99": 1.20}
DISK_TARGETS = ("goblin", "static", "static-aio", "nginx-cache", "varnish", "ats")
COLORS = {"goblin": "#d62728", "static": "#1f77b4", "static-aio": "#17becf",
          "nginx-cache": "#2ca02c", "varnish": "#9467bd", "ats": "#ff7f0e",
          "nginx-cache-ssd": "#98df8a", "varnish-ssd": "#c5b0d5",
          "ats-ssd": "#ffbb78"}


# Of the server cgroup, what goblin-store keeps outside --memory: I/O
# buffers, the index, the process, nginx's workers and the journal's pages.
SERVER_RESERVE = 64 * MIB


def goblin_memory(keys, server_ram=0):
    """--memory holding every key's 256K head (2% slack), or, when more,
    the server cgroup's RAM less SERVER_RESERVE (a quarter when that is
    more): RAM caches hot bytes as well as heads, as the page cache does
    for nginx's static files in the same cgroup.  Whole blocks."""
    per_block = BLOCK // RAM_HEAD
    heads = -(-int(keys * 1.02) // per_block) * BLOCK
    room = server_ram - max(SERVER_RESERVE, server_ram // 4)
    return max(heads, room // BLOCK * BLOCK)


def peer_ram_cache(keys, server_ram=0):
    """The RAM cache of nginx proxy_cache, Varnish and Traffic Server: as
    goblin_memory() with twice the reserve (a third when that is more),
    since their processes take more beside it (Traffic Server's, with
    goblin-store's reserve, was killed by the cgroup's OOM killer)."""
    per_block = BLOCK // RAM_HEAD
    heads = -(-int(keys * 1.02) // per_block) * BLOCK
    room = server_ram - max(2 * SERVER_RESERVE, server_ram // 3)
    return max(heads, room // BLOCK * BLOCK)


def record(res):
    """The measured numbers of one goblin-bench run; misses and errors are
    failures (every key was stored and nothing may evict)."""
    run = res["run"]
    bad = run["misses"] + run["errors"] + run["verify_errors"] + run["lost"]
    if bad:
        raise Failure("goblin-bench: %d misses, %d errors, %d verify errors, "
                      "%d lost" % (run["misses"], run["errors"],
                                   run["verify_errors"], run["lost"]))
    lat = run["latency_us"]
    return {"seconds": run["seconds"], "requests": run["requests"],
            "qps": run["qps"], "mb_per_s": run["get_mb_per_s"],
            "ttfb_p50_us": lat["ttfb"]["p50"], "ttfb_p90_us": lat["ttfb"]["p90"],
            "ttfb_p99_us": lat["ttfb"]["p99"],
            "ttfb_p99_9_us": lat["ttfb"]["p99_9"],
            "complete_p50_us": lat["complete"]["p50"],
            "complete_p99_us": lat["complete"]["p99"],
            "ttfb_cdf": lat["ttfb"]["cdf"]}


METRICS = ("qps", "mb_per_s", "ttfb_p50_us", "ttfb_p90_us", "ttfb_p99_us",
           "ttfb_p99_9_us", "complete_p50_us", "complete_p99_us")


def medians(runs):
    return {k: statistics.median(r[k] for r in runs) for k in METRICS}


SPREAD = ("qps", "mb_per_s", "ttfb_p50_us", "ttfb_p99_us", "complete_p99_us")


def quartiles(v):
    """min, lower quartile, median, upper quartile, max (quartiles by
    linear interpolation; with one value all five are it)."""
    v = sorted(v)

    def q(f):
        i = f * (len(v) - 1)
        lo = int(i)
        return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (i - lo)
    return {"min": v[0], "q1": q(0.25), "median": q(0.5), "q3": q(0.75),
            "max": v[-1]}


def spread(runs):
    return {k: quartiles([r[k] for r in runs]) for k in SPREAD}


def ratios(med, a, b):
    return {"throughput": med[a]["qps"] / med[b]["qps"],
            "mb_per_s": med[a]["mb_per_s"] / med[b]["mb_per_s"],
            "ttfb_p50": med[a]["ttfb_p50_us"] / med[b]["ttfb_p50_us"],
            "ttfb_p99": med[a]["ttfb_p99_us"] / med[b]["ttfb_p99_us"],
            "complete_p99": med[a]["complete_p99_us"] / med[b]["complete_p99_us"]}


def median_run(runs):
    return sorted(runs, key=lambda r: r["qps"])[len(runs) // 2]


def runs_of(res, t):
    return res["runs"][t] if res["tier"] == "ram" else res["sessions"][t]["runs"]


def x(v):
    """A ratio, with two significant digits below 0.1."""
    return ("%.2fx" if v >= 0.1 else "%.2gx") % v
