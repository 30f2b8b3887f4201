# usage: imported by bench/http-compare and bench/http-compare.d/selftest
"""The HTTP servers bench/http-compare runs, as configuration files and
command lines: nginx (with the goblin module, static files, or proxy_cache
+ slice), Varnish 7 and Apache Traffic Server 9 in front of a small nginx
origin, plus the origin itself.  Nothing here starts a process; every
function writes files under the directory it is given and returns paths or
argv lists, so the self-test can check them without a rig."""
import os

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
VARNISHD = os.environ.get("VARNISHD", "/usr/sbin/varnishd")
TRAFFIC_SERVER = os.environ.get("TRAFFIC_SERVER", "/usr/bin/traffic_server")
# caches in front of the origin: each on the HDD only, and with "-ssd" in
# its best configuration with the SSD as well, within goblin-store's bytes
# there (bench/http-compare --help)
SSD = "-ssd"
BASES = ("nginx-cache", "varnish", "ats")
PEERS = tuple(t for b in BASES for t in (b, b + SSD))
SLICE = 1 << 20                                # nginx `slice` for large objects


def base(tag):
    """The server a peer name runs: 'varnish' for varnish and varnish-ssd."""
    return tag[:-len(SSD)] if tag.endswith(SSD) else tag


def nginx_conf(d, port, locations, extra="", module=None, log=None):
    """Writes d/nginx.conf: one worker, sendfile, logs under d; loads the
    goblin module when <module> is its path; <log> names an access-log
    format (`main` or `cache`) written to d/logs/access.log, else none."""
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    access = ("    log_format main '$request $status $body_bytes_sent';\n"
              "    log_format cache '$request $status $upstream_cache_status';\n"
              "    access_log %s/logs/access.log %s;" % (d, log)
              if log else "    access_log off;")
    with open(conf, "w") as f:
        f.write("""daemon off;
master_process on;
worker_processes 1;
error_log %s/logs/error.log warn;
pid %s/logs/nginx.pid;
%s
%s
events { worker_connections 1024; }
http {
%s
    sendfile on;
    tcp_nopush on;
    default_type application/octet-stream;
%s
    server {
        listen 127.0.0.1:%d reuseport;
        keepalive_requests 1000000;
        client_max_body_size 64m;
%s
    }
}
""" % (d, d, "user root;" if os.geteuid() == 0 else "",
       "load_module %s;" % module if module else "", access, extra, port,
       locations))
    return conf


def origin_conf(d, port, root):
    """The origin: nginx serving <root>/gb:K as /obj/gb:K (Range included,
    for nginx's slices), each request one line of d/logs/access.log."""
    return nginx_conf(d, port, "        location /obj/ { alias %s/; }" % root,
                      log="main")


def count_requests(d):
    """Requests the origin (or a logging nginx) has logged so far."""
    try:
        with open(os.path.join(d, "logs", "access.log"), "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def nginx_cache_conf(d, port, origin_port, cache_dir, max_size_mib,
                     ssd_dir=None, ssd_max_mib=0, aio_threads=False):
    """nginx proxy_cache in front of the origin: the cache on <cache_dir>
    (the emulated HDD), each object cached as 1 MiB slices (`slice`, the
    documented way to cache large objects: a hit reads only the slices a
    response needs, a miss fetches 1 MiB ranges); X-Cache says HIT/MISS.
    With <ssd_dir>, each object's first slice goes to a second cache there
    (`max_size=<ssd_max_mib>m`, the SSD's bytes), the later ones to
    <cache_dir>, as goblin-store keeps an object's start on the SSD and its
    tail on the HDD: `proxy_cache` takes the zone from a map of
    $slice_range, `volatile` (the slices' subrequests share the main
    request's variables: a cached map value sends every slice to the
    first one's zone).  <aio_threads>: `aio threads`, the cache files read
    off the event loop (nginx's one worker otherwise waits on each read)."""
    extra = """    upstream origin { server 127.0.0.1:%d; keepalive 32; }
    proxy_cache_path %s levels=1:2 keys_zone=goblin:16m max_size=%dm
                     inactive=365d use_temp_path=off;""" % (
        origin_port, cache_dir, max_size_mib)
    zone = "goblin"
    if ssd_dir:
        extra += """
    proxy_cache_path %s levels=1:2 keys_zone=goblin_ssd:16m max_size=%dm
                     inactive=365d use_temp_path=off;
    map $slice_range $goblin_zone {
        volatile;
        "bytes=0-%d" goblin_ssd;
        default goblin;
    }""" % (ssd_dir, ssd_max_mib, SLICE - 1)
        zone = "$goblin_zone"
    loc = """        location /obj/ {
            slice %d;%s
            proxy_cache %s;
            proxy_cache_key $uri$slice_range;
            proxy_set_header Range $slice_range;
            proxy_cache_valid 200 206 365d;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://origin;
            add_header X-Cache $upstream_cache_status;
        }""" % (SLICE, "\n            aio threads;" if aio_threads else "", zone)
    return nginx_conf(d, port, loc, extra)


