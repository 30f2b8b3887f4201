"""usage: sys.path.insert(0, "t/lib"); import goblin

The one goblin-store starter and the one `stats` reader of the python test
harnesses (stdlib only, /usr/bin/python3):

  store_binary()   $GOBLIN_STORE, else $GOBLIN_TOP/$BUILD/goblin-store
  free_port()      a TCP port on 127.0.0.1 nobody listens on right now
  stats_on(c, sub) `stats <sub>` on an open connection: {name: value}
  stats(port, sub) the same on a fresh connection to 127.0.0.1:<port>
  Daemon           a server process started as argv_of(port) on a free port,
                   ready once it accepts connections; stopped by pid at exit
                   or on SIGTERM/SIGINT/SIGHUP, whatever happens to the test.
"""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

TOP = os.environ.get("GOBLIN_TOP") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")


def store_binary():
    return os.environ.get("GOBLIN_STORE") or \
        os.path.join(TOP, BUILD, "goblin-store")


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stats_on(c, sub="", ints=False):
    """`stats <sub>` on connection <c> (send(bytes), readline() -> bytes
    without "\\r\\n"): {name: value} up to END, values as str, or as int
    where they parse when <ints>."""
    c.send(("stats " + sub).strip().encode() + b"\r\n")
    out = {}
    while True:
        line = c.readline().decode()
        if line == "END":
            return out
        _, k, v = line.split(" ", 2)
        if ints:
            try:
                v = int(v)
            except ValueError:
                pass
        out[k] = v


def stats(port, sub="", ints=False):
    """stats_on() over a fresh connection to 127.0.0.1:<port>."""
    from mcclient import Conn
    c = Conn(port)
    try:
        return stats_on(c, sub, ints)
    finally:
        c.close()


class Daemon:
    """A server started as argv_of(port) (env: extra environment); see
    start() and stop()."""

    _running = []
    _tmpdirs = []
    _handlers_set = False

    def __init__(self, name, argv_of, ready_timeout=15.0, env=None):
        self.name = name
        self.argv_of = argv_of
        self.ready_timeout = ready_timeout
        self.env = env
        self.proc = None
        self.port = None
        self.log_path = None

    @classmethod
    def _install_cleanup(cls):
        if cls._handlers_set:
            return
        cls._handlers_set = True
        atexit.register(cls.stop_all)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, cls._on_signal)

    @classmethod
    def _on_signal(cls, signum, frame):
        cls.stop_all()
        os._exit(128 + signum)

    @classmethod
    def stop_all(cls):
        for srv in list(cls._running):
            srv.stop()
        for d in cls._tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        cls._tmpdirs.clear()

    def start(self, tries=3):
        """Starts the server and waits until it accepts connections; retries
        on a fresh port if it exits early (another process took the port).
        Raises RuntimeError with the tail of its output when it cannot."""
        Daemon._install_cleanup()
        tmp = tempfile.mkdtemp(prefix="goblin-daemon.", dir="/var/tmp")
        Daemon._tmpdirs.append(tmp)
        self.log_path = os.path.join(tmp, self.name.replace("/", "_") + ".log")
        env = None
        if self.env is not None:
            env = dict(os.environ)
            env.update(self.env)
        why = ""
        for _ in range(tries):
            self.port = free_port()
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    self.argv_of(self.port), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, env=env)
            Daemon._running.append(self)
            why = self._wait_ready()
            if not why:
                return
            self.stop()
        raise RuntimeError("%s did not start: %s\n%s"
                           % (self.name, why, self.log_tail()))

    def _wait_ready(self):
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return "exited with status %d" % self.proc.returncode
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         timeout=1.0).close()
                return ""
            except OSError:
                time.sleep(0.02)
        return "not listening on port %d after %.0fs" % (
            self.port, self.ready_timeout)

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
