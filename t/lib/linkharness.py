"""usage: sys.path.insert(0, "t/lib"); import linkharness

The nginx link's test harness, for t/daemon/link-security.test (the
daemon's side) and t/daemon/link-nginx.test (nginx's side), stdlib only,
as root:

  check()     prints "ok" or "FAIL" and a description, counts failures
  Daemon      a goblin-store on a socket path, its log (a goblin.Daemon)
  Worker      an nginx worker's side of the ring, in Python: hello,
              submit(), cqe(), stats()
  as_user()   runs a function in a forked child with other credentials
  main()      runs checks in a work directory under /var/tmp and prints
              the daemons' logs when one failed; returns the exit code

Environment: GOBLIN_STORE (binary), GOBLIN_NGX_MODULE, TEST_NGINX_BINARY.
"""
import json
import mmap
import os
import pwd
import grp
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time

import goblin

TOP = goblin.TOP
STORE = goblin.store_binary()
MODULE = os.environ.get("GOBLIN_NGX_MODULE",
                        os.path.join(TOP, "build", "ngx_http_goblin_module.so"))
NGINX = os.environ.get("TEST_NGINX_BINARY", "/usr/sbin/nginx")

RING_MAGIC, RING_VERSION = 0x474F424C, 3
OP = dict(LOOKUP=1, READ=2, BUFREL=3, RELEASE=4, WOPEN=5, WDATA=6,
          WFINISH=7, WABORT=8, DELETE=9, STATS=10, MORE=11, SETATTR=12,
          DATA=13, TXDONE=14)
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1, 2, 4
F_SEAL_FUTURE_WRITE = 0x10
F_ADD_SEALS, F_GET_SEALS = 1033, 1034

failures = 0
procs = []


