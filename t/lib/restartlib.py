"""usage: sys.path.insert(0, "t/lib"); import restartlib as R

The harness of t/daemon/headcache.test, restart.test and diskfull.test
(stdlib only, /usr/bin/python3), on t/lib/faults.py's Store, values and
cleanup, without its devices: goblin-store daemons on real pools under
/var/tmp that are killed (-9, SIGTERM, or by their own crash point) and
restarted on the same pools.

  Store    faults.Store that starts with extra flags and an environment
           (GOBLIN_TEST_CRASH), can be expected to die at start, and
           waits for a death it caused itself; killed by pid at exit.
  Checks   runs named checks, one line each, then "N passed, N failed".
  value(key, version, size), size_of(key, version, lo, hi): faults.py's.
"""

import os
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import (KIB, MIB, Cut, Mc, cleanup, free_port,  # noqa: E402,F401
                    size_of, value, wait_for, workdir)
from mcclient import Conn, ProtocolError  # noqa: E402,F401
from goblin import last_wins  # noqa: E402

BIN = faults.store_binary()
HOOKS_BIN = faults.store_binary(hooks=True)  # reads GOBLIN_TEST_* (t/hooks/)
VERBOSE = "-v" in sys.argv


def need_binary(hooks=False):
    """Exits 77 (skip) when goblin-store (with <hooks>, the hooked test
    build) is not built."""
    path = HOOKS_BIN if hooks else BIN
    if not os.access(path, os.X_OK):
        print("goblin-store binary not found at %s" % path)
        sys.exit(77)


def which_version(key, got, versions, val):
    """The version in <versions> (None: absent) whose value <got> (None: a
    miss) is, or the string "wrong"; val(key, version) gives the bytes."""
    for ver in versions:
        if ver is None:
            if got is None:
                return None
        elif got is not None and got == val(key, ver):
            return ver
    return "wrong"


class Store(faults.Store):
    """One goblin-store with fixed pools (memcache only); each start takes
    a free port.  <args>: everything but the port, --no-mlock, --no-http;
    <hooks>: run the hooked test build (GOBLIN_TEST_* in its env)."""

    def __init__(self, work, name, args, hooks=False):
        super().__init__(work, name, args)
        self.binary = HOOKS_BIN if hooks else BIN
        self.extra = []
        self.ready_timeout = 60
        self.env = {"GOBLIN_TEST_CRASH": None}  # only where a check sets it
        cleanup()

    def argv(self):
        return last_wins([self.binary] + super().argv()[1:] + self.extra)

    retry_on = "Address already in use"

    def start(self, extra=(), env=None, tries=3):
        """Starts it and waits until it serves (recovery included, 60 s at
        most); a fresh port when another process took the last one.
        Raises RuntimeError with the log's tail when it cannot."""
        self.extra = list(extra)
        return super().start(tries, env)

    def start_to_die(self, extra=(), env=None):
        """Starts it expecting it to die before it serves (a crash point
        at start); returns its exit status; raises when it came up."""
        self.extra = list(extra)
        self.spawn(env)
        self.wait_ready()
        if self.proc.poll() is None:
            self._kill()
            raise AssertionError("%s came up instead of dying at start (%s)"
                                 % (self.name, env))
        return self.proc.returncode

    def kill9(self):
        """SIGKILL by pid, reaped."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def term(self, timeout=30):
        """SIGTERM by pid; returns the exit status (0: a clean stop).
        SIGKILL and an AssertionError when it does not stop in time."""
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            raise AssertionError("%s did not stop on SIGTERM in %ds"
                                 % (self.name, timeout)) from None

    def wait_dead(self, timeout):
        """Its exit status once it died by itself, None if it still runs
        after <timeout> s."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def conn(self, timeout=30):
        return Conn(self.port, timeout)

    def stat(self, name):
        st = self.stats()
        if name not in st:
            raise AssertionError("`stats goblin` has no %s" % name)
        return st[name]


# ---- checks ----

def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


class Checks:
    """Named checks: ok/FAIL one line each; done() prints the total."""

    def __init__(self, stores=()):
        self.passed = 0
        self.failed = 0
        self.stores = list(stores)

    def run(self, name, fn, *args):
        t0 = time.monotonic()
        try:
            fn(*args)
        except Exception as e:
            self.failed += 1
            print("FAIL  %s: %s: %s" % (name, type(e).__name__, e))
            if VERBOSE:
                traceback.print_exc(file=sys.stdout)
                for s in self.stores:
                    print("--- %s log ---\n%s" % (s.name, s.log_tail()))
        else:
            self.passed += 1
            print("ok    %s (%.1fs)" % (name, time.monotonic() - t0))
        sys.stdout.flush()

    def no_sanitizer_reports(self):
        bad = [s.name for s in self.stores if s.sanitizer_reports()]
        for s in self.stores:
            if s.name in bad:       # the report, for whoever reads the log
                print("    %s's log:\n%s" % (s.name, s.log_tail(60)))
        self.run("no sanitizer report in any daemon log",
                 lambda: eq(bad, [], "daemons with reports"))

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