def varnish_split(sizes, malloc_bytes):
    """The largest object size T such that every object of at most T bytes
    fits in <malloc_bytes> (with 5% for Varnish's own per-object overhead):
    those live in malloc, the rest in the file storage.  Returns (T, count,
    bytes) of what malloc holds."""
    total, count, cut = 0, 0, 0
    for s in sorted(sizes):
        if (total + s) * 1.05 > malloc_bytes:
            break
        total, count, cut = total + s, count + 1, s
    return cut, count, total


def varnish_ssd_split(sizes, malloc_cut, ssd_bytes):
    """Of the objects larger than <malloc_cut> (those not in malloc), the
    smallest that fit in <ssd_bytes> of `-s file` on the SSD (5% slack, as
    varnish_split): the most objects, so the most requests, kept off the
    HDD's seeks (Varnish stores an object whole in one storage).  Returns
    (T, count, bytes): objects of more than <malloc_cut> and at most T
    bytes go to the SSD."""
    return varnish_split([s for s in sizes if s > malloc_cut], ssd_bytes)


VARNISH_TTL = "    set beresp.ttl = 365d;\n    set beresp.grace = 0s;\n"


def varnish_files(d, port, origin_port, file_path, file_mib, malloc_mib,
                  malloc_cut, origin_host="127.0.0.1", ttl_vcl=VARNISH_TTL,
                  ssd_path=None, ssd_mib=0, ssd_cut=0):
    """Varnish 7: objects of at most <malloc_cut> bytes in `-s mem=malloc`,
    the rest in `-s disk=file` on <file_path> (the emulated HDD; mmap'ed, so
    its resident pages are page cache in the server cgroup), advised
    `sequential`: the default `random` makes every page fault one 4 KiB
    read, a seek each on the HDD; TTL a year, no grace (<ttl_vcl>: other
    vcl_backend_response lines instead); X-Cache says HIT/MISS.  Runs as root in the foreground (-F, -j
    none), its work dir (-n) and shared-memory log under <d>.  With
    <ssd_path>, a third storage `-s ssd=file` of <ssd_mib> there (the
    emulated SSD) takes the objects larger than <malloc_cut> and at most
    <ssd_cut> bytes."""
    os.makedirs(d, exist_ok=True)
    vcl = os.path.join(d, "goblin.vcl")
    with open(vcl, "w") as f:
        f.write("""vcl 4.1;
import std;

backend origin { .host = "%s"; .port = "%d"; }

sub vcl_backend_response {
%s    if (std.integer(beresp.http.Content-Length, 0) <= %d) {
        set beresp.storage = storage.mem;
%s    } else {
        set beresp.storage = storage.disk;
    }
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
}
""" % (origin_host, origin_port, ttl_vcl, malloc_cut,
       "    } elsif (std.integer(beresp.http.Content-Length, 0) <= %d) {\n"
       "        set beresp.storage = storage.ssd;\n" % ssd_cut if ssd_path else ""))
    argv = [VARNISHD, "-F", "-j", "none", "-n", os.path.join(d, "work"),
            "-a", "127.0.0.1:%d" % port, "-f", vcl,
            "-s", "mem=malloc,%dM" % malloc_mib,
            "-s", "disk=file,%s,%dM,4096,sequential" % (file_path, file_mib)]
    if ssd_path:
        argv += ["-s", "ssd=file,%s,%dM,4096,sequential" % (ssd_path, ssd_mib)]
    argv += ["-p", "vsl_space=16M", "-p", "thread_pools=1",
             "-p", "thread_pool_min=32"]
    return vcl, argv


ATS_EMPTY = ("hosting.config", "volume.config", "cache.config", "parent.config",
             "sni.yaml", "socks.config", "splitdns.config",
             "ssl_multicert.config", "strategies.yaml", "plugin.config",
             "logging.yaml")


