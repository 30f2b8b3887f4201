# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare --tier disk: in the emulated rig, goblin-store + the
module (filled by PUT), nginx serving the objects as files on the HDD, and
the caches users would put in front of large objects (nginx proxy_cache +
slice, Varnish 7, Apache Traffic Server 9), each filled once through a
small origin outside the server cgroup, then the same GET runs."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from cmplib import (KIB, MIB, TOP, Failure, Rig, Server, device_delta, goblin,
                    free_port, goblin_bench, human, memcache_stats)
from hlib import (BENCH, STORE, brief, copy_files, copy_objects, goblin_locations,
                  http_get, log, read, resident_bytes, stop, wait_attached,
                  wait_listen)
from httpcmp import (SEED, goblin_memory, medians, peer_ram_cache, ratios,
                     record, spread)
from peers import (NGINX, count_requests, nginx_cache_conf, nginx_conf,
                   origin_conf, ats_files, varnish_files, varnish_split)

STATE = "/var/tmp/goblin-http-compare-rig"
STATIC = ("static", "static-aio")
TIMEOUT = 120           # goblin-bench --timeout, seconds
MODULE = os.path.join(TOP, "build", "ngx_http_goblin_module.so")


def disk_sizes(keys):
    """MiB of goblin-store's SSD and HDD pools (a prefix of at most 1 MiB
    and a tail averaging under 1 MiB per gpd object, plus slack), of each
    peer's disk cache (the set and a quarter, plus slack) and of the rig's
    sparse devices (the pools; on the HDD the files and one peer's cache)."""
    ssd = hdd = keys + 64
    cache = keys * 5 // 4 + 128
    return {"ssd_pool": ssd, "hdd_pool": hdd, "peer_cache": cache,
            "rig_ssd": ssd + 1024, "rig_hdd": hdd + 2 * keys + cache + 1024}


class Origin:
    """nginx serving the object files from the host's disk, outside the
    server cgroup and pinned to the client cpu, so the peers' fill costs
    the server nothing; its access log counts the requests it served."""

    def __init__(self, d, root, cpu):
        self.d, self.port = d, free_port()
        self.conf = origin_conf(d, self.port, root)
        with open(os.path.join(d, "origin.log"), "w") as logf:
            self.proc = subprocess.Popen(
                ["taskset", "-c", str(cpu), NGINX, "-p", d + "/", "-c", self.conf],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True)
        wait_listen(self.port, self.proc, "the origin")

    def requests(self):
        return count_requests(self.d)

    def stop(self):
        stop(self.proc)


def measured(rig, base, a, tag, work, servers, origin, warm=True):
    """The warm-up sweep (unless not <warm>) and the measured runs against
    one target: device counters, the cgroup's memory and the origin's
    requests around each."""
    out = {"runs": []}
    o = origin.requests() if origin else 0
    if warm:
        out["sweep"] = sweep(rig, base, a, tag, "sweep", work, servers)
        if origin:
            out["sweep"]["origin_requests"] = origin.requests() - o
    for rep in range(a.disk_reps):
        o = origin.requests() if origin else 0
        before = rig.devices()
        res = goblin_bench(BENCH, base + ["--no-store", "--conns", str(a.conns),
                                          "--duration", a.disk_duration],
                           os.path.join(work, "%s-%d.json" % (tag, rep)),
                           rig.env["GOBLIN_RIG_CLIENT_CPU"])
        for s in servers:
            s.check_alive()
        r = record(res)
        r["devices"] = device_delta(before, rig.devices(), res["run"]["seconds"])
        r["served_bytes"] = served = max(1, res["run"]["get_bytes"])
        for dev in ("hdd", "ssd"):
            r[dev + "_read_per_served"] = r["devices"][dev]["read_bytes"] / served
        r["disk_read_fraction"] = r["hdd_read_per_served"] + r["ssd_read_per_served"]
        r["cgroup"] = rig.cg_memory()
        r["origin_requests"] = origin.requests() - o if origin else 0
        out["runs"].append(r)
        log("disk %-11s rep %d: %s; read HDD %.1f MB/s, SSD %.1f MB/s, %.0f%% "
            "of the bytes served; wrote HDD %.1f MB/s; cgroup peak %s%s" % (
                tag, rep, brief(r), r["devices"]["hdd"]["read_mb_per_s"],
                r["devices"]["ssd"]["read_mb_per_s"], 100 * r["disk_read_fraction"],
                r["devices"]["hdd"]["write_mb_per_s"],
                human(r["cgroup"]["max_usage_bytes"]),
                "; ORIGIN served %d requests" % r["origin_requests"]
                if r["origin_requests"] else ""))
    out["ram"] = rig.cg_memory()
    return out


