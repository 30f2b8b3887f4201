# usage: imported by bench/cluster and bench/cluster.d/* (not run on its own)
"""Pieces of bench/cluster: the objects (deterministic bytes from the key,
so every client verifies every body without a table), the nodes (a
goblin-store and an nginx with the module, each on its own loopback
address, the same ports on each as t/daemon/nodes.test runs them), the
front nginx (ngx_goblin_module/nodes.conf, the shipped example, with the
bench's addresses and ports), the origin nginx of cache mode, and the
processes' CPU and the machine's.  Everything started here is stopped by
pid through t/lib/goblin.py's cleanup registry, also on failure or a
signal."""
import http.client
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "t", "lib"))
import goblin  # noqa: E402

NGINX = os.environ.get("TEST_NGINX_BINARY") or "/usr/sbin/nginx"
MODULE = os.environ.get("GOBLIN_NGX_MODULE") or os.path.join(
    TOP, "build", "ngx_http_goblin_module.so")
EXAMPLE = os.path.join(TOP, "ngx_goblin_module", "nodes.conf")
HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
KIB, MIB = 1 << 10, 1 << 20
MIN_SIZE, MAX_SIZE = 256 * KIB, 1 * MIB      # object sizes, uniform
HEADER = 64


class Failure(Exception):
    """Something in the run misbehaved: the run stops with this reason."""


def log(msg):
    print("cluster: " + msg, file=sys.stderr, flush=True)


# ---- the objects ----
_BASE = {}


def base(seed):
    """2 MiB of seeded random bytes every body is a slice of."""
    if seed not in _BASE:
        _BASE[seed] = random.Random(seed).randbytes(2 * MIB + MAX_SIZE)
    return _BASE[seed]


def key_name(i):
    return "c%06d" % i


def size_of(i, seed):
    return random.Random(seed * 1000003 + i).randrange(MIN_SIZE, MAX_SIZE + 1)


def body_of(i, seed):
    """Object <i>'s bytes: a header naming it, then a slice of base()."""
    size = size_of(i, seed)
    head = ("%s %d " % (key_name(i), size)).encode().ljust(HEADER, b".")
    off = (i * 4099 * 64) % (2 * MIB)
    return head + base(seed)[off:off + size - HEADER]


def write_origin(root, n, seed):
    """The origin's files <root>/o/<key> for objects 0..n-1; their bytes."""
    d = os.path.join(root, "o")
    os.makedirs(d, exist_ok=True)
    total = 0
    for i in range(n):
        b = body_of(i, seed)
        with open(os.path.join(d, key_name(i)), "wb") as f:
            f.write(b)
        total += len(b)
    return total


# ---- processes ----
def free_port_on(hosts):
    """A TCP port nobody listens on at any of <hosts> (nodes.test's)."""
    for _ in range(50):
        port = goblin.free_port()
        socks = []
        try:
            for h in hosts:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((h, port))
                socks.append(s)
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise Failure("no port free on all of %s" % hosts)


def proc_cpu(pid):
    """utime + stime of <pid> in seconds (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """(busy, total) jiffies of all cpus from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


class Proc:
    """<argv> in its own session, output appended to <logpath>; stopped by
    pid at exit (whichever process runs now)."""

    def __init__(self, argv, logpath, what):
        self.argv, self.logpath, self.what = argv, logpath, what
        self.p = None
        goblin.cleanup().add(what, self.stop)

    def start(self, argv=None):
        with open(self.logpath, "ab") as out:
            self.p = subprocess.Popen(argv or self.argv, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def pid(self):
        return self.p.pid if self.alive() else None

    def stop(self):
        if self.alive():
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def kill9(self):
        if self.alive():
            self.p.kill()
        if self.p is not None:
            self.p.wait()

    def tail(self, n=3):
        try:
            with open(self.logpath, errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-n:])
        except OSError:
            return ""


def http_status(host, port, path, timeout=5):
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except (OSError, http.client.HTTPException):
        return None


