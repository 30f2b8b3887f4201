# usage: imported by bench/small-http (not run on its own)
"""bench/small-http's sessions: one target at a time alone in the emptied
server cgroup of the rig (nginx serving the corpus as files on the
emulated SSD, or goblin-store at one --ram-head behind nginx with the
module), populated by HTTP PUT, then a verifying sweep, a loaded run and
a serial run, with the server processes' cpu and memory around each.
Failures raise cmplib.Failure with a one-line reason."""
import json
import os
import shutil
import subprocess
import sys
import time

from cmplib import (KIB, MIB, Failure, Server, device_delta, free_port, goblin,
                    goblin_bench, human, memcache_stats)
from hlib import (BENCH, MODULE, STORE, cpu_seconds, http_get, resident_bytes,
                  wait_attached)
from httpcmp import record
from peers import NGINX

BLOCK = 2 * MIB         # goblin-store's --block default
MIN_SLOT = 64           # the RAM region's smallest power-of-two slot
PAGE = 4096
SLABS = ("ext4_inode_cache", "dentry")


def log(msg):
    print("small-http: " + msg, file=sys.stderr, flush=True)


def nginx_conf(d, port, host, locations, extra="", module=None):
    """d/nginx.conf: one worker, sendfile, no access log; listens on the
    rig's server address and on 127.0.0.1 (for the status GETs here)."""
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    listen = "        listen 127.0.0.1:%d;\n" % port
    if host != "127.0.0.1":
        listen += "        listen %s:%d;\n" % (host, port)
    with open(conf, "w") as f:
        f.write("daemon off;\nmaster_process on;\nworker_processes 1;\n"
                "error_log %s/logs/error.log warn;\npid %s/logs/nginx.pid;\n"
                "%s%s\nevents { worker_connections 1024; }\nhttp {\n"
                "    access_log off;\n    sendfile on;\n    tcp_nopush on;\n"
                "    default_type application/octet-stream;\n%s\n"
                "    server {\n%s        keepalive_requests 1000000;\n"
                "        client_max_body_size 2m;\n%s\n    }\n}\n" % (
                    d, d, "user root;\n" if os.geteuid() == 0 else "",
                    "load_module %s;" % module if module else "", extra,
                    listen, locations))
    return conf


