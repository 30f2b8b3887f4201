# usage: imported by bench/small-http (not run on its own)
"""bench/small-http's markdown summary: how it was made, the corpus, one
table per question (population, throughput and cpu, latency, the head
sweep, resident memory from counts vs measured), the plots."""
from cmplib import human
from report import fmt_us, table

SOURCE = ("Atikoglu et al., \"Workload Analysis of a Large-Scale Key-Value "
          "Store\", SIGMETRICS 2012 (Facebook's ETC pool), as mutilate's "
          "fb_value")
# of the daemon's arena_* counters (all are in the JSON), the table's
ARENA_SHOWN = ("arena_segments", "arena_bytes_live", "arena_bytes_dead",
               "arena_bytes_free", "arena_fragmentation_permille")


def x(v):
    return "%.2fx" % v


def made(res):
    m, p = res["meta"], res["params"]
    net = res["net"]
    return ["Made by `%s` at git %s on %s (%d cpus, kernel %s) in %.0f s; %s, "
            "%s, %s. Network: %s." % (
                m["command"], m["git_head"][:12], m["host"], m["cpus"],
                m["kernel"], m.get("wall_seconds", 0), m["nginx"],
                m["goblin_store"], m["goblin_bench"],
                "loopback (client and servers on one host, unshaped)"
                if net["name"] == "loopback" else
                "%s (shaped link, bench/rig/up --net; JSON `net`)" % net["name"]),
            "".join(
                " The host runs DAMON (kdamond %s: %s of %s regions not "
                "accessed for %s x %s us, at most %s bytes per %s ms): cold "
                "page cache is reclaimed whatever the cgroup's limit, so "
                "static files untouched that long leave it; goblin-store's "
                "memfd region cannot be paged out (no swap)." % (
                    k, d["action"], d["operations"], d["min_age_aggr_intervals"],
                    d["aggr_us"], d["quota_bytes"], d["quota_reset_ms"])
                for k, d in m.get("damon", {}).items()),
            "" if not m.get("quick") else
            "\n**--quick: a development run** (few objects, short runs); not a "
            "published measurement.", "",
            "The rig: server memory cgroup %s (page cache included), server "
            "cpu %s (nginx and goblin-store), client and device models cpu "
            "%s; the SSD model (0.58 ms per access, 250 MB/s, 4 channels) "
            "carries an ext4 that holds both the static files and goblin-"
            "store's pool. Each target runs alone in the emptied cgroup. "
            "goblin-bench (%d connections) fills it by HTTP PUT, reads every "
            "object once in key order (a sweep; every byte verified), then "
            "a loaded run (%s, uniform over all keys) and a serial run (one "
            "connection, %s: latency without queueing); every byte of every "
            "response is verified." % (
                human(p["server_ram"]), res["rig"]["server_cpu"],
                res["rig"]["client_cpu"], p["conns"], p["duration"],
                p["serial_duration"]), ""]


def corpus_lines(res):
    c = res["corpus"]
    above = ", ".join("%s: %d" % (human(h), sum(
        k["count"] for k in c["classes"] if k["up_to"] > h))
        for h in res["params"]["heads"])
    return ["## The corpus\n",
            "%d objects `gb:0` .. `gb:%d`, sizes from %s: generalized Pareto, "
            "location 15 B, scale 214.476, shape 0.348238, capped at 1 MiB "
            "(`goblin-bench --dist fb_value`, seed %d). It is the "
            "distribution the seed's small-object runs use, and a measured "
            "one (the value sizes of a production memcache pool); every "
            "object is a small file (the largest is %s). Bytes: goblin-"
            "bench's value(seed, key, 0), so the client verifies every byte "
            "it reads; the corpus is the same every run: %s (`build/"
            "goblin-corpus`, over each key's index, size and bytes).\n" % (
                c["keys"], c["keys"] - 1, SOURCE, c["seed"], human(c["max"]),
                c["digest"]),
            "%s in all, mean %.0f B, p50 %d B, p90 %d B, p99 %d B, p99.9 %d "
            "B, max %d B. As files they take %s of 4 KiB pages (%.1fx the "
            "bytes). Objects larger than each head (on the SSD, head in "
            "RAM): %s.\n" % (
                human(c["bytes"]), c["mean"], c["p50"], c["p90"], c["p99"],
                c["p99.9"], c["max"], human(c["file_page_bytes"]),
                c["file_page_bytes"] / c["bytes"], above)]