def check(cond, what):
    global failures
    print("%s  %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failures += 1
    return cond


def uid_of(name):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def gid_of(name):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


# ---- the daemon ----

class Daemon(goblin.Daemon):
    """goblin-store serving the link on <sock> alone (no memcache port),
    with <args> and at most <nofile> descriptors, its log <work>/<name>.log.
    Started at once and waited for until the socket is there and the log
    says ready, it exits, or 20 s pass: up() tells which."""

    def __init__(self, work, name, sock, args=(), nofile=None):
        def limit():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        super().__init__(name, lambda port: goblin.store_argv(
            0, "--cores", "1", *args, memory="8M", sub_memory="4M",
            mlock=False, http=True, sock=sock), ready_timeout=20,
            log=os.path.join(work, name + ".log"), sock=sock, preexec=limit)
        self.log = self.log_path
        self.spawn()
        self.p = self.proc
        procs.append(self.p)
        self.wait_ready()

    def _ready(self):
        try:
            return stat.S_ISSOCK(os.lstat(self.sock).st_mode) and \
                "ready" in self.text()
        except FileNotFoundError:
            return False

    def up(self):
        return self.alive()

    def text(self):
        with open(self.log) as f:
            return f.read()

    def exited(self, timeout=20):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """SIGTERM; the exit status, or None when it took over 20 s (then
        it is killed)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.exited(20)
        super().stop()
        return rc


# ---- a worker's side of the ring, in Python ----

class Refused(Exception):
    pass


def hello(sq=16, n_rx=2, n_tx=2):
    return struct.pack("<6I", RING_MAGIC, RING_VERSION, sq, n_rx, n_tx,
                       os.getpid())


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recv_welcome(s):
    """(res, ring_size, region_size, fds), or Refused on EOF; the
    store's identity is left in recv_welcome.store_id."""
    try:
        msg, fds, _, _ = socket.recv_fds(s, 64, 2)
    except (ConnectionResetError, BrokenPipeError):
        raise Refused("reset")
    if not msg:
        raise Refused("closed")
    magic, ver, res, _, ring_size, region_size, recv_welcome.store_id = \
        struct.unpack("<IIiIQQQ", msg)
    return res, ring_size, region_size, fds


class Worker:
    def __init__(self, path, sq=16, n_rx=2, n_tx=2, bare=False):
        """<bare>: attach, then keep only the socket."""
        self.s = connect(path)
        try:
            self.s.sendall(hello(sq, n_rx, n_tx))
        except (ConnectionResetError, BrokenPipeError):
            self.s.close()     # turned away before the hello went out
            raise Refused("closed before the hello")
        res, self.ring_size, self.region_size, fds = recv_welcome(self.s)
        if res or bare:
            for fd in fds:
                os.close(fd)
            if res:
                raise Refused("welcome res %d" % res)
            self.m = None
            return
        self.region_fd, self.ring_fd = fds
        self.m = mmap.mmap(self.ring_fd, self.ring_size)
        self.m32 = None
        (_, _, self.sq, self.cq, self.n_rx, self.n_tx, self.buf_size, _,
         self.sq_off, self.cq_off, self.buf_off, _) = \
            struct.unpack_from("<8I4Q", self.m, 0)
        self.ud = 0

    # ring_hdr: 64 bytes of geometry, then sq {head, tail, wait} and cq
    # {head, tail, wait}, each index on its own 64-byte line
    def idx(self, q, which):
        return 64 + q * 192 + which * 64

    def u32(self, off, v=None):
        # one aligned 32-bit load or store: struct.pack_into writes byte by
        # byte, and the daemon could see a torn index (255 -> 256 reads 0)
        if self.m32 is None:
            self.m32 = memoryview(self.m).cast("I")
        if v is None:
            return self.m32[off // 4]
        self.m32[off // 4] = v & 0xffffffff

    def submit(self, op, key=b"", handle=0, off=0, length=0, buf=0,
               flags=0, exptime=0, grant=0, cond=0, opflags=0, attr_len=0):
        self.ud += 1
        tail = self.u32(self.idx(0, 1))
        slot = self.sq_off + (tail & (self.sq - 1)) * 320
        struct.pack_into("<QBBHIQQIIq", self.m, slot, self.ud, op, cond,
                         len(key), handle, off, length, buf, flags, exptime)
        self.m[slot + 48:slot + 48 + 256] = key.ljust(256, b"\0")
        struct.pack_into("<QII", self.m, slot + 304, grant, opflags, attr_len)
        self.u32(self.idx(0, 1), tail + 1)
        self.s.send(b"\1")
        return self.ud

    def cqe(self, timeout=10):
        """The next completion as a dict, or None once the daemon closed."""
        deadline = time.time() + timeout
        while True:
            head = self.u32(self.idx(1, 0))
            if head != self.u32(self.idx(1, 1)):
                slot = self.cq_off + (head & (self.cq - 1)) * 104
                f = struct.unpack_from("<QIiIIQQQQqqQQIIII", self.m, slot)
                self.u32(self.idx(1, 0), head + 1)
                return dict(ud=f[0], op=f[1], res=f[2], handle=f[3],
                            buf=f[4], off=f[5], len=f[6], size=f[7],
                            head_off=f[11], head_len=f[12], cas=f[8],
                            mtime=f[9], exptime=f[10], flags=f[13],
                            attr_len=f[14], state=f[15])
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no completion in %ds" % timeout)
            r, _, _ = select.select([self.s], [], [], left)
            if r:
                try:
                    if not self.s.recv(256):
                        return None
                except ConnectionResetError:
                    return None

    # ---- whole operations, one at a time (a test's, not nginx's way) ----

    def wait(self, ud, timeout=10):
        """The completion of submission <ud>; TXDONEs and others that come
        first are kept in self.early (a list)."""
        if not hasattr(self, "early"):
            self.early = []
        for i, c in enumerate(self.early):
            if c["ud"] == ud and c["op"] != OP["TXDONE"]:
                return self.early.pop(i)
        while True:
            c = self.cqe(timeout)
            if c is None:
                raise EOFError("the daemon closed the worker")
            if c["ud"] == ud and c["op"] != OP["TXDONE"]:
                return c
            self.early.append(c)

    def tx_free(self, buf):
        """Waits for the TXDONE of tx buffer <buf>."""
        if not hasattr(self, "early"):
            self.early = []
        for i, c in enumerate(self.early):
            if c["op"] == OP["TXDONE"] and c["buf"] == buf:
                self.early.pop(i)
                return
        while True:
            c = self.cqe()
            if c is None:
                raise EOFError("the daemon closed the worker")
            if c["op"] == OP["TXDONE"] and c["buf"] == buf:
                return
            self.early.append(c)

    def tx_buf(self, i):
        start = self.buf_off + (self.n_rx + i) * self.buf_size
        return start

    def rx_bytes(self, buf, n):
        start = self.buf_off + buf * self.buf_size
        return bytes(self.m[start:start + n])

    def put(self, key, value, attrs=b"", cond=0, cas=0, attr_len=None):
        """WOPEN (<attrs> first in the WDATAs, attr_len their length unless
        given), WDATAs through tx buffer 0, WFINISH with <cond>, <cas>:
        the WOPEN completion when it failed, else the WFINISH's."""
        body = attrs + value
        ud = self.submit(OP["WOPEN"], key=key, length=len(value),
                         attr_len=len(attrs) if attr_len is None else attr_len)
        c = self.wait(ud)
        if c["res"]:
            return c
        h = c["handle"]
        for off in range(0, len(body), self.buf_size):
            piece = body[off:off + self.buf_size]
            start = self.tx_buf(0)
            self.m[start:start + len(piece)] = piece
            self.submit(OP["WDATA"], handle=h, buf=0, length=len(piece))
            self.tx_free(0)
        return self.wait(self.submit(OP["WFINISH"], handle=h, cond=cond,
                                     off=cas))

    def lookup(self, key, attr=True):
        """LOOKUP (with RING_LOOKUP_ATTR when <attr>): (cqe, attribute
        bytes or None when it handed no buffer over); the rx buffer goes
        back at once."""
        c = self.wait(self.submit(OP["LOOKUP"], key=key,
                                  opflags=0x2 if attr else 0))
        got = None
        if c["res"] == 0 and c["buf"] != 0xffffffff:
            got = self.rx_bytes(c["buf"], c["attr_len"])
            self.submit(OP["BUFREL"], buf=c["buf"])
        return c, got

    def read(self, handle, size):
        """READ of the whole value of <handle>: its bytes, or None when
        the READ failed."""
        ud = self.submit(OP["READ"], handle=handle, off=0, length=size)
        got = bytearray()
        while True:
            c = self.cqe()
            if c is None:
                return None
            if c["op"] == OP["DATA"] and c["ud"] == ud:
                got[c["off"]:c["off"] + c["len"]] = self.rx_bytes(c["buf"],
                                                                  c["len"])
                self.submit(OP["BUFREL"], buf=c["buf"])
            elif c["op"] == OP["READ"] and c["ud"] == ud:
                return bytes(got) if c["res"] == 0 else None
            else:
                if not hasattr(self, "early"):
                    self.early = []
                self.early.append(c)

    def get(self, key):
        """(attribute bytes or None, value bytes or None, cqe): LOOKUP_ATTR,
        READ of the whole value (its head from the region when it is
        there), RELEASE."""
        c, attrs = self.lookup(key)
        if c["res"]:
            return None, None, c
        value = self.read(c["handle"], c["size"])
        self.submit(OP["RELEASE"], handle=c["handle"])
        return attrs, value, c

    def setattr(self, handle, attrs, length=None, exptime=0):
        """SETATTR of <attrs> (and <exptime>, when not 0) through tx buffer
        1: its completion."""
        start = self.tx_buf(1)
        self.m[start:start + len(attrs)] = attrs
        return self.wait(self.submit(OP["SETATTR"], handle=handle, buf=1,
                                     length=len(attrs) if length is None
                                     else length, exptime=exptime))

    def delete(self, key, cas=0):
        return self.wait(self.submit(OP["DELETE"], key=key, off=cas))

    def stats(self):
        self.submit(OP["STATS"])
        c = self.cqe()
        start = self.buf_off + c["buf"] * self.buf_size
        text = bytes(self.m[start:start + c["len"]]).decode()
        self.submit(OP["BUFREL"], buf=c["buf"])
        # counters as numbers; version, store_id, rusage_* as text
        return dict((n, int(v) if v.isdigit() else v)
                    for n, v in (l.split(" ", 1)
                                 for l in text.splitlines() if l))

    def closed(self, timeout=10):
        """True once the daemon has closed this worker's socket."""
        self.s.settimeout(timeout)
        try:
            while self.s.recv(256):
                pass
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self):
        if self.m is not None:
            if self.m32 is not None:
                self.m32.release()
                self.m32 = None
            self.m.close()
            os.close(self.region_fd)
            os.close(self.ring_fd)
        self.s.close()


def as_user(uid, gid, groups, fn):
    """Runs <fn> in a child with those credentials; returns what it
    returns (JSON-able), or {"error": ...}."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            out = fn()
        except BaseException as e:    # report, never fall back into the test
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": "child died"}


def try_attach(path):
    """What an unprivileged process gets from the socket at <path>."""
    def attempt():
        try:
            s = connect(path)
        except PermissionError:
            return {"result": "EACCES"}
        try:
            s.sendall(hello())
            res, _, _, fds = recv_welcome(s)
            for fd in fds:
                os.close(fd)
            return {"result": "attached" if res == 0 else "res %d" % res}
        except Refused:
            return {"result": "refused"}
        except (BrokenPipeError, ConnectionResetError):
            return {"result": "refused"}
    return attempt


def mode_of(path):
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), st.st_gid



def main(checks):
    """Runs each of <checks> (functions of the work directory); returns
    0 when every check passed, 1 otherwise, 77 when not root or not
    built."""
    global failures
    if os.geteuid() != 0:
        print("needs root (second uids through setuid)")
        return 77
    if not os.access(STORE, os.X_OK):
        print("goblin-store not built at %s" % STORE)
        return 77
    work = tempfile.mkdtemp(prefix="goblin-link.", dir="/var/tmp")
    os.chmod(work, 0o755)
    try:
        for fn in checks:
            fn(work)
    except BaseException:
        failures += 1		# show the daemons' logs below
        raise
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if failures:
            for name in sorted(os.listdir(work)):
                if name.endswith(".log"):
                    print("---- %s" % name)
                    with open(os.path.join(work, name)) as f:
                        print("".join(f.readlines()[-15:]))
        shutil.rmtree(work, ignore_errors=True)
    print("%s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0