def goblin_sizes(corpus, head):
    """goblin-store's RAM and SSD sizes for the corpus at --ram-head <head>
    (a power of two), from its power-of-two classes, enough for either
    layout of the small objects (power-of-two slots from 64 B up to
    head/2, or the byte-granular arena of everything below the head):
    --sub-memory every RAM-only object in a power-of-two slot, with 20%
    and 16 blocks of slack (a partly filled block per slot class);
    --memory a head slot for each object over head/2 (RAM-only up to the
    head, the cached head of an on-disk one) with 5% and 2 blocks; the SSD
    pool the objects over the head, 4 KiB-aligned, with 25% and 64 MiB.
    With --no-mlock what is not used is not resident."""
    cls = corpus["classes"]
    slots = sum(c["count"] * max(MIN_SLOT, c["up_to"]) for c in cls
                if c["up_to"] <= head)
    heads = sum(c["count"] for c in cls if c["up_to"] > head // 2)
    on_disk = [c for c in cls if c["up_to"] > head]
    disk = sum(c["bytes"] + c["count"] * PAGE for c in on_disk)

    def blocks(n):
        return -(-int(n) // BLOCK) * BLOCK
    return {"sub_memory": blocks(slots * 1.2 + 16 * BLOCK),
            "memory": blocks(heads * head * 1.05) + 2 * BLOCK,
            "ssd_size": -(-int(disk * 1.25) // MIB) * MIB + 64 * MIB,
            "small_objects": sum(c["count"] for c in cls if c["up_to"] <= head // 2),
            "head_slot_objects": heads,
            "disk_objects": sum(c["count"] for c in on_disk)}


def proc_memory(pid):
    """VmRSS, VmHWM and RssAnon/File/Shmem of <pid> in bytes (0 if gone)."""
    out = {"rss": 0, "hwm": 0, "anon": 0, "file": 0, "shmem": 0}
    names = {"VmRSS:": "rss", "VmHWM:": "hwm", "RssAnon:": "anon",
             "RssFile:": "file", "RssShmem:": "shmem"}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k = line.split(None, 1)[0] if line.strip() else ""
                if k in names:
                    out[names[k]] = int(line.split()[1]) * KIB
    except OSError:
        pass
    return out


def tree(pid):
    """<pid> and its live descendants (an nginx master and its worker)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def tree_memory(pid):
    tot = {}
    for p in tree(pid):
        for k, v in proc_memory(p).items():
            tot[k] = tot.get(k, 0) + v
    return tot


def slab_sizes():
    """Object sizes of the kernel slabs a small file costs (inode, dentry),
    from /proc/slabinfo (root); {} where it cannot be read."""
    out = {}
    try:
        with open("/proc/slabinfo") as f:
            for line in f:
                p = line.split()
                if p and p[0] in SLABS:
                    out[p[0]] = int(p[3])
    except OSError:
        pass
    return out


def resident_files(root, keys):
    """Page-cache bytes of the static files now (fincore, in batches)."""
    names = [os.path.join(root, "gb:%d" % k) for k in range(keys)]
    return sum(resident_bytes(names[i:i + 8192])
               for i in range(0, len(names), 8192))


def cgroup_memory(rig):
    m = rig.cg_memory()
    try:
        m["kmem_bytes"] = rig.cg_int("memory.kmem.usage_in_bytes")
    except OSError:
        m["kmem_bytes"] = None
    return m


class Target:
    """One target's servers in the rig and the phases run against it."""

    def __init__(self, rig, a, d, tag, prefix, port):
        self.rig, self.a, self.d, self.tag = rig, a, d, tag
        self.prefix, self.port = prefix, port
        self.servers = []
        self.base = ["--proto", "http", "--port", str(port), "--http-prefix",
                     prefix, "--dist", a.dist, "--keys", str(a.keys),
                     "--seed", str(a.seed), "--timeout", "60s"]

    def start(self, name, argv, port):
        s = Server(self.rig, name, argv, port, self.d)
        self.servers.append(s)
        s.start()
        return s

    def stop(self):
        for s in reversed(self.servers):
            s.stop()

    def cpu(self):
        return {s.name: cpu_seconds(s.proc.pid) for s in self.servers}

    def memory(self):
        return {s.name: tree_memory(s.proc.pid) for s in self.servers}

    def bench(self, what, args):
        """One goblin-bench run: its JSON, with the server processes' cpu
        seconds and the device counters over it."""
        c0, dev0, t0 = self.cpu(), self.rig.devices(), time.time()
        res = goblin_bench(BENCH, self.base + args,
                           os.path.join(self.d, "%s-%s.json" % (self.tag, what)),
                           self.rig.env["GOBLIN_RIG_CLIENT_CPU"], rig=self.rig)
        c1 = self.cpu()
        for s in self.servers:
            s.check_alive()
        res["server_cpu_s"] = {k: c1[k] - c0[k] for k in c0}
        res["devices"] = device_delta(dev0, self.rig.devices(), time.time() - t0)
        return res

    def populate(self):
        res = self.bench("populate", ["--conns", str(self.a.conns),
                                      "--populate-only"])
        p = res["populate"]
        if p["sets"] != self.a.keys or p["errors"]:
            raise Failure("%s populate: %d of %d stored, %d errors"
                          % (self.tag, p["sets"], self.a.keys, p["errors"]))
        out = {"seconds": p["seconds"], "objects": p["sets"],
               "bytes": p["set_bytes"], "objects_per_s": p["sets"] / p["seconds"],
               "mb_per_s": p["set_bytes"] / p["seconds"] / 1e6,
               "put_p50_us": p["latency_us"]["set_complete"]["p50"],
               "put_p99_us": p["latency_us"]["set_complete"]["p99"],
               "server_cpu_s": res["server_cpu_s"],
               "server_cpu_us_per_put": 1e6 * sum(res["server_cpu_s"].values())
               / p["sets"], "devices": res["devices"]}
        log("%s: populated %d objects (%s) in %.1f s: %.0f objects/s, %.1f "
            "MB/s, server cpu %.0f us per PUT" % (
                self.tag, p["sets"], human(p["set_bytes"]), p["seconds"],
                out["objects_per_s"], out["mb_per_s"], out["server_cpu_us_per_put"]))
        return out

    def measure(self, resident=None):
        """The sweep (every key once, in order, all verified), the loaded
        run (--conns, uniform over all keys) and the serial run (one
        connection: latency without queueing); <resident>() (static: the
        files' page-cache bytes) is recorded after the sweep."""
        a, out = self.a, {}
        res = self.bench("sweep", ["--no-store", "--key-dist", "sequential",
                                   "--conns", str(a.conns), "--duration", "1200s"])
        if res["run"]["gets"] != a.keys or res["run"]["hits"] != a.keys:
            raise Failure("%s sweep: %d gets, %d hits of %d keys" % (
                self.tag, res["run"]["gets"], res["run"]["hits"], a.keys))
        out["sweep"] = self.summary(res)
        out["verified_objects"] = res["run"]["hits"]
        out["verify_errors"] = res["run"]["verify_errors"]
        if resident:
            out["resident_swept"] = resident()
        for what, conns, dur in (("loaded", a.conns, a.duration),
                                 ("serial", 1, a.serial_duration)):
            res = self.bench(what, ["--no-store", "--conns", str(conns),
                                    "--duration", dur])
            out[what] = self.summary(res)
            log("%s %s: %.0f req/s, TTFB p50 %.0f us p99 %.0f us, complete "
                "p99 %.0f us, server cpu %.1f us per GET" % (
                    self.tag, what, out[what]["qps"], out[what]["ttfb_p50_us"],
                    out[what]["ttfb_p99_us"], out[what]["complete_p99_us"],
                    out[what]["server_cpu_us_per_request"]))
        return out

    def summary(self, res):
        r = record(res)
        r["complete_cdf"] = res["run"]["latency_us"]["complete"]["cdf"]
        r["server_cpu_s"] = res["server_cpu_s"]
        n = max(1, res["run"]["requests"])
        r["server_cpu_us_per_request"] = 1e6 * sum(res["server_cpu_s"].values()) / n
        r["cpu_us_per_request"] = {k: 1e6 * v / n
                                   for k, v in res["server_cpu_s"].items()}
        r["server_cpu_load"] = sum(res["server_cpu_s"].values()) / max(
            r["seconds"], 1e-3)
        r["devices"] = res["devices"]
        return r


def static_session(rig, a, d, corpus):
    """nginx serving the corpus as files in a directory of the SSD mount,
    written by PUT through nginx's dav module (so their page cache is
    charged to the server cgroup and is warm, as a cache's would be)."""
    rig.cg_empty()
    ssd = rig.env["GOBLIN_RIG_SSD_DIR"]
    root, tmp = os.path.join(ssd, "static"), os.path.join(ssd, "static-tmp")
    for p in (root, tmp):
        os.makedirs(p)
    port = free_port()
    nd = os.path.join(d, "nginx-static")
    conf = nginx_conf(nd, port, rig.server_host,
                      "        location /static/ { root %s; dav_methods PUT; "
                      "client_body_temp_path %s; }" % (ssd, tmp))
    t = Target(rig, a, d, "static", "/static/", port)
    try:
        empty = cgroup_memory(rig)
        nginx = t.start("nginx-static", [NGINX, "-p", nd + "/", "-c", conf], port)
        out = {"nginx_conf": open(conf).read(), "cgroup_empty": empty,
               "cgroup_started": cgroup_memory(rig), "rss_empty": t.memory()}
        out["populate"] = t.populate()
        t0 = time.time()
        res = subprocess.run(["sync", "-f", root], capture_output=True, text=True)
        if res.returncode:
            raise Failure("sync -f %s: %s" % (root, res.stderr.strip()))
        pop = out["populate"]
        pop["flush_seconds"] = time.time() - t0
        pop["objects_per_s_flushed"] = a.keys / (pop["seconds"] + pop["flush_seconds"])
        out["cgroup_populated"] = cgroup_memory(rig)
        out["resident_populated"] = resident_files(root, a.keys)
        out.update(t.measure(lambda: resident_files(root, a.keys)))
        out["cgroup"] = cgroup_memory(rig)
        out["rss"] = t.memory()
        out["memory"] = static_memory(out, corpus, nginx.name)
        return out
    finally:
        # the files stay: deleting 373,165 of them through the SSD model
        # takes minutes, and the rig's device goes when it comes down
        t.stop()


def static_memory(s, corpus, nginx):
    """The files' expected resident bytes from counts (each file's pages,
    plus an inode and a dentry per file at the slab's object size) beside
    what the cgroup charges beyond its state with nginx started, and
    nginx's own anonymous memory."""
    slab = slab_sizes()
    per_file = sum(slab.get(k, 0) for k in SLABS)
    n = corpus["keys"]
    expected = corpus["file_page_bytes"] + n * per_file
    cg = s["cgroup"]
    nginx_anon = s["rss"][nginx]["anon"]
    measured = cg["usage_bytes"] - s["cgroup_started"]["usage_bytes"]
    return {"objects": n, "value_bytes": corpus["bytes"],
            "page_bytes": corpus["file_page_bytes"],
            "slab_bytes_per_file": slab, "kernel_bytes_per_file": per_file,
            "expected_bytes": expected,
            "expected_per_object": expected / n,
            "measured_bytes": measured, "measured_per_object": measured / n,
            "cache_bytes": cg["cache_bytes"], "kmem_bytes": cg["kmem_bytes"],
            "nginx_anon_bytes": nginx_anon,
            "ratio": measured / expected if expected else None}


def goblin_session(rig, a, d, corpus, head):
    """goblin-store at --ram-head <head> (pools on the SSD mount) and nginx
    with the module, both in the emptied server cgroup, filled by PUT
    through the module."""
    rig.cg_empty()
    tag = "goblin-%dK" % (head // KIB)
    pool = os.path.join(rig.env["GOBLIN_RIG_SSD_DIR"], tag)
    os.makedirs(pool)
    sz = goblin_sizes(corpus, head)
    mc, port = free_port(), free_port()
    sock = os.path.join(d, tag + ".sock")
    argv = goblin.store_argv(
        mc, "--cores", "1", "--ram-head", "%dK" % (head // KIB),
        "--ssd-size", "%dM" % (sz["ssd_size"] // MIB),
        memory="%dK" % (sz["memory"] // KIB),
        sub_memory="%dK" % (sz["sub_memory"] // KIB), mlock=False, http=True,
        listen=rig.server_host, sock=sock, ssd=[pool], binary=STORE)
    nd = os.path.join(d, "nginx-" + tag)
    conf = nginx_conf(nd, port, rig.server_host,
                      "        location /obj/ { goblin; goblin_methods GET PUT; }\n"
                      "        location = /goblin-status { goblin_status; }",
                      "    goblin_storaged unix:%s;" % sock, module=MODULE)
    t = Target(rig, a, d, tag, "/obj/", port)
    log("%s: %s" % (tag, " ".join(argv)))
    try:
        empty = cgroup_memory(rig)
        store = t.start("goblin-store", argv, mc)
        t.start("nginx", [NGINX, "-p", nd + "/", "-c", conf], port)
        wait_attached(port, tag)
        out = {"head": head, "argv": argv, "sizes": sz,
               "nginx_conf": open(conf).read(), "cgroup_empty": empty,
               "cgroup_started": cgroup_memory(rig), "rss_empty": t.memory()}
        out["populate"] = t.populate()
        st = out["stats_populated"] = memcache_stats(mc, "goblin", rig.server_host)
        if st["curr_items"] != a.keys or st["evictions"]:
            raise Failure("%s holds %d of %d objects after the fill (%d "
                          "evictions): sized %s" % (tag, st["curr_items"], a.keys,
                                                    st["evictions"], sz))
        out["rss_populated"] = t.memory()
        out["cgroup_populated"] = cgroup_memory(rig)
        out.update(t.measure())
        out["stats"] = memcache_stats(mc, "goblin", rig.server_host)
        out["module_status"] = json.loads(http_get(port, "/goblin-status")[1])
        out["cgroup"] = cgroup_memory(rig)
        out["rss"] = t.memory()
        out["memory"] = goblin_memory(out, store.name)
        return out
    finally:
        t.stop()
        shutil.rmtree(pool, ignore_errors=True)


def goblin_memory(s, store):
    """From the daemon's counts after the fill: N objects x (value bytes in
    RAM + index bytes per object + allocation overhead per object, i.e.
    RAM region bytes allocated beyond the values: slot rounding, or the
    arena's entry headers and padding plus its dead bytes; its free
    segment tails are not counted, being untouched), against goblin-store's RSS growth over the
    fill (its RSS when empty is the fixed cost: binary, buffers, rings)
    and the cgroup's, whose file page cache (cache less shmem: the
    index journal's appends and the pool files) is set apart.  The arena_* counters are recorded when the daemon
    has them."""
    st = s["stats_populated"]
    n = st["curr_items"]
    values = st["ram_head_bytes"]
    index = st["index_bytes"]
    alloc = st["ram_used_bytes"] - values + st.get("arena_bytes_dead", 0)
    expected = values + index + alloc
    grow = s["rss_populated"][store]["rss"] - s["rss_empty"][store]["rss"]
    cg = s["cgroup_populated"]["usage_bytes"] - s["cgroup_started"]["usage_bytes"]
    cache = s["cgroup_populated"]["cache_bytes"] - s["cgroup_started"]["cache_bytes"]
    shmem = s["cgroup_populated"]["shmem_bytes"] - s["cgroup_started"]["shmem_bytes"]
    return {"objects": n, "value_bytes_in_ram": values,
            "value_per_object": values / n,
            "index_bytes": index,
            "index_bytes_per_object": st.get("index_bytes_per_object", index / n),
            "alloc_overhead_bytes": alloc, "alloc_overhead_per_object": alloc / n,
            "ram_used_bytes": st["ram_used_bytes"],
            "ram_region_bytes": st["ram_region_bytes"],
            "expected_bytes": expected, "expected_per_object": expected / n,
            "rss_empty_bytes": s["rss_empty"][store]["rss"],
            "rss_bytes": s["rss_populated"][store]["rss"],
            "rss_growth_bytes": grow, "rss_growth_per_object": grow / n,
            "cgroup_growth_bytes": cg, "cgroup_growth_per_object": cg / n,
            "cgroup_bytes": s["cgroup_populated"]["usage_bytes"],
            "cgroup_file_cache_growth_bytes": cache - shmem,
            "journal_bytes": st.get("journal_bytes"),
            "unexplained_bytes": grow - expected,
            "ratio": grow / expected if expected else None,
            "arena": {k: st[k] for k in st if k.startswith("arena_")}}