def sweep(rig, base, a, tag, what, work, servers):
    """One GET of every key, in key order, all verified."""
    before, t0 = rig.devices(), time.time()
    res = goblin_bench(BENCH, base + ["--no-store", "--key-dist", "sequential",
                                      "--conns", str(a.conns), "--duration",
                                      "1200s"],
                       os.path.join(work, "%s-%s.json" % (tag, what)),
                       rig.env["GOBLIN_RIG_CLIENT_CPU"])
    for s in servers:
        s.check_alive()
    out = record(res)
    if res["run"]["gets"] != a.disk_keys:
        raise Failure("%s %s read %d keys of %d"
                      % (tag, what, res["run"]["gets"], a.disk_keys))
    out["devices"] = device_delta(before, rig.devices(), time.time() - t0)
    log("disk %-11s %s: %d keys verified, %s" % (tag, what, a.disk_keys, brief(out)))
    return out


def goblin_session(rig, a, d, env, mb, base):
    """goblin-store + nginx with the module, filled by PUT; then the object
    files copied out of it into d/origin (the host's disk) and onto the
    emulated HDD for the static targets.  Returns (session, sizes)."""
    ssd = os.path.join(env["GOBLIN_RIG_SSD_DIR"], "goblin")
    hdd = os.path.join(env["GOBLIN_RIG_HDD_DIR"], "goblin")
    os.makedirs(ssd)
    os.makedirs(hdd)
    mc, port = free_port(), free_port()
    sock = os.path.join(d, "goblin.sock")
    store_argv = goblin.store_argv(
        mc, "--cores", "1", "--ram-head", "256K",
        "--ssd-size", "%dM" % mb["ssd_pool"], "--hdd-size", "%dM" % mb["hdd_pool"],
        memory="%dK" % (goblin_memory(a.disk_keys, a.server_ram) // KIB), sub_memory="0",
        http=True, sock=sock, ssd=[ssd], hdd=[hdd], binary=STORE)
    nd = os.path.join(d, "nginx-goblin")
    conf = nginx_conf(nd, port, goblin_locations(),
                      "    goblin_storaged unix:%s;" % sock, module=MODULE)
    log("goblin: %s" % " ".join(store_argv))
    servers = []
    try:
        rig.cg_empty()
        servers.append(Server(rig, "goblin-store", store_argv, mc, d))
        servers[-1].start()
        servers.append(Server(rig, "nginx-goblin",
                              [NGINX, "-p", nd + "/", "-c", conf], port, d))
        servers[-1].start()
        wait_attached(port, "disk")
        before, t0 = rig.devices(), time.time()
        pop = goblin_bench(BENCH, base + ["--port", str(port), "--http-prefix",
                                          "/obj/", "--conns", str(a.conns),
                                          "--populate-only"],
                           os.path.join(d, "goblin-populate.json"),
                           env["GOBLIN_RIG_CLIENT_CPU"])
        log("goblin: populated %d objects, %s, in %.1f s" % (
            a.disk_keys, human(pop["populate"]["set_bytes"]), time.time() - t0))
        s = measured(rig, base + ["--port", str(port), "--http-prefix", "/obj/"],
                     a, "goblin", d, servers, None)
        s.update({"argv": store_argv, "nginx_conf": read(conf),
                  "populate_devices": device_delta(before, rig.devices(),
                                                   pop["populate"]["seconds"]),
                  "stats_goblin": memcache_stats(mc, "goblin"),
                  "module_status": json.loads(http_get(port, "/goblin-status")[1])})
        if s["stats_goblin"]["evictions"]:
            raise Failure("goblin-store evicted %d objects"
                          % s["stats_goblin"]["evictions"])
        t0 = time.time()
        sizes = copy_objects(port, a.disk_keys, os.path.join(d, "origin"))
        if sum(sizes) != pop["populate"]["set_bytes"]:
            raise Failure("copied %d bytes of a %d-byte set"
                          % (sum(sizes), pop["populate"]["set_bytes"]))
        copy_files(os.path.join(d, "origin"),
                   os.path.join(env["GOBLIN_RIG_HDD_DIR"], "static"), a.disk_keys)
        log("static: %s copied to the host's disk and the HDD in %.1f s"
            % (human(sum(sizes)), time.time() - t0))
        return s, sizes
    finally:
        for srv in reversed(servers):
            srv.stop()
        shutil.rmtree(ssd, ignore_errors=True)
        shutil.rmtree(hdd, ignore_errors=True)


def static_session(rig, a, d, env, tag, base, set_bytes):
    """nginx alone serving the files on the HDD, cold page cache at start."""
    static_dir = os.path.join(env["GOBLIN_RIG_HDD_DIR"], "static")
    rig.cg_empty()
    cached = resident_bytes([os.path.join(static_dir, "gb:%d" % k)
                             for k in range(a.disk_keys)])
    if cached > set_bytes // 100:
        raise Failure("%s of the files are in the page cache before %s starts"
                      % (human(cached), tag))
    port = free_port()
    nd = os.path.join(d, "nginx-" + tag)
    conf = nginx_conf(nd, port, "        location /static/ { alias %s/; %s}" % (
        static_dir, "aio threads; " if tag == "static-aio" else ""))
    nginx = Server(rig, "nginx-" + tag, [NGINX, "-p", nd + "/", "-c", conf], port, d)
    nginx.start()
    try:
        s = measured(rig, base + ["--port", str(port), "--http-prefix", "/static/"],
                     a, tag, d, [nginx], None)
    finally:
        nginx.stop()
    s.update({"nginx_conf": read(conf), "cached_at_start": cached})
    return s


def peer_config(tag, pd, port, origin, cache_dir, mb, ram_cache, sizes):
    """(argv, config files as text, what the RAM budget went to)."""
    if tag == "nginx-cache":
        conf = nginx_cache_conf(pd, port, origin.port, cache_dir, mb["peer_cache"])
        return ([NGINX, "-p", pd + "/", "-c", conf], {"nginx.conf": read(conf)},
                {"page_cache": "all of the cgroup not used by nginx"})
    if tag == "varnish":
        cut, count, held = varnish_split(sizes, ram_cache)
        vcl, argv = varnish_files(pd, port, origin.port,
                                  os.path.join(cache_dir, "varnish.bin"),
                                  mb["peer_cache"], ram_cache // MIB, cut)
        return argv, {"goblin.vcl": read(vcl)}, {
            "malloc_bytes": ram_cache, "malloc_objects_up_to": cut,
            "malloc_objects": count, "malloc_object_bytes": held,
            "file_mib": mb["peer_cache"]}
    etc, argv = ats_files(pd, port, origin.port, cache_dir, mb["peer_cache"],
                          ram_cache)
    return argv, {n: read(os.path.join(etc, n)) for n in
                  ("records.config", "storage.config", "remap.config")}, {
        "ram_cache_bytes": ram_cache, "raw_cache_mib": mb["peer_cache"]}


def wait_ats_cache(pd, srv):
    """ATS listens before its cache is up; a request then is never cached."""
    path = os.path.join(pd, "log", "diags.log")
    end = time.time() + 60
    while time.time() < end:
        srv.check_alive()
        try:
            text = read(path)
        except OSError:
            text = ""
        if "cache enabled" in text:
            return
        if "Cache Disabled" in text or "cache disabled" in text:
            raise Failure("ats: cache disabled: %s" % text.strip()[-300:])
        time.sleep(0.1)
    raise Failure("ats: the cache was not enabled within 60 s")


def varnish_counters(pd):
    res = subprocess.run(["varnishstat", "-n", os.path.join(pd, "work"), "-1",
                          "-f", "MAIN.cache_hit", "-f", "MAIN.cache_miss",
                          "-f", "MAIN.backend_req", "-f", "MAIN.n_lru_nuked",
                          "-f", "SMA.mem.g_bytes", "-f", "SMF.disk.g_bytes"],
                         capture_output=True, text=True)
    out = {}
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[1].isdigit():
            out[f[0]] = int(f[1])
    return out


def peer_session(rig, a, d, env, tag, base, origin, mb, sizes):
    """One cache in the emptied server cgroup: filled by one sweep through
    it (the origin serves), its dirty pages flushed to the HDD (as
    goblin-store's PUTs are acknowledged only once on disk), then the
    sweep and the measured runs, with the origin's requests counted (0 for
    a cache that holds the set)."""
    rig.cg_empty()
    cache_dir = os.path.join(env["GOBLIN_RIG_HDD_DIR"], tag)
    os.makedirs(cache_dir)
    pd, port = os.path.join(d, tag), free_port()
    os.makedirs(pd, exist_ok=True)
    ram_cache = peer_ram_cache(a.disk_keys, a.server_ram)
    argv, files, budget = peer_config(tag, pd, port, origin, cache_dir, mb,
                                      ram_cache, sizes)
    log("%s: %s" % (tag, " ".join(argv)))
    srv = Server(rig, tag, argv, port, d)
    try:
        srv.start(timeout=120)
        if tag == "ats":
            wait_ats_cache(pd, srv)
        b = base + ["--port", str(port), "--http-prefix", "/obj/"]
        o = origin.requests()
        fill = sweep(rig, b, a, tag, "fill", d, [srv])
        fill["origin_requests"] = origin.requests() - o
        if fill["origin_requests"] < a.disk_keys:
            raise Failure("%s: the origin served %d requests while filling %d "
                          "keys: not a cache miss each" % (
                              tag, fill["origin_requests"], a.disk_keys))
        t0 = time.time()
        res = subprocess.run(["sync", "-f", cache_dir], capture_output=True,
                             text=True)
        if res.returncode:
            raise Failure("sync -f %s: %s" % (cache_dir, res.stderr.strip()))
        fill["flush_seconds"] = time.time() - t0
        log("%s: the fill's writes flushed to the HDD in %.1f s"
            % (tag, fill["flush_seconds"]))
        s = measured(rig, b, a, tag, d, [srv], origin)
        s.update({"argv": argv, "config": files, "ram_budget": budget, "fill": fill})
        status, body, hdrs = http_get(port, "/obj/gb:0", headers=True)
        s["spot_check"] = {"status": status, "bytes": len(body), "headers": {
            k: v for k, v in hdrs.items() if k in ("X-Cache", "Via", "Age")}}
        if tag == "varnish":
            s["varnishstat"] = varnish_counters(pd)
        srv.check_alive()
        return s
    finally:
        srv.stop()
        shutil.rmtree(cache_dir, ignore_errors=True)


def fio_check():
    fio = subprocess.run([os.path.join(TOP, "bench", "rig", "fio-check"),
                          "--state", STATE, "--report-only", "--runtime", "1"],
                         capture_output=True, text=True)
    sys.stderr.write(fio.stderr)
    if fio.returncode:
        raise Failure("bench/rig/fio-check failed: " + fio.stderr.strip()[-300:])
    return json.loads(fio.stdout)


def disk_tier(a, work):
    busy = subprocess.run(["pgrep", "-a", "-x", "goblin-devmodel"],
                          capture_output=True, text=True).stdout.strip()
    if busy and not (a.quick or a.beside_rig):
        raise Failure("another rig's device model runs (%s); wait until it "
                      "is down: one benchmark at a time" % busy.replace("\n", "; "))
    if busy:
        log("another rig's device model runs; numbers are for development "
            "only")
    d = os.path.join(work, "disk")
    os.makedirs(d)
    mb = disk_sizes(a.disk_keys)
    statics = [] if a.no_static else list(STATIC)
    targets = ["goblin"] + statics + list(a.peers)
    rig = Rig(STATE, a.server_ram, "%dM" % mb["rig_hdd"], "%dM" % mb["rig_ssd"])
    origin = None
    try:
        env = rig.up()
        log("rig up at %s: server cpu %s, client cpu %s, cgroup limit %s" % (
            STATE, env["GOBLIN_RIG_SERVER_CPU"], env["GOBLIN_RIG_CLIENT_CPU"],
            human(int(env["GOBLIN_RIG_SERVER_RAM"]))))
        out = {"tier": "disk", "targets": targets, "net": {"name": "loopback"},
               "params": {"dist": "gpd", "keys": a.disk_keys, "conns": a.conns,
                          "duration": a.disk_duration, "reps": a.disk_reps,
                          "seed": SEED, "server_ram": a.server_ram,
                          "goblin_memory": goblin_memory(a.disk_keys, a.server_ram),
                          "ram_cache": peer_ram_cache(a.disk_keys, a.server_ram),
                          "sizes_mib": mb},
               "rig": {k[len("GOBLIN_RIG_"):].lower(): v for k, v in env.items()},
               "fio_check": fio_check(), "sessions": {}}
        # a request may go 120 s without progress before it counts as
        # lost: a cache that stalls while its writes drain (Varnish's
        # mmap'ed file under the cgroup's limit) shows as slow, not failed
        base = ["--proto", "http", "--dist", "gpd", "--keys", str(a.disk_keys),
                "--seed", str(SEED), "--timeout", "%ds" % TIMEOUT]
        out["sessions"]["goblin"], sizes = goblin_session(rig, a, d, env, mb, base)
        out["set_bytes"] = set_bytes = sum(sizes)
        for tag in statics:
            out["sessions"][tag] = static_session(rig, a, d, env, tag, base,
                                                  set_bytes)
        if a.peers:
            od = os.path.join(d, "origin-nginx")
            origin = Origin(od, os.path.join(d, "origin"),
                            env["GOBLIN_RIG_CLIENT_CPU"])
            out["origin_conf"] = read(origin.conf)
            for tag in a.peers:
                out["sessions"][tag] = peer_session(rig, a, d, env, tag, base,
                                                    origin, mb, sizes)
        summarize(out, targets)
        return out
    finally:
        if origin:
            origin.stop()
        if rig.env is not None:
            rig.down()
            log("rig down")


def summarize(out, targets):
    runs = {t: out["sessions"][t]["runs"] for t in targets}
    out["medians"] = {t: medians(runs[t]) for t in targets}
    out["spread"] = {t: spread(runs[t]) for t in targets}
    for t in targets:
        m = out["medians"][t]
        for dev in ("hdd", "ssd"):
            m[dev + "_read_mb_per_s"] = statistics.median(
                r["devices"][dev]["read_mb_per_s"] for r in runs[t])
            m[dev + "_read_per_served"] = statistics.median(
                r[dev + "_read_per_served"] for r in runs[t])
        m["disk_read_fraction"] = statistics.median(
            r["disk_read_fraction"] for r in runs[t])
        m["origin_requests"] = sum(r.get("origin_requests", 0) for r in runs[t])
        m["ram_peak_bytes"] = out["sessions"][t]["ram"]["max_usage_bytes"]
    out["ratios"] = {t: ratios(out["medians"], "goblin", t) for t in targets[1:]}
    out["errors"] = 0
