"""Helpers and the driver of the memcache text-protocol conformance tests
(t/daemon/proto-*.test): each check runs against Debian's memcached and, when
$GOBLIN_STORE is an executable file, against goblin-store (RAM only)."""

import os

import goblin
from mcclient import Server, Suite

MEMCACHED = "/usr/bin/memcached"
TOO_LARGE = 9000000             # above memcached -I 8m and --max-object 8M
CHECKS = []


def check(name):
    def register(fn):
        CHECKS.append((name, fn))
        return fn
    return register


def short(v, most=160):
    r = repr(v)
    return r if len(r) <= most else r[:most] + "...(%d chars)" % len(r)


def eq(got, want, what="value"):
    if got != want:
        raise AssertionError("%s: expected %s, got %s"
                             % (what, short(want), short(got)))


def cas_of(c, key):
    got = c.get(key, verb="gets")
    if key not in got:
        raise AssertionError("gets %s: no such key" % key)
    return got[key][2]


def alive(c):
    """The connection still answers commands."""
    if not c.cmd("version").startswith("VERSION "):
        raise AssertionError("version did not answer VERSION")


def counter_is(c, key, want):
    """<key> holds the number <want>; memcached may pad a value that got
    shorter with trailing spaces (protocol.txt allows it)."""
    v = c.value(key)
    if v is None or v.rstrip(b" ") != want.encode() or v.startswith(b" "):
        raise AssertionError("%s: expected %r (maybe space-padded), got %r"
                             % (key, want, v))


def stat_lines(c, sub):
    c.sendline(("stats " + sub).strip())
    out = []
    while True:
        line = c.readline()
        if line == b"END":
            return out
        if not line.startswith(b"STAT ") or len(line.split(b" ")) < 3:
            raise AssertionError("stats %s: bad line %r" % (sub, line))
        out.append(line.decode("latin-1"))


BAD_FORMAT = "CLIENT_ERROR bad command line format"
BAD_EXPTIME = "CLIENT_ERROR invalid exptime argument"


# ---- driver -------------------------------------------------------------

def memcached_argv(port):
    argv = [MEMCACHED, "-l", "127.0.0.1", "-p", str(port), "-U", "0",
            "-m", "64", "-I", "8m",
            # no background reaping: lookups find what flush_all left
            "-o", "no_lru_crawler,no_lru_maintainer"]
    if os.geteuid() == 0:
        argv += ["-u", "root"]      # memcached refuses root otherwise
    return argv


def goblin_argv(path):
    return lambda port: goblin.store_argv(port, "--max-object", "8M",
                                          memory="64M", sub_memory="16M",
                                          binary=path)


def run_server(srv, checks, verbose):
    try:
        srv.start()
    except RuntimeError as e:
        print("FAIL  %s: %s" % (srv.name, e))
        return False
    try:
        return Suite(srv, verbose).run(checks)
    finally:
        srv.stop()


def main(doc, argv):
    verbose, only = False, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "-v":
            verbose = True
        elif a == "-k" and args:
            only = args.pop(0)
        else:
            print(doc.strip())
            return 0 if a in ("-h", "--help") else 2
    checks = [c for c in CHECKS if only is None or only in c[0]]

    ok, ran, skipped = True, 0, []
    if os.access(MEMCACHED, os.X_OK):
        ok = run_server(Server("memcached", memcached_argv), checks,
                        verbose) and ok
        ran += 1
    else:
        skipped.append("memcached (%s not found)" % MEMCACHED)

    path = os.environ.get("GOBLIN_STORE", "")
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        ok = run_server(Server("goblin-store", goblin_argv(path)), checks,
                        verbose) and ok
        ran += 1
    else:
        skipped.append("goblin-store ($GOBLIN_STORE=%r is not an executable "
                       "file)" % path)

    for s in skipped:
        print("skipped: " + s)
    if not ran:
        print("no server to test: " + "; ".join(skipped))
        return 77
    return 0 if ok else 1
