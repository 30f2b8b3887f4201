"""usage: sys.path.insert(0, "t/lib"); import goblin

The one goblin-store starter and the one `stats` reader of the python test
harnesses (stdlib only, /usr/bin/python3):

  store_binary()   $GOBLIN_STORE, else $GOBLIN_TOP/$BUILD/goblin-store;
                   with hooks=True the hooked test build that reads
                   GOBLIN_TEST_* (t/hooks/): $GOBLIN_STORE_HOOKS, else
                   t/goblin-store-hooks beside $GOBLIN_STORE's build
  store_argv(port, *flags, **common)
                   goblin-store's command line: the one place its common
                   flags (memory, mlock, http, port, socket, pools) are
                   spelled; a flag given again overrides (last_wins)
  last_wins(argv)  <argv> with each one-value flag at its last place only:
                   goblin-store refuses one given twice, and a harness's
                   defaults give way to a test's own
  refused(argv)    runs a goblin-store that must exit before it serves:
                   (exit status, output, its "goblin-store: " lines)
  free_port()      a TCP port on 127.0.0.1 nobody listens on right now
  stats_on(c, sub) `stats <sub>` on an open connection: {name: value}
  stats(port, sub) the same on a fresh connection to 127.0.0.1:<port>
                   (or <host>); the bench drivers' stats reader too
  Daemon           a server process started as argv_of(port) on a free port,
                   ready once it accepts connections; stopped by pid at exit
                   or on SIGTERM/SIGINT/SIGHUP, whatever happens to the test.
  cleanup()        the one LIFO registry of undo actions (processes by pid,
                   mounts, loop devices, directories) run at exit or signal.
"""

import atexit
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.environ.get("GOBLIN_TOP") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")


def store_binary(hooks=False):
    store = os.environ.get("GOBLIN_STORE") or \
        os.path.join(TOP, BUILD, "goblin-store")
    if not hooks:
        return store
    return os.environ.get("GOBLIN_STORE_HOOKS") or \
        os.path.join(os.path.dirname(store), "t", "goblin-store-hooks")


def store_argv(port, *flags, memory=None, sub_memory=None, mlock=True,
               http=False, sock=None, ssd=(), hdd=(), listen=None,
               binary=None):
    """goblin-store's command line: <binary> (default store_binary()),
    --memory <memory> and --sub-memory <sub_memory> unless None (the
    daemon's defaults), --no-mlock unless <mlock>, --no-http unless <http>,
    --listen <listen> when set, --memcache-port <port>, --socket <sock>
    when set, then <flags>, then --ssd-dir and --hdd-dir for each of <ssd>
    and <hdd>."""
    argv = [binary or store_binary()]
    if memory is not None:
        argv += ["--memory", str(memory)]
    if sub_memory is not None:
        argv += ["--sub-memory", str(sub_memory)]
    if not mlock:
        argv.append("--no-mlock")
    if not http:
        argv.append("--no-http")
    if listen is not None:
        argv += ["--listen", listen]
    argv += ["--memcache-port", str(port)]
    if sock is not None:
        argv += ["--socket", sock]
    argv += [str(f) for f in flags]
    for d in ssd:
        argv += ["--ssd-dir", d]
    for d in hdd:
        argv += ["--hdd-dir", d]
    return last_wins(argv)


REPEATABLE = ("--ssd-dir", "--hdd-dir")


def last_wins(argv):
    """<argv> (a program, then flags) with each "--flag value" pair but the
    repeatable ones (REPEATABLE) kept at its last place only."""
    pairs, i = [], 1
    while i < len(argv):
        a = str(argv[i])
        if a.startswith("--") and "=" not in a and a not in REPEATABLE and \
                i + 1 < len(argv) and not str(argv[i + 1]).startswith("--"):
            pairs.append((a, str(argv[i + 1])))
            i += 2
        else:
            pairs.append((a, None))
            i += 1
    last = {f: k for k, (f, v) in enumerate(pairs) if v is not None}
    out = list(argv[:1])
    for k, (f, v) in enumerate(pairs):
        if v is None:
            out.append(f)
        elif last[f] == k:
            out += [f, v]
    return out