def ats_files(d, port, origin_port, cache_dir, cache_mib, ram_cache_bytes,
              agg_backlog=64 << 20, origin_host="127.0.0.1", extra_records=(),
              ssd_dir=None, ssd_mib=0):
    """Apache Traffic Server 9 in a runroot of its own under <d> (config,
    runtime and log dirs; no system service, no traffic_manager): reverse
    proxy to the origin, its raw cache a <cache_mib> file in <cache_dir>
    (the emulated HDD), RAM cache <ram_cache_bytes>, one event thread (the
    server has one cpu), every response cacheable (the origin sends no
    Cache-Control), Via says hit or miss.  `#-1` keeps it root.
    <extra_records>: (name, type, value) records added or replacing.
    With <ssd_dir>, a second span of <ssd_mib> there (the emulated SSD):
    Traffic Server has no tiers between its disks, it spreads objects over
    its spans' stripes by a hash weighted by their sizes, each object whole
    on one."""
    etc = os.path.join(d, "etc")
    for sub in ("etc", "run", "log"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    os.makedirs(cache_dir, exist_ok=True)
    if ssd_dir:
        os.makedirs(ssd_dir, exist_ok=True)
    with open(os.path.join(d, "runroot.yaml"), "w") as f:
        for k, v in (("prefix", "/usr"), ("exec_prefix", "/usr"),
                     ("bindir", "/usr/bin"), ("sbindir", "/usr/sbin"),
                     ("sysconfdir", etc), ("datadir", os.path.join(d, "run")),
                     ("includedir", "/usr/include"),
                     ("libdir", "/usr/lib/trafficserver"),
                     ("libexecdir", "/usr/lib/trafficserver/modules"),
                     ("localstatedir", os.path.join(d, "run")),
                     ("runtimedir", os.path.join(d, "run")),
                     ("logdir", os.path.join(d, "log")),
                     ("cachedir", cache_dir)):
            f.write("%s: %s\n" % (k, v))
    records = [("proxy.config.http.server_ports", "STRING", str(port)),
               ("proxy.config.admin.user_id", "STRING", "#-1"),
               ("proxy.config.exec_thread.autoconfig", "INT", "0"),
               ("proxy.config.exec_thread.limit", "INT", "1"),
               ("proxy.config.accept_threads", "INT", "0"),
               ("proxy.config.task_threads", "INT", "1"),
               ("proxy.config.cache.threads_per_disk", "INT", "8"),
               ("proxy.config.cache.ram_cache.size", "INT", str(ram_cache_bytes)),
               ("proxy.config.cache.ram_cache_cutoff", "INT", str(8 << 20)),
               ("proxy.config.cache.agg_write_backlog", "INT", str(agg_backlog)),
               ("proxy.config.http.cache.required_headers", "INT", "0"),
               ("proxy.config.http.insert_response_via_str", "INT", "2"),
               ("proxy.config.http.keep_alive_enabled_out", "INT", "1"),
               ("proxy.config.url_remap.remap_required", "INT", "1"),
               ("proxy.config.reverse_proxy.enabled", "INT", "1"),
               ("proxy.config.net.connections_throttle", "INT", "10000"),
               ("proxy.config.log.logging_enabled", "INT", "0"),
               ("proxy.config.diags.logfile.filename", "STRING", "diags.log")]
    extra = {r[0]: r for r in extra_records}
    records = [extra.pop(r[0], r) for r in records] + list(extra.values())
    with open(os.path.join(etc, "records.config"), "w") as f:
        for name, kind, value in records:
            f.write("CONFIG %s %s %s\n" % (name, kind, value))
    with open(os.path.join(etc, "remap.config"), "w") as f:
        f.write("map / http://%s:%d/\n" % (origin_host, origin_port))
    with open(os.path.join(etc, "storage.config"), "w") as f:
        if ssd_dir:
            f.write("%s %dM\n" % (ssd_dir, ssd_mib))
        f.write("%s %dM\n" % (cache_dir, cache_mib))
    with open(os.path.join(etc, "ip_allow.yaml"), "w") as f:
        f.write("ip_allow:\n"
                "  - apply: in\n    ip_addrs: 127.0.0.0/8\n    action: allow\n"
                "  - apply: out\n    ip_addrs: [127.0.0.0/8, %s]\n"
                "    action: allow\n" % origin_host)
    for name in ATS_EMPTY:
        open(os.path.join(etc, name), "w").close()
    argv = [TRAFFIC_SERVER, "--run-root=%s" % d]
    return etc, argv
