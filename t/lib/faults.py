"""usage: sys.path.insert(0, "t/lib"); import faults

Fault-injection harness for t/daemon/faults.test and bench/reliability (stdlib
only, /usr/bin/python3; needs root and /dev/fuse):

  Device   ext4 on a direct-I/O loop device over a goblin-devmodel FUSE
           file (bench/rig/devmodel.c), faults set through its ctl file;
           file_ranges() maps a file to device byte ranges (FIEMAP) so a
           fault hits one pool's data, never ext4's metadata.
  Store    a goblin-store on a free port with its pools on Devices.
  Nginx    an nginx with ngx_http_goblin_module attached to a Store.
  Mc       a memcache connection whose get() says how each reply ended:
           hit, miss, SERVER_ERROR, or cut (connection closed mid-value).
  value()  the bytes of (key, version): a hash of both seeds them, so any
           byte read back is checked without keeping a copy.

Everything made is registered in one Cleanup (LIFO) that runs at exit and
on SIGTERM/SIGINT/SIGHUP: processes by pid, mounts and loop devices by
path, the work directory last.
"""

import collections
import fcntl
import hashlib
import http.client
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

from goblin import (Daemon, cleanup, free_port, stats_on,  # noqa: F401
                    store_argv, store_binary)  # (re-exported)

KIB, MIB = 1024, 1024 * 1024
TOP = os.environ.get("GOBLIN_TOP") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")


def binary(name):
    return os.path.join(TOP, BUILD, name)


def module_path():
    return (os.environ.get("GOBLIN_NGX_MODULE") or
            os.path.join(TOP, "build", "ngx_http_goblin_module.so"))


def missing_prereq():
    """Why this machine cannot run fault scenarios at all, or ""."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing: no FUSE here"
    if os.geteuid() != 0:
        return "needs root (FUSE mounts, loop devices, ext4)"
    return ""


# ---- what happened, for bench/reliability's report ----

class Tally:
    """Counts of operations, outcomes and faults, summed over a run."""

    def __init__(self):
        self.c = collections.Counter()
        self.lock = threading.Lock()

    def add(self, name, n=1):
        with self.lock:
            self.c[name] += n

    def get(self, name):
        with self.lock:
            return self.c[name]


TALLY = Tally()


# ---- values ----

def value(key, version, size):
    """<size> bytes for (<key>, <version>): a readable tag, then bytes
    seeded by a hash of both."""
    seed = hashlib.blake2b(("%s\0%d" % (key, version)).encode(),
                           digest_size=8).digest()
    tag = ("<%s v%d %d>" % (key, version, size)).encode()[:size]
    return tag + random.Random(seed).randbytes(size - len(tag))


def size_of(key, version, lo, hi):
    """A size in [lo, hi], fixed by (key, version)."""
    h = hashlib.blake2b(("%s\0%d\0size" % (key, version)).encode(),
                        digest_size=8).digest()
    return lo + int.from_bytes(h, "little") % (hi - lo + 1)


# ---- cleanup: goblin.cleanup(), the one registry ----

def workdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    cleanup().add("rm -r " + d, lambda: shutil.rmtree(d, ignore_errors=True))
    return d


def stop_pid(proc, timeout=10):
    """SIGTERM <proc> (a Popen), SIGKILL after <timeout> s; reaps it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def run(*argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), r.returncode,
                                                   r.stderr.strip()))
    return r


def wait_for(cond, timeout, step=0.02):
    """Polls <cond>() until true or <timeout> s pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def is_mount(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


# ---- the device ----

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
FIEMAP_EXTENT_LAST = 1


def file_extents(path):
    """[(device byte offset, length)] of <path>'s blocks, from FIEMAP."""
    out, start = [], 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            n = 64
            buf = bytearray(struct.pack("QQIIII", start, 2**64 - 1 - start,
                                        FIEMAP_FLAG_SYNC, 0, n, 0) + bytes(56 * n))
            fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
            mapped = struct.unpack_from("I", buf, 20)[0]
            last = False
            for i in range(mapped):
                lo, ph, ln, _, _, fl = struct.unpack_from("QQQQQI", buf, 32 + 56 * i)
                out.append((ph, ln))
                start = lo + ln
                last = bool(fl & FIEMAP_EXTENT_LAST)
            if last or mapped == 0:
                return out
    finally:
        os.close(fd)