def wait_for(fn, timeout=30.0, what="", proc=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if fn():
            return True
        if proc is not None and not proc.alive():
            raise Failure("%s exited: %s" % (proc.what, proc.tail()))
        time.sleep(0.05)
    if fn():
        return True
    raise Failure("%s: not within %.0f s" % (what, timeout))


def nginx_conf(path, dirname, body, workers=None):
    """An nginx.conf of our own (no master: one process, stopped by pid)."""
    with open(path, "w") as f:
        f.write("daemon off;\nmaster_process off;\npid %s/nginx.pid;\n"
                "error_log %s/error.log notice;\nload_module %s;\n"
                "events { worker_connections 4096; }\n"
                "http {\n    access_log off;\n"
                "    client_body_temp_path %s/body;\n"
                "    proxy_temp_path %s/proxy;\n%s}\n"
                % (dirname, dirname, MODULE, dirname, dirname, body))
    for sub in ("body", "proxy"):
        os.makedirs(os.path.join(dirname, sub), exist_ok=True)


def in_cgroup(argv, cgroup_dir=None, cpu=None):
    """<argv> run inside memory cgroup <cgroup_dir> (a rig's) and pinned to
    <cpu> when given: the shell moves itself, then execs."""
    pre = []
    if cgroup_dir:
        pre = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"',
               os.path.join(cgroup_dir, "cgroup.procs")]
    if cpu is not None:
        pre += ["taskset", "-c", str(cpu)]
    return pre + argv


class Node:
    """One node: goblin-store (memcache on <host>:<mc_port>) and an nginx
    with the module on <host>:<http_port>: `location / { goblin; }` (a
    store) and, with <origin_port>, /o/ in cache mode filling from the
    origin, X-Cache: $goblin_cache_status."""

    def __init__(self, idx, host, mc_port, http_port, work, ssd, hdd,
                 origin_port=None, cgroup_dir=None, cpu=None,
                 memory="32M", store_flags=()):
        self.idx, self.host = idx, host
        self.mc_port, self.http_port = mc_port, http_port
        self.d = os.path.join(work, "node%d" % idx)
        os.makedirs(self.d, exist_ok=True)
        self.sock = os.path.join(self.d, "goblin.sock")
        self.ssd, self.hdd = ssd, hdd
        self.cgroup_dir, self.cpu = cgroup_dir, cpu
        self.memory, self.store_flags = memory, list(store_flags)
        self.conf = os.path.join(self.d, "nginx.conf")
        origin = ""
        if origin_port:
            origin = ("        location /o/ {\n            goblin;\n"
                      "            goblin_cache on;\n"
                      "            goblin_origin @fill;\n"
                      "            add_header X-Cache $goblin_cache_status always;\n"
                      "        }\n"
                      "        location @fill {\n"
                      "            proxy_pass http://127.0.0.1:%d;\n"
                      "            proxy_http_version 1.1;\n"
                      "            proxy_set_header Connection \"\";\n"
                      "        }\n" % origin_port)
        nginx_conf(self.conf, self.d,
                   "    goblin_storaged unix:%s;\n"
                   "    server {\n        listen %s:%d;\n"
                   "        location / { goblin; }\n%s    }\n"
                   % (self.sock, host, http_port, origin))
        self.store = Proc(None, os.path.join(self.d, "store.log"),
                          "goblin-store " + host)
        self.nginx = Proc(in_cgroup([NGINX, "-p", self.d + "/", "-c", self.conf],
                                    cgroup_dir),
                          os.path.join(self.d, "nginx.log"), "nginx " + host)

    def store_argv(self, fresh):
        flags = ["--cores", "1", "--ssd-size", "1G", "--hdd-size", "3G"]
        flags += self.store_flags + (["--fresh"] if fresh else [])
        return in_cgroup(goblin.store_argv(
            self.mc_port, *flags, memory=self.memory, sub_memory="8M",
            mlock=False, http=True, sock=self.sock, listen=self.host,
            ssd=[self.ssd], hdd=[self.hdd]), self.cgroup_dir, self.cpu)

    def start(self, fresh=False):
        self.store.start(self.store_argv(fresh))
        wait_for(lambda: os.path.exists(self.sock) and self.mc_up(), 60,
                 "goblin-store on %s" % self.host, self.store)
        self.nginx.start()
        # 404 for a missing key once its worker is attached (503 before)
        wait_for(lambda: http_status(self.host, self.http_port, "/probe") == 404,
                 30, "the nginx of node %s" % self.host, self.nginx)

    def mc_up(self):
        try:
            socket.create_connection((self.host, self.mc_port), 0.2).close()
            return True
        except OSError:
            return False

    def kill9(self):
        """kill -9 of the store and its nginx, at once."""
        for p in (self.store, self.nginx):
            if p.alive():
                os.kill(p.p.pid, signal.SIGKILL)
        self.store.kill9()
        self.nginx.kill9()

    def stop(self):
        self.nginx.stop()
        self.store.stop()

    def cpu_seconds(self):
        return sum(proc_cpu(p.p.pid) for p in (self.store, self.nginx)
                   if p.p is not None)

    def pids(self):
        return [p.pid() for p in (self.store, self.nginx) if p.alive()]


