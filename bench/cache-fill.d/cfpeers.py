# usage: imported by bench/cache-fill and its selftest (not run on its own)
"""The caches bench/cache-fill compares, as configuration files and command
lines, each filling itself from the origin across the rig's shaped link:
goblin-store in cache mode (nginx + the module), nginx proxy_cache (alone,
+ proxy_cache_lock, + slice 1m), Varnish 7 and Traffic Server 9 (the last
two through bench/http-compare.d/peers.py).  Nothing here starts a process.
Every cache keeps what the origin's Cache-Control says and serves a stale
copy while the origin is down (stale-if-error or its own equivalent)."""
import os

from peers import NGINX, ats_files, nginx_conf, varnish_files, varnish_split

PEERS = ("goblin", "nginx-cache", "nginx-cache-lock", "nginx-slice", "varnish",
         "ats")
SLICE = 1 << 20

FILL_LOC = """        location @fill {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }"""


def upstream(origin_host, origin_port):
    return "    upstream origin { server %s:%d; keepalive 32; }\n" % (
        origin_host, origin_port)


def goblin_conf(d, port, origin_host, origin_port, sock, module, workers=1):
    """nginx + the module in cache mode, README's complete cache: /obj/
    fills through @fill; one worker unless <workers> (one fill per key and
    worker)."""
    extra = upstream(origin_host, origin_port) + (
        "    goblin_storaged unix:%s;\n    goblin_max_object 128m;" % sock)
    loc = """        location /obj/ {
            goblin;
            goblin_cache on;
            goblin_origin @fill;
            add_header X-Cache $goblin_cache_status;
        }
%s
        location = /goblin-status { goblin_status; }""" % FILL_LOC
    conf = nginx_conf(d, port, loc, extra, module=module)
    if workers != 1:
        with open(conf) as f:
            text = f.read().replace("worker_processes 1;",
                                    "worker_processes %d;" % workers)
        with open(conf, "w") as f:
            f.write(text)
    return conf


def nginx_cache_conf(d, port, origin_host, origin_port, cache_dir, max_mib,
                     variant):
    """nginx proxy_cache on <cache_dir>: <variant> nginx-cache (as it
    comes), nginx-cache-lock (+ proxy_cache_lock: one request fills, the
    others wait for the whole response) or nginx-slice (+ slice 1m and the
    lock: 1 MiB ranges cached and fetched on their own).  Freshness from
    the origin's Cache-Control; stale-if-error is honoured by nginx itself,
    and proxy_cache_use_stale error timeout covers a refused connection."""
    extra = upstream(origin_host, origin_port) + (
        "    proxy_cache_path %s levels=1:2 keys_zone=cf:16m max_size=%dm\n"
        "                     inactive=365d use_temp_path=off;" % (cache_dir, max_mib))
    lines = ["proxy_cache cf;", "proxy_cache_use_stale error timeout;",
             "proxy_http_version 1.1;", 'proxy_set_header Connection "";',
             "proxy_pass http://origin;", "add_header X-Cache $upstream_cache_status;"]
    if variant in ("nginx-cache-lock", "nginx-slice"):
        lines.insert(1, "proxy_cache_lock on;")
    if variant == "nginx-slice":
        lines[:0] = ["slice %d;" % SLICE, "proxy_cache_key $uri$slice_range;",
                     "proxy_set_header Range $slice_range;",
                     "proxy_cache_valid 200 206 1h;"]
    loc = "        location /obj/ {\n%s\n        }" % "\n".join(
        "            " + ln for ln in lines)
    return nginx_conf(d, port, loc, extra)


# Varnish: TTL from Cache-Control (its default); stale-if-error has no
# built-in support in Varnish 7, so its value becomes grace, the documented
# way to keep serving an object while the backend is sick.
VARNISH_TTL = r"""    if (beresp.http.Cache-Control ~ "stale-if-error=[0-9]+") {
        set beresp.grace = std.duration(regsub(beresp.http.Cache-Control,
            ".*stale-if-error=([0-9]+).*", "\1s"), 0s);
    }
    set beresp.do_stream = true;
"""


