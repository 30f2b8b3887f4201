# usage: imported by bench/http-compare (not run on its own)
"""What both of bench/http-compare's tiers use: the binaries, logging, one
HTTP GET, waiting for a listener or the module's link, stopping a process
by pid, copying the objects out of goblin-store, cpu seconds of a process
tree.  Failures raise cmplib.Failure with a one-line reason."""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import cmplib
from cmplib import MIB, TOP, Failure
from report import fmt_us

STORE = os.environ.get("GOBLIN_STORE", os.path.join(TOP, "build", "goblin-store"))
BENCH = os.environ.get("GOBLIN_BENCH", os.path.join(TOP, "build", "goblin-bench"))
MODULE = os.path.join(TOP, "build", "ngx_http_goblin_module.so")
DEVMODEL = os.path.join(TOP, "build", "goblin-devmodel")


def log(msg):
    print("http-compare: " + msg, file=sys.stderr, flush=True)


cmplib.log = log        # goblin_bench's command lines under our name


def goblin_locations():
    return ("        location /obj/ { goblin; goblin_methods GET PUT; }\n"
            "        location = /goblin-status { goblin_status; }")


def http_get(port, path, headers=False):
    """(status, body) of one GET; with <headers>, (status, body, headers)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return (r.status, body, dict(r.getheaders())) if headers else (r.status, body)
    finally:
        c.close()


def wait_attached(port, what):
    """Until nginx's worker reports its link to goblin-store up."""
    end = time.time() + 20
    while time.time() < end:
        try:
            status, body = http_get(port, "/goblin-status")
            if status == 200 and json.loads(body)["link"] == "up":
                return json.loads(body)
        except (OSError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    raise Failure("%s: the nginx worker did not attach to goblin-store" % what)


def wait_listen(port, proc, what):
    for _ in range(400):
        if proc.poll() is not None:
            raise Failure("%s exited at start" % what)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Failure("%s did not listen on port %d" % (what, port))


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def read(path):
    with open(path) as f:
        return f.read()


def brief(r):
    return "%.1f req/s, %.1f MB/s, TTFB p50 %s p99 %s" % (
        r["qps"], r["mb_per_s"], fmt_us(r["ttfb_p50_us"]),
        fmt_us(r["ttfb_p99_us"]))


def copy_objects(port, keys, dest):
    """GETs /obj/gb:K into dest/gb:K, then flushes the files and drops them
    from the page cache, so that only their server ever caches them.
    Returns the sizes, in key order."""
    os.makedirs(dest)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sizes = []
    for k in range(keys):
        c.request("GET", "/obj/gb:%d" % k)
        r = c.getresponse()
        if r.status != 200:
            raise Failure("copying gb:%d out of goblin-store: HTTP %d"
                          % (k, r.status))
        size = pour(r, os.path.join(dest, "gb:%d" % k))
        if size != int(r.getheader("Content-Length")):
            raise Failure("gb:%d: %d bytes, Content-Length %s"
                          % (k, size, r.getheader("Content-Length")))
        sizes.append(size)
    c.close()
    return sizes


def pour(src, path):
    """Everything <src>.read() gives into the new file <path>, flushed and
    dropped from the page cache; returns its size."""
    with open(path, "wb") as f:
        while True:
            chunk = src.read(MIB)
            if not chunk:
                break
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return f.tell()


def copy_files(src, dest, keys):
    """src/gb:K to dest/gb:K, each flushed and dropped from the page cache."""
    os.makedirs(dest)
    for k in range(keys):
        with open(os.path.join(src, "gb:%d" % k), "rb") as i:
            pour(i, os.path.join(dest, "gb:%d" % k))
            os.posix_fadvise(i.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def resident_bytes(paths):
    """Page-cache bytes of <paths> now (util-linux fincore)."""
    res = subprocess.run(["fincore", "--bytes", "--raw", "--noheadings",
                          "--output", "RES"] + paths,
                         capture_output=True, text=True)
    if res.returncode:
        raise Failure("fincore: " + res.stderr.strip()[-300:])
    return sum(int(x) for x in res.stdout.split())


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system cpu seconds of <pid> and its live children (an nginx
    master and its worker), 0 for what has exited."""
    total = 0.0
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    pids += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total