def main_lines(res):
    L = ["## Population, throughput, cpu and latency\n",
         "fill: PUTs per second (static: nginx's dav module writing files; "
         "goblin: the module, acknowledged once stored), with the server "
         "processes' cpu (utime + stime from /proc/PID/stat of goblin-store "
         "and the nginx master and worker) per PUT; req/s and cpu per GET: "
         "the loaded run; latency: the serial run.\n"]
    rows = []
    for r in res["rows"]:
        by = r["cpu_us_per_get_by_process"]
        rows.append([r["target"], "%.0f (%.1f MB/s)" % (
            r["populate_objects_per_s"], r["populate_mb_per_s"]),
            fmt_us(r["populate_cpu_us_per_put"]), "%.0f" % r["qps"],
            "%s (%s)" % (fmt_us(r["cpu_us_per_get"]), ", ".join(
                "%s %s" % (k, fmt_us(v)) for k, v in by.items())),
            "%.2f" % r["cpu_load"],
            "%s / %s" % (fmt_us(r["ttfb_p50_us"]), fmt_us(r["ttfb_p99_us"])),
            "%s / %s" % (fmt_us(r["complete_p50_us"]), fmt_us(r["complete_p99_us"])),
            "%s / %s" % (fmt_us(r["loaded_ttfb_p50_us"]),
                         fmt_us(r["loaded_ttfb_p99_us"]))])
    L += table(["target", "fill objects/s", "cpu per PUT", "req/s",
                "cpu per GET (by process)", "cpu load (s/s)",
                "TTFB p50 / p99 (serial)", "complete p50 / p99 (serial)",
                "TTFB p50 / p99 (loaded)"], rows)
    s = res["targets"]["static"]
    st, pages = s["populate"], res["corpus"]["file_page_bytes"]
    L += ["", "static's files reached the SSD (`sync -f`) %.1f s after the "
          "last PUT: %.0f objects/s counting that. Their page cache (fincore) "
          "held %s of their %s after the fill and %s after the sweep (%.1f%%); "
          "the sweep read %s from the SSD, the loaded run %s%s." % (
              st["flush_seconds"], st["objects_per_s_flushed"],
              human(s.get("resident_populated", 0)), human(pages),
              human(s.get("resident_swept", 0)),
              100.0 * s.get("resident_swept", 0) / pages,
              human(s["sweep"]["devices"]["ssd"]["read_bytes"]),
              human(s["loaded"]["devices"]["ssd"]["read_bytes"]),
              ": the runs are warm" if s["loaded"]["devices"]["ssd"]["read_bytes"]
              < pages / 100 else " (**not all warm**: the GETs of files whose "
              "pages are not in page cache read the SSD; the JSON has the "
              "device counters of each run)"), ""]
    L += ["Against static (ratios): " + "; ".join(
        "%s: req/s %s, cpu per GET %s, RAM (cgroup) %s, serial TTFB p99 %s, "
        "fill %s" % (t, x(v["qps"]), x(v["cpu_per_get"]), x(v["cgroup_bytes"]),
                     x(v["ttfb_p99"]), x(v["populate"]))
        for t, v in res["ratios"].items()) + ".", ""]
    return L


def sweep_lines(res):
    L = ["## The head-size sweep (`--ram-head`)\n",
         "RAM-only: objects up to the head (power-of-two slots, or the "
         "arena when the daemon has one: `arena_*` stats); on SSD: larger "
         "ones, whole on the SSD pool with the head cached in RAM. Sizes: "
         "--sub-memory and --memory from the corpus's classes, enough for "
         "either layout (`sizes` in the JSON), `--no-mlock` so the RSS "
         "counts what is touched.\n"]
    rows = []
    for r in res["rows"][1:]:
        s = res["targets"][r["target"]]
        st = s["stats"]
        rows.append([human(r["head"]), "%d / %d" % (r["ram_only_objects"],
                                                     r["ssd_objects"]),
                     "%s / %s" % (human(s["sizes"]["sub_memory"]),
                                  human(s["sizes"]["memory"])),
                     human(st["ram_used_bytes"]), "%d" % r["index_bytes_per_object"],
                     human(s["rss"]["goblin-store"]["rss"]), human(r["cgroup_bytes"]),
                     "%.0f" % r["qps"], "%.2f" % r["ssd_read_mb_loaded"],
                     fmt_us(r["ttfb_p99_us"]), fmt_us(r["complete_p99_us"])])
    L += table(["head", "RAM-only / on SSD", "--sub-memory / --memory",
                "RAM region used", "index B/object", "goblin-store RSS",
                "cgroup", "req/s", "SSD MB read (loaded)", "TTFB p99",
                "complete p99"], rows)
    return L + [""]


