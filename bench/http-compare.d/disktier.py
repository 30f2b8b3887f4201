# usage: imported by bench/http-compare (not run on its own)
"""bench/http-compare --tier disk: in the emulated rig, goblin-store + the
module (filled by PUT), nginx serving the objects as files on the HDD, and
the caches users would put in front of large objects (nginx proxy_cache +
slice, Varnish 7, Apache Traffic Server 9), each on the HDD alone and
(-ssd) with the SSD too, within the bytes goblin-store keeps there, each
filled once through a small origin outside the server cgroup, then the
same GET runs; every run's binding resource (HDD, SSD, server or client
cpu) from its counters."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from cmplib import (KIB, MIB, TOP, Failure, Rig, Server, device_delta, goblin,
                    free_port, goblin_bench, human, memcache_stats)
from hlib import (BENCH, STORE, brief, copy_files, copy_objects, cpu_seconds,
                  goblin_locations, http_get, log, read, resident_bytes, stop,
                  wait_attached, wait_listen)
from httpcmp import (SEED, goblin_memory, medians, peer_ram_cache, ratios,
                     record, spread)
from peers import (NGINX, SLICE, SSD, base as peer_base, count_requests,
                   nginx_cache_conf, nginx_conf, origin_conf, ats_files,
                   varnish_files, varnish_split, varnish_ssd_split)
import limits

STATE = "/var/tmp/goblin-http-compare-rig"
STATIC = ("static", "static-aio")
TIMEOUT = 120           # goblin-bench --timeout, seconds
# a resource at least this busy binds a run; below it none does (a server
# that waits on one read at a time is bound by its latency, not a device)
SATURATED = 0.8
# Traffic Server's RAM cache is the others' less this (at least half of
# theirs): with 256 MiB in the 384 MiB cgroup its process grew to 380 MiB
# anon once the RAM cache filled and the cgroup's OOM killer ended it (ats-ssd,
# serving twice as fast, got there within its runs; ats was at 348 MiB and
# still growing)
ATS_RAM_LESS = 64 * MIB
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
        scpu = sum(cpu_seconds(s.proc.pid) for s in servers)
        ccpu = limits.children_cpu_seconds()
        t0 = time.time()
        res = goblin_bench(BENCH, base + ["--no-store", "--conns", str(a.conns),
                                          "--duration", a.disk_duration],
                           os.path.join(work, "%s-%d.json" % (tag, rep)),
                           rig.env["GOBLIN_RIG_CLIENT_CPU"])
        for s in servers:
            s.check_alive()
        wall = time.time() - t0
        scpu = sum(cpu_seconds(s.proc.pid) for s in servers) - scpu
        ccpu = limits.children_cpu_seconds() - ccpu
        after = rig.devices()
        r = record(res)
        r["devices"] = device_delta(before, after, res["run"]["seconds"])
        r["limits"] = run_limits(rig, res["run"], r["devices"], after, scpu, ccpu,
                                 wall)
        r["served_bytes"] = served = max(1, res["run"]["get_bytes"])
        for dev in ("hdd", "ssd"):
            r[dev + "_read_per_served"] = r["devices"][dev]["read_bytes"] / served
        r["disk_read_fraction"] = r["hdd_read_per_served"] + r["ssd_read_per_served"]
        r["cgroup"] = rig.cg_memory()
        r["origin_requests"] = origin.requests() - o if origin else 0
        out["runs"].append(r)
        log("disk %-15s rep %d: %s; read HDD %.1f MB/s, SSD %.1f MB/s, %.0f%% "
            "of the bytes served; wrote HDD %.1f MB/s; cgroup peak %s; bound "
            "by %s%s" % (
                tag, rep, brief(r), r["devices"]["hdd"]["read_mb_per_s"],
                r["devices"]["ssd"]["read_mb_per_s"], 100 * r["disk_read_fraction"],
                r["devices"]["hdd"]["write_mb_per_s"],
                human(r["cgroup"]["max_usage_bytes"]),
                limits.limit_text(r["limits"]).replace("**", ""),
                "; ORIGIN served %d requests" % r["origin_requests"]
                if r["origin_requests"] else ""))
    out["ram"] = rig.cg_memory()
    return out


def run_limits(rig, run, deltas, after, server_cpu_s, client_cpu_s, wall):
    """limits.phase_limits of one measured run: the HDD's and the SSD's
    busy fraction from the models' counters, the server's processes' cpu
    on the server cpu, goblin-bench's on the client cpu (loopback: no
    link)."""
    params = {d: {k: float(after[d][k]) for k in limits.DEVICE_PARAMS}
              for d in after}
    env = rig.env
    return limits.phase_limits(
        run, deltas, params, run["seconds"], None,
        (server_cpu_s, run["seconds"], limits.cpu_count(env["GOBLIN_RIG_SERVER_CPU"])),
        (client_cpu_s, wall, limits.cpu_count(env["GOBLIN_RIG_CLIENT_CPU"])))


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
    log("disk %-15s %s: %d keys verified, %s" % (tag, what, a.disk_keys, brief(out)))
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


def peer_config(tag, pd, port, origin, cache_dir, mb, ram_cache, sizes,
                ssd_dir=None):
    """(argv, config files as text, what the RAM budget went to, how the
    SSD is used).  With <ssd_dir> (the -ssd peers) the cache has
    mb['peer_ssd'] MiB there, goblin-store's SSD share:
      nginx-cache  each object's first 1 MiB slice in a second cache there
                   (max_size), the other slices on the HDD; `aio threads`
                   (its best: reads off the one worker's event loop)
      varnish      after malloc, the smallest objects that fit in a file
                   storage there, the rest in the file on the HDD
      ats          a second span there; with the HDD's, their sum the HDD
                   peer's cache (objects hashed over them by size)"""
    kind, ssd_mib = peer_base(tag), mb["peer_ssd"] if ssd_dir else 0
    if kind == "nginx-cache":
        conf = nginx_cache_conf(pd, port, origin.port, cache_dir, mb["peer_cache"],
                                ssd_dir, ssd_mib, aio_threads=bool(ssd_dir))
        ssd = ssd_dir and {"ssd_mib": ssd_mib, "what": "first slices",
                           "objects": len(sizes),
                           "object_bytes": sum(min(s, SLICE) for s in sizes)}
        return ([NGINX, "-p", pd + "/", "-c", conf], {"nginx.conf": read(conf)},
                {"page_cache": "all of the cgroup not used by nginx"}, ssd)
    if kind == "varnish":
        cut, count, held = varnish_split(sizes, ram_cache)
        ssd, extra = None, {}
        if ssd_dir:
            scut, scount, sheld = varnish_ssd_split(sizes, cut, ssd_mib * MIB)
            ssd = {"ssd_mib": ssd_mib, "what": "whole objects",
                   "objects_over": cut, "objects_up_to": scut,
                   "objects": scount, "object_bytes": sheld}
            extra = {"ssd_path": os.path.join(ssd_dir, "varnish.bin"),
                     "ssd_mib": ssd_mib, "ssd_cut": scut}
        vcl, argv = varnish_files(pd, port, origin.port,
                                  os.path.join(cache_dir, "varnish.bin"),
                                  mb["peer_cache"], ram_cache // MIB, cut, **extra)
        return argv, {"goblin.vcl": read(vcl)}, {
            "malloc_bytes": ram_cache, "malloc_objects_up_to": cut,
            "malloc_objects": count, "malloc_object_bytes": held,
            "file_mib": mb["peer_cache"]}, ssd
    hdd_mib = mb["peer_cache"] - ssd_mib
    ram_cache = max(ram_cache - ATS_RAM_LESS, ram_cache // 2) // MIB * MIB
    etc, argv = ats_files(pd, port, origin.port, cache_dir, hdd_mib,
                          ram_cache, ssd_dir=ssd_dir, ssd_mib=ssd_mib)
    ssd = ssd_dir and {"ssd_mib": ssd_mib, "hdd_mib": hdd_mib,
                       "what": "a span (objects hashed over spans by size)",
                       "share_of_cache": ssd_mib / mb["peer_cache"]}
    return argv, {n: read(os.path.join(etc, n)) for n in
                  ("records.config", "storage.config", "remap.config")}, {
        "ram_cache_bytes": ram_cache, "raw_cache_mib": hdd_mib}, ssd


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
                          "-f", "SMA.mem.g_bytes", "-f", "SMF.disk.g_bytes",
                          "-f", "SMF.ssd.g_bytes"],
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
    ssd_dir = None
    if tag.endswith(SSD):
        ssd_dir = os.path.join(env["GOBLIN_RIG_SSD_DIR"], tag)
        os.makedirs(ssd_dir)
    pd, port = os.path.join(d, tag), free_port()
    os.makedirs(pd, exist_ok=True)
    ram_cache = peer_ram_cache(a.disk_keys, a.server_ram)
    argv, files, budget, ssd = peer_config(tag, pd, port, origin, cache_dir, mb,
                                           ram_cache, sizes, ssd_dir)
    log("%s: %s" % (tag, " ".join(argv)))
    if ssd:
        log("%s: SSD use %s" % (tag, json.dumps(ssd)))
    srv = Server(rig, tag, argv, port, d)
    try:
        srv.start(timeout=120)
        if peer_base(tag) == "ats":
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
        for path in [cache_dir] + ([ssd_dir] if ssd_dir else []):
            res = subprocess.run(["sync", "-f", path], capture_output=True,
                                 text=True)
            if res.returncode:
                raise Failure("sync -f %s: %s" % (path, res.stderr.strip()))
        fill["flush_seconds"] = time.time() - t0
        fill["cache_bytes"] = {"hdd": du(cache_dir)}
        if ssd_dir:
            fill["cache_bytes"]["ssd"] = du(ssd_dir)
        log("%s: the fill's writes flushed in %.1f s; on disk %s" % (
            tag, fill["flush_seconds"], ", ".join(
                "%s %s" % (k.upper(), human(v))
                for k, v in fill["cache_bytes"].items())))
        s = measured(rig, b, a, tag, d, [srv], origin)
        s.update({"argv": argv, "config": files, "ram_budget": budget, "fill": fill})
        if ssd:
            s["ssd_use"] = ssd
        status, body, hdrs = http_get(port, "/obj/gb:0", headers=True)
        s["spot_check"] = {"status": status, "bytes": len(body), "headers": {
            k: v for k, v in hdrs.items() if k in ("X-Cache", "Via", "Age")}}
        if peer_base(tag) == "varnish":
            s["varnishstat"] = varnish_counters(pd)
        srv.check_alive()
        return s
    finally:
        srv.stop()
        shutil.rmtree(cache_dir, ignore_errors=True)
        if ssd_dir:
            shutil.rmtree(ssd_dir, ignore_errors=True)


def du(path):
    """Bytes allocated under <path> (a preallocated cache file: its size)."""
    res = subprocess.run(["du", "-s", "-B1", path], capture_output=True, text=True)
    return int(res.stdout.split()[0]) if res.returncode == 0 else None


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
        # the -ssd peers' SSD: the bytes goblin-store holds there (heads'
        # copies and prefixes), not its pool's size, which it leaves part
        # free; whole MiB
        mb["peer_ssd"] = -(-out["sessions"]["goblin"]["stats_goblin"][
            "ssd_used_bytes"] // MIB)
        log("goblin: %s on the SSD, %s on the HDD: the -ssd peers get %d MiB "
            "of SSD" % (human(out["sessions"]["goblin"]["stats_goblin"]["ssd_used_bytes"]),
                        human(out["sessions"]["goblin"]["stats_goblin"]["hdd_used_bytes"]),
                        mb["peer_ssd"]))
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
        m["busy"] = {k: statistics.median(r["limits"][k]["busy"] for r in runs[t])
                     for k, _ in limits.NAMES if runs[t][0]["limits"].get(k)}
        key = max(m["busy"], key=m["busy"].get)
        m["binding"], m["binding_busy"] = dict(limits.NAMES)[key], m["busy"][key]
        m["saturated"] = m["binding_busy"] >= SATURATED
        m["ram_peak_bytes"] = out["sessions"][t]["ram"]["max_usage_bytes"]
    out["ratios"] = {t: ratios(out["medians"], "goblin", t) for t in targets[1:]}
    out["errors"] = 0
