"""usage: sys.path.insert(0, "t/lib"); import tierslib as T

The set-up the tiers suites share (t/daemon/tiers*.test: goblin-store with
real pools under /var/tmp, over the memcache protocol), stdlib only:

  BIN, WORK        the binary (goblin.store_binary()) and this run's dir
  pool(name)       a pool dir under WORK
  store_args(port, ssd, hdd, *extra)
                   the suites' store: 32M RAM, 96M SSD and 256M HDD pools
  start(name, ssd, hdd, *extra)
                   that store started; every server started is kept for
                   the sanitizer check
  run_refused(args, rc, text)
                   a start that must exit <rc> with <text> in one last line
  blob(), eq()     values and the one assertion
  main(cases, name)
                   runs (title, fn) cases, then the sanitizer check over
                   every server's log; prints "N passed, N failed"; 77
                   when goblin-store is not built
"""

import os
import random
import shutil
import sys
import tempfile

from goblin import refused, store_argv, store_binary
from mcclient import Server

BIN = store_binary()
KIB, MIB = 1024, 1024 * 1024
HEAD, PREFIX = 256 * KIB, 1 * MIB
VERBOSE = "-v" in sys.argv
WORK = None
ALL = []            # every server started, for sanitizer_reports()


def blob(n, seed):
    """<n> pseudo-random bytes, different for each seed."""
    return random.Random(seed).randbytes(n)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


def pool(name):
    return os.path.join(WORK, name)


def store_args(port, ssd, hdd, *extra):
    return store_argv(port, "--ssd-size", "96M", "--hdd-size", "256M",
                      "--max-object", "40M", *extra, memory="32M",
                      sub_memory="8M", mlock=False, ssd=ssd, hdd=hdd)


def start(name, ssd, hdd, *extra):
    srv = Server(name, lambda port: store_args(port, ssd, hdd, *extra))
    ALL.append(srv)
    srv.start()
    return srv


def server(name, argv_of):
    """A server of argv_of(port) not yet started, kept for the sanitizer
    check."""
    srv = Server(name, argv_of)
    ALL.append(srv)
    return srv


def run_refused(args, want_rc, want_text):
    rc, out, _ = refused(args)
    out = out.strip()
    if rc != want_rc or want_text not in out:
        raise AssertionError("%s: rc %d, output %r (want rc %d and %r)"
                             % (" ".join(args[1:]), rc, out[-300:],
                                want_rc, want_text))
    last = out.splitlines()[-1] if out else ""
    if not last.startswith("goblin-store: ") or want_text not in last:
        raise AssertionError("the reason is not one last line: %r" % out[-300:])


class Results:
    passed = failed = 0

    @classmethod
    def run(cls, name, fn):
        try:
            fn()
        except Exception as e:
            cls.failed += 1
            print("FAIL  %s: %s: %s" % (name, type(e).__name__, e))
            return
        cls.passed += 1
        print("ok    %s" % name)


def sanitizer_reports():
    bad = []
    for srv in ALL:
        text = open(srv.log_path, errors="replace").read() if srv.log_path else ""
        if "AddressSanitizer" in text or "runtime error:" in text or \
           "LeakSanitizer" in text:
            bad.append(srv.name)
    return bad


def main(cases, name):
    """Runs <cases>, (title, fn) pairs or a function that returns them
    (called once WORK is there), in a fresh WORK (goblin-<name>.* under
    /var/tmp), then the sanitizer check; returns the exit code."""
    global WORK
    if not os.access(BIN, os.X_OK):
        print("goblin-store binary not found at %s" % BIN)
        return 77
    WORK = tempfile.mkdtemp(prefix="goblin-%s." % name, dir="/var/tmp")
    try:
        if callable(cases):
            cases = cases()
        for title, fn in cases:
            Results.run(title, fn)
        bad = sanitizer_reports()
        Results.run("no sanitizer report in any server log",
                    lambda: eq(bad, [], "servers with reports"))
    finally:
        Server.stop_all()
        shutil.rmtree(WORK, ignore_errors=True)
    print("%d passed, %d failed" % (Results.passed, Results.failed))
    return 1 if Results.failed else 0