# Traffic Server: read-while-writer and the thundering-herd settings of its
# admin guide ("Reducing Origin Server Requests"), and stale on a failed
# revalidation (negative revalidating).
ATS_RECORDS = (
    ("proxy.config.cache.enable_read_while_writer", "INT", "1"),
    ("proxy.config.http.background_fill_active_timeout", "INT", "0"),
    ("proxy.config.http.background_fill_completed_threshold", "FLOAT", "0.0"),
    ("proxy.config.cache.max_doc_size", "INT", "0"),
    ("proxy.config.http.cache.open_read_retry_time", "INT", "10"),
    ("proxy.config.http.cache.max_open_read_retries", "INT", "5"),
    ("proxy.config.http.cache.open_write_fail_action", "INT", "1"),
    ("proxy.config.http.negative_revalidating_enabled", "INT", "1"),
    ("proxy.config.http.negative_revalidating_lifetime", "INT", "600"),
)


def peer_argv(tag, pd, port, origin, cache_dir, ram_cache, cache_mib,
              sizes=None):
    """(argv, {config name: path}, what the RAM budget went to) of one
    non-goblin peer; <origin>: (host, port).  Varnish keeps in malloc the
    smallest of <sizes> that fit (peers.varnish_split, as http-compare's
    disk tier), the rest in its file; all of them without <sizes>."""
    host, oport = origin
    if tag.startswith("nginx"):
        conf = nginx_cache_conf(pd, port, host, oport, cache_dir, cache_mib, tag)
        return ([NGINX, "-p", pd + "/", "-c", conf], {"nginx.conf": conf},
                {"page_cache": "all of the cgroup not used by nginx"})
    if tag == "varnish":
        cut = varnish_split(sizes, ram_cache)[0] if sizes else ram_cache
        vcl, argv = varnish_files(pd, port, oport,
                                  os.path.join(cache_dir, "varnish.bin"),
                                  cache_mib, ram_cache >> 20, cut,
                                  origin_host=host, ttl_vcl=VARNISH_TTL)
        return argv, {"goblin.vcl": vcl}, {"malloc_bytes": ram_cache,
                                          "malloc_objects_up_to": cut,
                                          "file_mib": cache_mib}
    if tag == "ats":
        etc, argv = ats_files(pd, port, oport, cache_dir, cache_mib, ram_cache,
                              origin_host=host, extra_records=ATS_RECORDS)
        return argv, {n: os.path.join(etc, n) for n in
                      ("records.config", "storage.config", "remap.config")}, {
            "ram_cache_bytes": ram_cache, "raw_cache_mib": cache_mib}
    raise ValueError("unknown peer %r" % tag)


def origin_conf(d, port, host, root, rate, name):
    """The origin: nginx in the client's namespace serving <root>/<name>
    under any /obj/<key> at <rate> bytes/s per response (limit_rate), with
    Cache-Control max-age=3600 (max-age=2, stale-if-error=600 under
    /obj/stale-), Range included; /obj/gb:K are files of their own
    (<root>/obj/gb:K, PUT by goblin-bench for scenario 5); each request one line of
    d/logs/access.log: status, bytes sent, Range; /status is
    stub_status."""
    loc = """        location /obj/ {
            root %s;
            try_files /%s =404;
            limit_rate %d;
            add_header Cache-Control "max-age=3600";
        }
        location /obj/stale- {
            root %s;
            try_files /%s =404;
            limit_rate %d;
            add_header Cache-Control "max-age=2, stale-if-error=600";
        }
        location /obj/gb: {
            root %s;
            dav_methods PUT;
            create_full_put_path on;
            client_body_temp_path %s/put-tmp;
            limit_rate %d;
            add_header Cache-Control "max-age=3600";
        }
        location = /status { stub_status; access_log off; }""" % (
        root, name, rate, root, name, rate, root, root, rate)
    conf = nginx_conf(d, port, loc)
    with open(conf) as f:
        text = f.read()
    text = text.replace("access_log off;", "log_format o '$request_uri $status "
                        "$body_bytes_sent \"$http_range\"';\n"
                        "    access_log %s/logs/access.log o;" % d, 1)
    text = text.replace("listen 127.0.0.1:", "listen %s:" % host)
    with open(conf, "w") as f:
        f.write(text)
    return conf


def origin_log(d):
    """[(uri, status, bytes, range)] of every request the origin logged."""
    out = []
    try:
        with open(os.path.join(d, "logs", "access.log")) as f:
            for line in f:
                uri, status, sent, rng = line.rstrip("\n").split(" ", 3)
                out.append((uri, int(status), int(sent), rng.strip('"')))
    except FileNotFoundError:
        pass
    return out