def front_text(hosts, mc_port, http_port, front_port, fail_timeout=None):
    """ngx_goblin_module/nodes.conf for <hosts> (its 10.0.0.N:8080, the
    first len(hosts) of them; the others' server lines left out), the
    memcache port the clients name them by, and the front's port."""
    with open(EXAMPLE) as f:
        text = f.read()
    out = []
    for line in text.splitlines(keepends=True):
        m = re.search(r"10\.0\.0\.(\d+):8080", line)
        if m:
            n = int(m.group(1))
            if n > len(hosts):
                continue
            line = line.replace(m.group(0), "%s:%d" % (hosts[n - 1], http_port))
            if fail_timeout:
                line = re.sub(r"fail_timeout=\w+", "fail_timeout=%s" % fail_timeout, line)
        out.append(line)
    text = "".join(out)
    return (text.replace("port=11211", "port=%d" % mc_port)
            .replace("listen 80;", "listen 127.0.0.1:%d;" % front_port))


def shipped_fail_timeout():
    """The fail_timeout nodes.conf's server lines ship with."""
    with open(EXAMPLE) as f:
        m = re.search(r"fail_timeout=(\w+)", f.read())
    return m.group(1) if m else None


class Front:
    """The front nginx from nodes.conf over some of the nodes."""

    def __init__(self, work, mc_port, http_port, port):
        self.d = os.path.join(work, "front")
        os.makedirs(self.d, exist_ok=True)
        self.mc_port, self.http_port, self.port = mc_port, http_port, port
        self.conf = os.path.join(self.d, "nginx.conf")
        self.proc = Proc([NGINX, "-p", self.d + "/", "-c", self.conf],
                         os.path.join(self.d, "nginx.log"), "nginx front")

    def start(self, hosts, fail_timeout=None):
        self.proc.stop()
        nginx_conf(self.conf, self.d, front_text(hosts, self.mc_port, self.http_port,
                                                 self.port, fail_timeout))
        self.proc.start()
        wait_for(lambda: http_status("127.0.0.1", self.port, "/probe") == 404,
                 30, "the front nginx", self.proc)

    def cpu_seconds(self):
        return proc_cpu(self.proc.p.pid) if self.proc.p is not None else 0.0


class Origin:
    """nginx serving <root>/o/<key> with Cache-Control: max-age=3600 and
    an access log (its lines count the fills)."""

    def __init__(self, work, root, port):
        self.d = os.path.join(work, "origin")
        os.makedirs(self.d, exist_ok=True)
        self.port, self.root = port, root
        self.access = os.path.join(self.d, "access.log")
        conf = os.path.join(self.d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("daemon off;\nmaster_process off;\npid %s/nginx.pid;\n"
                    "error_log %s/error.log notice;\n"
                    "events { worker_connections 4096; }\n"
                    "http {\n    access_log %s;\n"
                    "    client_body_temp_path %s/body;\n"
                    "    proxy_temp_path %s/proxy;\n"
                    "    server {\n        listen 127.0.0.1:%d;\n"
                    "        root %s;\n        location /o/ { expires 1h; }\n"
                    "    }\n}\n" % (self.d, self.d, self.access, self.d, self.d,
                                    port, root))
        for sub in ("body", "proxy"):
            os.makedirs(os.path.join(self.d, sub), exist_ok=True)
        self.proc = Proc([NGINX, "-p", self.d + "/", "-c", conf],
                         os.path.join(self.d, "nginx.log"), "nginx origin")

    def start(self):
        self.proc.start()
        wait_for(lambda: http_status("127.0.0.1", self.port, "/o/none") == 404,
                 30, "the origin nginx", self.proc)

    def requests(self):
        """GETs of /o/ the origin logged so far."""
        return sum(self.by_status().values())

    def by_status(self):
        """{status: GETs of /o/} the origin logged so far: 200 a fill with
        the body, 304 a revalidation (the node keeps its bytes)."""
        out = {}
        try:
            with open(self.access, "rb") as f:
                for line in f:
                    if b'"GET /o/' not in line:
                        continue
                    st = line.split(b'" ', 1)[1].split(b" ", 1)[0].decode()
                    out[st] = out.get(st, 0) + 1
        except (OSError, IndexError):
            pass
        return out

    def cpu_seconds(self):
        return proc_cpu(self.proc.p.pid) if self.proc.p is not None else 0.0
