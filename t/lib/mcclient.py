"""usage: sys.path.insert(0, "t/lib"); from mcclient import Server, Conn, Suite

Helpers for memcache text-protocol tests (stdlib only, /usr/bin/python3):

  Server   goblin.Daemon: the one server starter (t/lib/goblin.py).
  Conn     one raw TCP connection: send lines and bytes, read lines and
           exact byte counts.  Every read has a deadline, so a server that
           hangs makes a check fail instead of the test hang.
  Suite    runs named checks against one server, one line per check, then
           "<server>: N passed, N failed".
"""

import socket
import sys
import traceback

from goblin import Daemon as Server, free_port  # noqa: F401 (re-exported)

TIMEOUT = 5.0           # seconds any single read may wait


class ProtocolError(AssertionError):
    """The server answered something else, or nothing, or hung up."""


class Conn:
    """One connection to <host>:<port>."""

    def __init__(self, port, timeout=TIMEOUT, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def send(self, data):
        self.sock.sendall(data)

    def sendline(self, line):
        if isinstance(line, str):
            line = line.encode()
        self.send(line + b"\r\n")

    def _fill(self, what):
        self.sock.settimeout(self.timeout)
        try:
            data = self.sock.recv(1 << 20)
        except socket.timeout:
            raise ProtocolError("timed out after %.0fs waiting for %s; "
                                "had %r" % (self.timeout, what,
                                            self.buf[:80])) from None
        except ConnectionError as e:
            raise ProtocolError("connection lost waiting for %s: %s"
                                % (what, e)) from None
        if not data:
            raise ProtocolError("connection closed waiting for %s; had %r"
                                % (what, self.buf[:80]))
        self.buf += data

    def readline(self):
        """The next reply line, without its "\\r\\n"."""
        while b"\r\n" not in self.buf:
            if len(self.buf) > 1 << 16:
                raise ProtocolError("no line end in %r..." % self.buf[:80])
            self._fill("a reply line")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill("%d bytes (have %d)" % (n, len(self.buf)))
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def expect(self, want):
        """Reads one line; it must be <want> (str or bytes)."""
        if isinstance(want, str):
            want = want.encode()
        got = self.readline()
        if got != want:
            raise ProtocolError("expected %r, got %r" % (want, got))

    def cmd(self, line):
        """Sends <line>, returns its one-line reply as str."""
        self.sendline(line)
        return self.readline().decode("latin-1")

    def store(self, verb, key, value, flags=0, exptime=0, cas=None,
              noreply=False):
        """Sends a storage command; returns its reply (None with noreply)."""
        if isinstance(key, str):
            key = key.encode()
        head = b"%s %s %d %d %d" % (verb.encode(), key, flags, exptime,
                                    len(value))
        if cas is not None:
            head += b" %d" % cas
        if noreply:
            head += b" noreply"
        self.send(head + b"\r\n" + value + b"\r\n")
        return None if noreply else self.readline().decode("latin-1")

    def read_values(self, with_cas=False):
        """Reads VALUE blocks up to END: [(key, flags, value, cas)] in the
        order sent, each value read by its exact byte count."""
        out = []
        while True:
            line = self.readline()
            if line == b"END":
                return out
            parts = line.split(b" ")
            if parts[0] != b"VALUE" or len(parts) != (5 if with_cas else 4):
                raise ProtocolError("expected VALUE or END, got %r" % line)
            try:
                flags, n = int(parts[2]), int(parts[3])
                cas = int(parts[4]) if with_cas else None
            except ValueError:
                raise ProtocolError("bad VALUE line %r" % line) from None
            value = self.read_exact(n)
            if self.read_exact(2) != b"\r\n":
                raise ProtocolError("value of %r not followed by \\r\\n"
                                    % parts[1])
            out.append((parts[1].decode("latin-1"), flags, value, cas))

    def get(self, *keys, verb="get", exptime=None):
        """get/gets/gat/gats <keys>: {key: (flags, value, cas)}."""
        line = verb + ("" if exptime is None else " %d" % exptime)
        self.sendline(line + " " + " ".join(keys))
        vals = self.read_values(with_cas=verb in ("gets", "gats"))
        return {k: (f, v, c) for k, f, v, c in vals}

    def value(self, key):
        """The value of <key>, or None when the server has none."""
        got = self.get(key)
        return got[key][1] if key in got else None

    def expect_closed(self):
        """The server must close the connection without sending more."""
        if self.buf:
            raise ProtocolError("unexpected bytes %r" % self.buf[:80])
        self.sock.settimeout(self.timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            raise ProtocolError("connection still open after %.0fs"
                                % self.timeout) from None
        except ConnectionError:
            return
        if data:
            raise ProtocolError("unexpected bytes %r before close"
                                % data[:80])


class Check:
    """What a check function gets: the server, fresh connections (closed
    after the check) and keys unique to the check."""

    def __init__(self, server, name, ident):
        self.server = server
        self.name = name
        self.ident = ident
        self.conns = []

    def conn(self, timeout=TIMEOUT):
        c = Conn(self.server.port, timeout)
        self.conns.append(c)
        return c

    def key(self, suffix=""):
        return "%s:%s" % (self.ident, suffix)

    def close(self):
        for c in self.conns:
            c.close()


class Suite:
    """Runs [(name, fn)] against a started server; fn(check) raises on
    failure (AssertionError / ProtocolError / anything)."""

    def __init__(self, server, verbose=False):
        self.server = server
        self.verbose = verbose
        self.passed = 0
        self.failed = 0

    def run(self, checks):
        down = ""
        for i, (name, fn) in enumerate(checks):
            if not self.server.alive():
                down = ("server is not running (exit status %s)"
                        % self.server.proc.returncode)
            if down:
                self._fail(name, down)
                continue
            chk = Check(self.server, name, "c%d" % i)
            try:
                fn(chk)
            except Exception as e:
                self._fail(name, "%s: %s" % (type(e).__name__, e))
                if self.verbose and not isinstance(e, AssertionError):
                    traceback.print_exc(file=sys.stdout)
                if not self._responsive():
                    down = "not run: the server stopped answering"
            else:
                self.passed += 1
                print("ok    %s: %s" % (self.server.name, name))
            finally:
                chk.close()
            sys.stdout.flush()
        print("%s: %d passed, %d failed" % (self.server.name, self.passed,
                                            self.failed))
        if self.failed and self.server.log_tail():
            print("--- %s output (last lines) ---\n%s"
                  % (self.server.name, self.server.log_tail()))
        return self.failed == 0

    def _responsive(self):
        """A fresh connection still gets an answer to "version"."""
        try:
            c = Conn(self.server.port, timeout=2.0)
            try:
                return c.cmd("version").startswith("VERSION ")
            finally:
                c.close()
        except (OSError, ProtocolError):
            return False

    def _fail(self, name, why):
        self.failed += 1
        print("FAIL  %s: %s: %s" % (self.server.name, name, why))
