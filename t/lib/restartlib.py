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

BIN = faults.store_binary()
VERBOSE = "-v" in sys.argv


def need_binary():
    """Exits 77 (skip) when goblin-store is not built."""
    if not os.access(BIN, os.X_OK):
        print("goblin-store binary not found at %s" % BIN)
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
    a free port.  <args>: everything but the port, --no-mlock, --no-http."""

    def __init__(self, work, name, args):
        super().__init__(work, name, args)
        self.extra = []
        cleanup()

    def argv(self):
        return super().argv() + self.extra

    def _spawn(self, extra, env):
        self.port = free_port()
        self.extra = list(extra)
        full_env = dict(os.environ)
        full_env.pop("GOBLIN_TEST_CRASH", None)
        full_env.update(env or {})
        with open(self.log, "a") as logf:
            logf.write("=== start%s: %s\n" % (
                "".join(" %s=%s" % kv for kv in (env or {}).items()),
                " ".join(self.argv())))
            logf.flush()
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         env=full_env)
        cleanup().add("goblin-store %d" % self.proc.pid, self._kill)
        wait_for(lambda: self.proc.poll() is not None or self._ready(), 60)

    def start(self, extra=(), env=None, tries=3):
        """Starts it and waits until it serves (recovery included, 60 s at
        most); a fresh port when another process took the last one.
        Raises RuntimeError with the log's tail when it cannot."""
        why = ""
        for _ in range(tries):
            self._spawn(extra, env)
            if self.proc.poll() is None and self._ready():
                return self
            why = "exit status %s" % self.proc.poll()
            self._kill()
            if "Address already in use" not in self.log_tail(3):
                break
        raise RuntimeError("%s did not start (%s):\n%s"
                           % (self.name, why, self.log_tail()))

    def start_to_die(self, extra=(), env=None):
        """Starts it expecting it to die before it serves (a crash point
        at start); returns its exit status; raises when it came up."""
        self._spawn(extra, env)
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
        self.run("no sanitizer report in any daemon log",
                 lambda: eq(bad, [], "daemons with reports"))

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
