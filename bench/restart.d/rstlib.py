# usage: imported by bench/restart (not run on its own)
"""Pieces of bench/restart: a goblin-store started with its time to serve
measured (exec to listening, exec to the first GET that returns a stored
object), stopped by kill -9 or SIGTERM with the time the stop took, and
`stats goblin` deltas.  Processes are handled by pid only."""
import os
import signal
import socket
import subprocess
import time

from cmplib import RIG, Failure, Server, memcache_stats

POLL_S = 0.002          # how often the start is probed


def get_once(port, key, timeout=5.0):
    """One memcache 'get <key>': ('hit', value length), ('miss', 0), or
    ('error', reason)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout) as s:
            s.sendall(b"get " + key.encode() + b"\r\n")
            buf = b""
            while True:
                if buf.startswith(b"END\r\n"):
                    return "miss", 0
                if buf.startswith(b"VALUE "):
                    nl = buf.find(b"\r\n")
                    if nl > 0:
                        n = int(buf[:nl].split()[3])
                        if len(buf) >= nl + 2 + n + 7:
                            if buf[nl + 2 + n:nl + 2 + n + 7] != b"\r\nEND\r\n":
                                return "error", "bad reply framing"
                            return "hit", n
                elif len(buf) >= 6 or b"\r\n" in buf:
                    return "error", buf[:80].decode(errors="replace").strip()
                chunk = s.recv(1 << 20)
                if not chunk:
                    return "error", "closed"
                buf += chunk
    except OSError as e:
        return "error", str(e)


class TimedServer(Server):
    """A goblin-store in the rig's server cgroup whose start is timed."""

    def start_timed(self, probe_key, probe_len, timeout=600, miss_grace=5.0):
        """Starts the server and measures, from the exec: listen_s (first
        TCP connect), first_get_s (first 'get <probe_key>' answered with
        <probe_len> bytes; None if it still misses <miss_grace> s after
        listening: nothing was recovered)."""
        cmd = [os.path.join(RIG, "exec-in-server-cgroup"), "--state",
               self.rig.state] + self.argv
        out = {"listen_s": None, "first_get_s": None, "probe": None}
        with open(self.logpath, "w") as logf:
            t0 = time.monotonic()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        end = t0 + timeout
        while out["listen_s"] is None:
            if self.proc.poll() is not None:
                raise Failure("%s exited with %d before listening: %s" % (
                    self.name, self.proc.returncode, self.log_tail()))
            if time.monotonic() > end:
                self.stop()
                raise Failure("%s did not listen within %ds: %s"
                              % (self.name, timeout, self.log_tail()))
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                out["listen_s"] = time.monotonic() - t0
            except OSError:
                time.sleep(POLL_S)
        give_up = time.monotonic() + miss_grace
        while time.monotonic() < min(end, give_up):
            status, n = get_once(self.port, probe_key)
            if status == "hit" and n == probe_len:
                out["first_get_s"] = time.monotonic() - t0
                break
            out["probe"] = "%s %s" % (status, n)
            self.check_alive()
            time.sleep(POLL_S)
        for k in ("listen_s", "first_get_s"):
            if out[k] is not None:
                out[k] = round(out[k], 4)
        if out["first_get_s"] is not None:
            out["probe"] = "hit %d" % probe_len
        if self.proc.pid not in self.rig.cg_procs():
            self.stop()
            raise Failure("%s (pid %d) is not in the server cgroup"
                          % (self.name, self.proc.pid))
        return out

    def kill9(self):
        """SIGKILL by pid (the exec chain keeps it the server's); waits."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        return round(time.monotonic() - t0, 4)

    def stop_timed(self, timeout=300):
        """SIGTERM, then the seconds until it exited (its checkpoint and
        close included); KILL and Failure after <timeout>."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise Failure("%s did not stop within %ds of SIGTERM" % (
                self.name, timeout))
        if rc != 0:
            raise Failure("%s exited %d on SIGTERM: %s" % (self.name, rc,
                                                           self.log_tail()))
        return round(time.monotonic() - t0, 4)

    def log_lines(self, words):
        """The log lines that mention any of <words>."""
        try:
            with open(self.logpath, errors="replace") as f:
                return [ln.rstrip() for ln in f
                        if any(w in ln.lower() for w in words)][-20:]
        except OSError:
            return []


def goblin_stats(port):
    return memcache_stats(port, "goblin")


def delta(before, after, names):
    return {k: after[k] - before[k] for k in names}