class Device:
    """ext4 on a direct-I/O loop device over a goblin-devmodel file."""

    def __init__(self, work, name, size, model_args=()):
        self.name = name
        self.size = size
        self.img = os.path.join(work, name + ".img")
        self.mnt = os.path.join(work, name + ".model")
        self.dir = os.path.join(work, name)
        self.log = os.path.join(work, name + ".model.log")
        self.model_args = list(model_args)
        self.proc = None
        self.loop = None

    def up(self):
        c = cleanup()
        with open(self.img, "wb") as f:
            f.truncate(self.size)
        # formatted at host speed, before the model exists; no journal:
        # a fault on the pool's ranges never meets ext4 metadata
        run("mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
            "-E", "lazy_itable_init=0", self.img)
        os.mkdir(self.mnt)
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen(
                [binary("goblin-devmodel"), "--backing", self.img,
                 *self.model_args, self.mnt],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
        c.add("model " + self.mnt, self._stop_model)
        if not wait_for(lambda: is_mount(self.mnt) or self.proc.poll() is not None, 10) \
                or not is_mount(self.mnt):
            raise RuntimeError("goblin-devmodel did not mount %s: %s"
                               % (self.mnt, self.model_log()[-500:]))
        self.loop = run("losetup", "--find", "--show", "--direct-io=on",
                        os.path.join(self.mnt, "dev")).stdout.strip()
        c.add("losetup -d " + self.loop, self._detach_loop)
        os.mkdir(self.dir)
        run("mount", "-t", "ext4", "-o", "noatime,errors=continue", self.loop, self.dir)
        c.add("umount " + self.dir, self._umount)
        return self

    def _umount(self):
        if is_mount(self.dir):
            try:
                self.ctl("clear")       # release stalled requests first
            except OSError:
                pass
            if run("umount", self.dir, check=False).returncode:
                run("umount", "-l", self.dir, check=False)

    def _detach_loop(self):
        if self.loop:
            run("losetup", "-d", self.loop, check=False)
            self.loop = None

    def _stop_model(self):
        if self.proc and self.proc.poll() is None:
            stop_pid(self.proc, 10)
        if is_mount(self.mnt):
            run("umount", "-l", self.mnt, check=False)

    def down(self):
        """Takes the device down now; True when the model exited 0.  Its
        fault counters go into TALLY."""
        if is_mount(self.mnt):
            st = self.stats()
            for k in ("injected_read_eio", "injected_write_eio",
                      "injected_write_enospc", "stalled", "stalled_us"):
                TALLY.add(k, int(st[k]))
        self._umount()
        self._detach_loop()
        self._stop_model()
        return self.proc.returncode == 0

    def ctl(self, text):
        """Sets faults (goblin-devmodel's ctl commands) in one write."""
        if not is_mount(self.mnt):
            return
        fd = os.open(os.path.join(self.mnt, "ctl"), os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def fault(self, kind, ranges, *args):
        """Sets fault <kind> (read-eio, write-eio, write-enospc) on the
        device ranges <ranges> with extra words <args> (every N, count N).
        A fault takes one range: several ranges become their hull."""
        lo = min(s for s, _ in ranges)
        hi = max(s + n for s, n in ranges)
        self.ctl("%s range %d %d %s\n" % (kind, lo, hi - lo, " ".join(args)))

    def stats(self):
        with open(os.path.join(self.mnt, "stats")) as f:
            return {k: v for k, _, v in (l.rstrip("\n").partition(" ") for l in f)}

    def counter(self, name):
        return int(self.stats()[name])

    def model_log(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""


# ---- goblin-store ----

class Store(Daemon):
    """One goblin-store on a free port; argv is the pool/budget options;
    <hooks>: the hooked test build, which reads the GOBLIN_TEST_* of <env>
    (t/hooks/)."""

    def __init__(self, work, name, args, http=False, hooks=False, env=None):
        self.work = work
        self.args = list(args)
        self.http = http
        self.hooks = hooks
        self.socket = os.path.join(work, name + ".sock")
        self.log = os.path.join(work, name + ".log")
        self.exits = []             # wait statuses of earlier runs
        super().__init__(name, lambda port: self.argv(), 20, env=env,
                         log=self.log, sock=self.socket if http else None)

    def argv(self):
        return store_argv(self.port, *self.args, mlock=False, http=self.http,
                          sock=self.socket if self.http else None,
                          binary=store_binary(hooks=True) if self.hooks else None)

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    _at_exit = _kill

    def kill9(self):
        TALLY.add("daemon_kill9")
        self.exits.append(super().kill9())

    def stop(self):
        """SIGTERM; returns the exit status (0: a clean stop)."""
        rc = super().stop(15)
        self.exits.append(rc)
        return rc

    def stats(self):
        """`stats` and `stats goblin` merged, as ints where they are."""
        c = Mc(self.port)
        try:
            out = stats_on(c, "", ints=True)
            out.update(stats_on(c, "goblin", ints=True))
        finally:
            c.close()
        return out

    def mem(self):
        """VmRSS and VmHWM of the daemon, bytes."""
        got = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    got[k] = int(v.split()[0]) * KIB
        return got

    def sanitizer_reports(self):
        return [l for l in self.log_tail(100000).splitlines()
                if "Sanitizer" in l or "runtime error:" in l]


# ---- memcache client ----

class Cut(Exception):
    """The server closed the connection (or reset it)."""


class Mc:
    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Cut(str(e)) from None

    def _fill(self):
        try:
            data = self.sock.recv(1 << 20)
        except ConnectionResetError as e:
            raise Cut(str(e)) from None
        if not data:
            raise Cut("closed")
        self.buf += data

    def readline(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill()

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def set(self, key, data, verb="set"):
        """Returns the reply line (str); raises Cut."""
        TALLY.add("ops")
        self.send(b"%s %s 0 0 %d\r\n" % (verb.encode(), key.encode(), len(data)) +
                  data + b"\r\n")
        return self.readline().decode("latin-1")

    def cmd(self, line):
        TALLY.add("ops")
        self.send(line.encode() + b"\r\n")
        return self.readline().decode("latin-1")

    def get(self, key):
        """("hit", bytes) | ("miss", None) | ("error", line) |
        ("cut", bytes received of the value, or None before its VALUE line).
        Raises ValueError on a reply that breaks the protocol."""
        TALLY.add("ops")
        try:
            self.send(b"get %s\r\n" % key.encode())
            line = self.readline()
        except Cut:
            return "cut", None
        if line == b"END":
            return "miss", None
        if line.startswith(b"SERVER_ERROR"):
            return "error", line.decode("latin-1")
        parts = line.split(b" ")
        if len(parts) != 4 or parts[0] != b"VALUE" or parts[1] != key.encode():
            raise ValueError("bad reply to get %s: %r" % (key, line[:80]))
        n = int(parts[3])
        got = bytearray()
        try:
            while len(got) < n:
                if not self.buf:
                    self._fill()
                take = min(n - len(got), len(self.buf))
                got += self.buf[:take]
                del self.buf[:take]
            tail = self.read_exact(2)
            end = self.readline()
        except Cut:
            return "cut", bytes(got)
        if tail != b"\r\n" or end != b"END":
            raise ValueError("value of %s not followed by \\r\\nEND: %r %r"
                             % (key, tail, end[:40]))
        return "hit", bytes(got)


def judge(outcome, got, want):
    """Checks one get against the bytes it may return: <want> is the
    expected value (or a list of acceptable ones; None: a miss is right).
    Returns "" when right, else why not.  A cut value must be a prefix of
    an acceptable value; a hit must equal one."""
    wants = want if isinstance(want, list) else [want]
    why = ""
    TALLY.add("gets_verified")
    if outcome == "hit":
        TALLY.add("bytes_verified", len(got))
        if not any(w is not None and got == w for w in wants):
            why = "wrong bytes (%d bytes, starts %r)" % (len(got), got[:40])
    elif outcome == "cut":
        TALLY.add("gets_cut")
        if got is not None:
            TALLY.add("bytes_verified", len(got))
            if not any(w is not None and w.startswith(got) for w in wants):
                why = "wrong bytes before the cut (%d bytes, starts %r)" % (
                    len(got), got[:40])
    elif outcome == "error":
        TALLY.add("gets_refused")
    if why:
        TALLY.add("wrong_bytes")
    return why


# ---- nginx ----

class Nginx:
    """An nginx (master + <workers> workers) with the module, serving
    /obj/<key> from <store>'s socket."""

    def __init__(self, work, store, workers=2):
        self.prefix = os.path.join(work, "nginx")
        self.store = store
        self.workers = workers
        self.port = None
        self.proc = None

    def conf(self):
        return """
user root;
daemon off;
master_process on;
worker_processes %d;
error_log %s/logs/error.log info;
pid %s/logs/nginx.pid;
load_module %s;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/octet-stream;
    goblin_storaged unix:%s;
    goblin_read_timeout 10s;
    server {
        listen 127.0.0.1:%d;
        location /obj/ {
            goblin;
            goblin_methods GET HEAD PUT DELETE;
            client_max_body_size 64m;
        }
        location = /status { goblin_status; }
    }
}
""" % (self.workers, self.prefix, self.prefix, module_path(), self.store.socket,
       self.port)

    def start(self):
        os.makedirs(self.prefix + "/logs", exist_ok=True)
        os.makedirs(self.prefix + "/conf", exist_ok=True)
        self.port = free_port()
        with open(self.prefix + "/conf/nginx.conf", "w") as f:
            f.write(self.conf())
        self.proc = subprocess.Popen(
            ["/usr/sbin/nginx", "-p", self.prefix + "/", "-c",
             self.prefix + "/conf/nginx.conf"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.prefix + "/logs/stderr", "w"))
        cleanup().add("nginx %d" % self.proc.pid, self.stop)
        ok = wait_for(lambda: self.proc.poll() is not None or (
            len(self.worker_pids()) == self.workers and self._status() == 200), 20)
        if not ok or self.proc.poll() is not None:
            raise RuntimeError("nginx did not start: %s" % self.error_log()[-800:])
        return self

    def _status(self):
        try:
            return self.request("GET", "/status")[0]
        except OSError:
            return 0

    def worker_pids(self):
        pids = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(st[1]) == self.proc.pid and st[0] != "Z":
                pids.append(int(p))
        return pids

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        workers = self.worker_pids()
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in workers:          # by pid, in case the master left them
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def request(self, method, path, body=None, timeout=15, headers=None):
        """(status, body bytes); a cut body raises http.client.IncompleteRead."""
        TALLY.add("ops")
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def status_json(self):
        import json
        st, body = self.request("GET", "/status")
        return json.loads(body) if st == 200 else {}

    def error_log(self):
        try:
            with open(self.prefix + "/logs/error.log", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# ---- reporting ----

class Checks:
    """One line per check; expected failures (xfail) are marked and do not
    fail the run, a passing one says so (XPASS: remove its mark)."""

    def __init__(self, verbose=False):
        self.failed = []
        self.passed = 0
        self.xfailed = []
        self.xfail_reasons = {}
        self.verbose = verbose

    def check(self, cond, what, xfail=None):
        if cond and xfail:
            print("XPASS %s (marked expected to fail: %s; the fix landed, "
                  "drop the mark)" % (what, xfail), flush=True)
            self.passed += 1
        elif cond:
            self.passed += 1
            print("ok    " + what, flush=True)
        elif xfail:
            self.xfailed.append(what)
            self.xfail_reasons[what.split(" (")[0]] = xfail
            print("XFAIL %s (expected until fixed: %s)" % (what, xfail), flush=True)
        else:
            self.failed.append(what)
            print("FAIL  " + what, flush=True)
        return cond