def memory_lines(res):
    L = ["## Resident memory: from counts vs measured\n",
         "goblin-store: expected growth over the fill = N x (v + i + a), "
         "from `stats goblin` after it: v = value bytes in RAM per object "
         "(`ram_head_bytes` / N), i = `index_bytes_per_object`, a = RAM "
         "region bytes allocated beyond the values per object "
         "(`ram_used_bytes` - `ram_head_bytes` + `arena_bytes_dead`: slot "
         "rounding, or the arena's entry headers, padding and dead bytes). Measured: goblin-store's RSS "
         "after the fill minus its RSS started empty (the fixed cost: "
         "binary, I/O buffers, rings), and the cgroup's growth over the "
         "same span: it adds the file page cache (pool file pages, and what "
         "is still cached of the index journal, `journal_bytes` long: its "
         "pages are dropped once written back) and nginx's growth.\n"]
    rows = []
    for r in res["rows"][1:]:
        m = res["targets"][r["target"]]["memory"]
        rows.append([r["target"], m["objects"], "%.0f" % m["value_per_object"],
                     "%.0f" % m["index_bytes_per_object"],
                     "%.0f" % m["alloc_overhead_per_object"],
                     human(m["expected_bytes"]), human(m["rss_empty_bytes"]),
                     "%s (%.0f B/object)" % (human(m["rss_growth_bytes"]),
                                             m["rss_growth_per_object"]),
                     x(m["ratio"]), "%s (%.0f B/object)" % (
                         human(m["cgroup_growth_bytes"]),
                         m["cgroup_growth_per_object"]),
                     "%s (journal file %s)" % (
                         human(m["cgroup_file_cache_growth_bytes"]),
                         human(m["journal_bytes"] or 0)),
                     ", ".join("%s %s" % (k[6:], v) for k, v in m["arena"].items()
                               if k in ARENA_SHOWN) or "-"])
    L += table(["target", "N", "v", "i", "a", "expected N(v+i+a)",
                "RSS empty", "RSS growth", "growth / expected", "cgroup growth",
                "of it file page cache", "arena_* stats"], rows)
    m = res["targets"]["static"]["memory"]
    L += ["", "static: expected = each file's 4 KiB pages (%s) + N x (an "
          "inode and a dentry at their slab sizes: %s = %d B) = %s (%.0f B "
          "per object); measured: the cgroup's growth after the runs, with "
          "nginx started as the base: %s (%.0f B per object, %s the "
          "expected), of which page cache %s and kernel memory %s; nginx's "
          "own anonymous memory %s." % (
              human(m["page_bytes"]), ", ".join(
                  "%s %d" % kv for kv in m["slab_bytes_per_file"].items()),
              m["kernel_bytes_per_file"], human(m["expected_bytes"]),
              m["expected_per_object"], human(m["measured_bytes"]),
              m["measured_per_object"], x(m["ratio"]), human(m["cache_bytes"]),
              human(m["kmem_bytes"] or 0), human(m["nginx_anon_bytes"])), ""]
    return L


def lines(res, png, cdf_png):
    L = ["# Small objects over HTTP: ngx_http_goblin_module vs nginx static "
         "files: %s\n" % res["meta"]["date"]]
    L += made(res) + corpus_lines(res) + main_lines(res) + sweep_lines(res)
    L += memory_lines(res)
    L += ["![throughput, cpu, population, memory](%s)\n" % png,
          "![latency CDFs](%s)\n" % cdf_png,
          "Rig fidelity (`fio_check` in the JSON), measured/model IOPS: %s."
          % ", ".join("%s %s %.2f" % (d["device"], j["job"], j["ratio"])
                      for d in res["fio_check"]["devices"] for j in d["jobs"])]
    return L
