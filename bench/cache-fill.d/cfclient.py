# usage: imported by bench/cache-fill (not run on its own)
"""bench/cache-fill's HTTP clients: curl, one process per request, its body
piped into sha256sum (C speed on both, so 64 readers of 64 MiB are not
slowed by this script), pinned to the client cpu; curl's own clock gives
the first byte and the completion of each.  Also the origin's request log
and whether the origin is still sending."""
import os
import signal
import subprocess
import time
import urllib.request

CURL = os.environ.get("CURL", "/usr/bin/curl")
FMT = "%{stderr}CF %{http_code} %{size_download} %{time_starttransfer} " \
      "%{time_total} %{exitcode}\\n"


def curl_cmd(url, cpu, rate=None, rng=None, timeout=300):
    """A shell line: curl's body through sha256sum; curl's figures on
    stderr after 'CF '."""
    opts = ["-sS", "--max-time", str(timeout), "-w", "'%s'" % FMT]
    if rate:
        opts += ["--limit-rate", str(rate)]
    if rng:
        opts += ["-r", rng]
    return "taskset -c %s %s %s '%s' | taskset -c %s sha256sum" % (
        cpu, CURL, " ".join(opts), url, cpu)


def start(url, cpu, **kw):
    return subprocess.Popen(["/bin/sh", "-c", curl_cmd(url, cpu, **kw)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def parse(out, err):
    """One request's figures: code, bytes, ttfb_s, total_s, exit, sha256,
    error (curl's message, if any)."""
    r = {"code": 0, "bytes": 0, "ttfb_s": None, "total_s": None, "exit": -1,
         "sha256": (out.split() or [""])[0], "error": ""}
    for line in err.splitlines():
        if line.startswith("CF "):
            f = line.split()
            r.update(code=int(f[1]), bytes=int(f[2]), ttfb_s=float(f[3]),
                     total_s=float(f[4]), exit=int(f[5]))
        elif line.strip():
            r["error"] = line.strip()
    return r


def finish(p, timeout=600):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(p)
        out, err = p.communicate()
    return parse(out, err)


def kill(p):
    """Ends one request's shell and its curl (its own session), by id."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def fetch_many(url, n, cpu, **kw):
    """<n> GETs of <url> started at once; their figures, in start order."""
    procs = [start(url, cpu, **kw) for _ in range(n)]
    return [finish(p) for p in procs]


def fetch(url, cpu, **kw):
    return finish(start(url, cpu, **kw))


def ok(r, sha, size):
    """A whole, correct body: 200/206, curl happy, every byte as expected."""
    return (r["code"] in (200, 206) and r["exit"] == 0 and r["bytes"] == size
            and r["sha256"] == sha)


def origin_busy(status_url):
    """Requests the origin is answering now (stub_status 'Writing', less the
    status request itself); None when it cannot be asked."""
    try:
        with urllib.request.urlopen(status_url, timeout=2) as f:
            text = f.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if "Writing:" in line:
            parts = line.split()
            return int(parts[parts.index("Writing:") + 1]) - 1
    return None


def settle(status_url, limit_s):
    """Waits (at most <limit_s>) until the origin sends nothing, so that
    fills still running behind the clients are counted; returns the wait."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if not origin_busy(status_url):
            time.sleep(0.3)
            if not origin_busy(status_url):
                break
        time.sleep(0.2)
    return time.time() - t0