def environ(extra):
    """This process's environment with <extra> over it (a None value unsets
    a name); None, meaning the environment as it is, when <extra> is empty."""
    if not extra:
        return None
    full = {k: v for k, v in os.environ.items() if k not in extra}
    full.update((k, v) for k, v in extra.items() if v is not None)
    return full


def refused(argv, timeout=30, env=None):
    """Runs <argv>, a goblin-store that must refuse and exit before it
    serves (stdin /dev/null, stderr into stdout, <env> as in Daemon);
    returns (exit status, its output, the output's "goblin-store: " lines).
    Raises AssertionError when it still runs after <timeout> s."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=environ(env))
    except subprocess.TimeoutExpired:
        raise AssertionError("%s: still running after %ds"
                             % (" ".join(argv[1:]), timeout))
    out = p.stdout.decode(errors="replace")
    return p.returncode, out, [x for x in out.splitlines()
                               if x.startswith("goblin-store: ")]


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stats_on(c, sub="", ints=False):
    """`stats <sub>` on connection <c> (send(bytes), readline() -> bytes
    without "\\r\\n"): {name: value} up to END, values as str, or as int
    where they parse when <ints>.  Raises ValueError on a line that is not
    a "STAT name value" (an error reply)."""
    c.send(("stats " + sub).strip().encode() + b"\r\n")
    out = {}
    while True:
        line = c.readline().decode()
        if line == "END":
            return out
        stat, k, v = (line.split(" ", 2) + ["", ""])[:3]
        if stat != "STAT" or not k:
            raise ValueError("stats %s: %r" % (sub, line))
        if ints:
            try:
                v = int(v)
            except ValueError:
                pass
        out[k] = v


def stats(port, sub="", ints=False, host="127.0.0.1", timeout=None):
    """stats_on() over a fresh connection to <host>:<port>, each read
    waiting at most <timeout> s (default mcclient's)."""
    from mcclient import Conn, TIMEOUT
    c = Conn(port, timeout or TIMEOUT, host)
    try:
        return stats_on(c, sub, ints)
    finally:
        c.close()


class Cleanup:
    """Undo actions, run newest first, once, at exit or on a signal."""

    def __init__(self):
        self.actions = []
        self.lock = threading.Lock()
        atexit.register(self.run)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self.run()
        os._exit(128 + signum)

    def add(self, what, fn):
        with self.lock:
            self.actions.append((what, fn))
        return fn

    def remove(self, fn):
        with self.lock:
            self.actions = [(w, f) for w, f in self.actions if f is not fn]

    def run(self):
        while True:
            with self.lock:
                if not self.actions:
                    return
                what, fn = self.actions.pop()
            try:
                fn()
            except Exception as e:      # keep undoing the rest
                print("cleanup: %s: %s" % (what, e), file=sys.stderr)


CLEAN = None


def cleanup():
    """The process's one Cleanup: daemons by pid, then whatever was made
    before them (mounts, loop devices, directories)."""
    global CLEAN
    if CLEAN is None:
        CLEAN = Cleanup()
    return CLEAN


class Daemon:
    """A server started as argv_of(port) on a free port; see start() and
    stop().  env: extra environment (a None value unsets a name); log: the
    file its output is appended to, one "=== start" line a run (default: a
    fresh file under /var/tmp each start); sock: a unix socket it must have
    made too before it counts as ready; preexec: run in the child before
    the exec (limits); retry_on: a start is retried only when the log's
    last lines hold this (None: whenever it exits early)."""

    _running = []
    retry_on = None

    def __init__(self, name, argv_of, ready_timeout=15.0, env=None, log=None,
                 sock=None, preexec=None):
        self.name = name
        self.argv_of = argv_of
        self.ready_timeout = ready_timeout
        self.env = dict(env or {})
        self.log_path = log
        self._own_log = log is None
        self.sock = sock
        self.preexec = preexec
        self.proc = None
        self.port = None

    @classmethod
    def stop_all(cls):
        for srv in list(cls._running):
            srv.stop()

    def spawn(self, env=None):
        """Starts argv_of(a free port) and returns at once; its stop by pid
        is registered in cleanup()."""
        c = cleanup()
        if self._own_log:
            tmp = tempfile.mkdtemp(prefix="goblin-daemon.", dir="/var/tmp")
            c.add("rm -r " + tmp, lambda: shutil.rmtree(tmp, ignore_errors=True))
            self.log_path = os.path.join(tmp, self.name.replace("/", "_") + ".log")
        self.port = free_port()
        argv = self.argv_of(self.port)
        extra = dict(self.env)
        extra.update(env or {})
        full = environ(extra)
        with open(self.log_path, "wb" if self._own_log else "ab") as log:
            if not self._own_log:
                log.write(("=== start%s: %s\n" % (
                    "".join(" %s=%s" % kv for kv in (env or {}).items()),
                    " ".join(argv))).encode())
                log.flush()
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         env=full, preexec_fn=self.preexec)
        Daemon._running.append(self)
        c.add("%s %d" % (self.name, self.proc.pid), self._at_exit)

    def start(self, tries=3, env=None):
        """Starts the server and waits until it accepts connections; retries
        on a fresh port if it exits early (another process took the port).
        Raises RuntimeError with the tail of its output when it cannot."""
        why = ""
        for _ in range(tries):
            self.spawn(env)
            why = self.wait_ready()
            if not why:
                return self
            self._at_exit()
            if self.retry_on is not None and \
                    self.retry_on not in self.log_tail(3):
                break
        raise RuntimeError("%s did not start: %s\n%s"
                           % (self.name, why, self.log_tail()))

    def wait_ready(self, timeout=None):
        """"" once it serves; else why not, when it exited or <timeout> s
        (default ready_timeout) passed."""
        timeout = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                return "exited with status %d" % self.proc.returncode
            if self._ready():
                return ""
            if time.monotonic() >= deadline:
                return "not listening on port %d after %.0fs" % (
                    self.port, timeout)
            time.sleep(0.02)

    def _ready(self):
        if self.sock and not os.path.exists(self.sock):
            return False
        try:
            socket.create_connection(("127.0.0.1", self.port),
                                     timeout=1.0).close()
            return True
        except OSError:
            return False

    def _at_exit(self):
        self.stop()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=5):
        """Stops this server by pid: SIGTERM, then SIGKILL after <timeout>
        s; returns its exit status (None when it never ran)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in Daemon._running:
            Daemon._running.remove(self)
        return self.proc.returncode

    def kill9(self):
        """SIGKILL by pid, reaped; returns the wait status."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self in Daemon._running:
            Daemon._running.remove(self)
        return self.proc.returncode

    def stats(self, sub="", ints=False):
        return stats(self.port, sub, ints)

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""
        return "\n".join(text.splitlines()[-lines:])


# ---- checks for the tests that tally their own (print "N passed, N
# failed" with done()) ----

passed = failed = 0


def check(cond, what):
    """Counts and prints one check; returns <cond>."""
    global passed, failed
    if cond:
        passed += 1
        print("    ok    " + what)
    else:
        failed += 1
        print("    FAIL  " + what)
    sys.stdout.flush()
    return cond


def done(rc=0):
    """Prints the tally and exits: <rc> when set, else 1 on a failure."""
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(rc if rc else (1 if failed else 0))


def wait_for(fn, timeout=30.0):
    """Polls <fn> every 50 ms until it returns something true or <timeout>
    seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = fn()
        if r:
            return r
        time.sleep(0.05)
    return fn()


def http_request(port, method, path, body=None, host="127.0.0.1",
                 timeout=10, headers=None):
    """One HTTP/1.1 request: (status, body), or (None, b"") when the
    connection fails."""
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data
    except OSError:
        return None, b""
