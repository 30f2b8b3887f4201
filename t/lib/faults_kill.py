"""usage: from faults_kill import scenario_kill

t/daemon/faults.test's kill scenario, through nginx: EIO and a stall under
HTTP GETs and PUTs, kill -9 of goblin-store under mixed memcache and HTTP
load, then of the nginx workers (under a slow reader, then under PUTs).
"""
import os
import random
import threading
import time

import faults as F
import faults_common as C
from faults import KIB, MIB, Mc, value, size_of, judge
from faults_common import check, load, read_all, disk_objects, ram_objects, pool_ranges


class ClientThreads:
    """<clients> threads each running self.run_client(i)."""

    def start(self):
        self.threads = [threading.Thread(target=self.run_client, args=(i,))
                        for i in range(self.clients)]
        for t in self.threads:
            t.start()
        return self


class MixedLoad(ClientThreads):
    """Memcache clients doing set/get/delete on keys of their own; each
    knows what its keys must hold, so every get is judged."""

    def __init__(self, store, clients=4, keys=8, seed=1):
        self.store = store
        self.clients = clients
        self.keys = keys
        self.seed = seed
        self.stop = threading.Event()
        self.ops = 0
        self.wrong = []
        self.cuts = 0
        self.threads = []
        self.lock = threading.Lock()

    def run_client(self, ci):
        rnd = random.Random(self.seed * 100 + ci)
        keys = ["m%d-%d-%d" % (self.seed, ci, i) for i in range(self.keys)]
        state = {k: None for k in keys}      # version stored, None: absent
        doubt = {}                            # key -> versions a lost reply may have left
        version = 0
        try:
            c = Mc(self.store.port)
        except OSError:
            return
        while not self.stop.is_set():
            k = rnd.choice(keys)
            op = rnd.random()
            try:
                if op < 0.35:
                    version += 1
                    v = value(k, version, size_of(k, version, 100, 700 * KIB))
                    doubt[k] = [state[k], version]
                    r = c.set(k, v)
                    if r == "STORED":
                        state[k] = version
                    elif not r.startswith("SERVER_ERROR"):
                        raise ValueError("set %s: %r" % (k, r))
                    doubt.pop(k, None)
                elif op < 0.5:
                    doubt[k] = [state[k], None]
                    r = c.cmd("delete %s" % k)
                    if r not in ("DELETED", "NOT_FOUND"):
                        raise ValueError("delete %s: %r" % (k, r))
                    state[k] = None
                    doubt.pop(k, None)
                else:
                    outcome, got = c.get(k)
                    if outcome == "cut":
                        raise F.Cut("get")
                    allowed = doubt.get(k, [state[k]])
                    want = [None if ver is None else
                            value(k, ver, size_of(k, ver, 100, 700 * KIB)) for ver in allowed]
                    why = judge(outcome, got, want)
                    if outcome == "miss" and None not in allowed:
                        why = "acknowledged object missing"
                        F.TALLY.add("acked_lost")
                    if why:
                        with self.lock:
                            self.wrong.append("%s: %s" % (k, why))
                with self.lock:
                    self.ops += 1
            except (F.Cut, OSError):
                with self.lock:
                    self.cuts += 1
                return
        c.close()

    def finish(self, timeout=30):
        self.stop.set()
        for t in self.threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self.threads)


class HttpLoad(ClientThreads):
    """HTTP GETs of known objects through nginx; records every status and
    checks every 200 body; a cut body is not a wrong one."""

    def __init__(self, ngx, objs, clients=3):
        self.ngx = ngx
        self.objs = objs
        self.clients = clients
        self.stop = threading.Event()
        self.statuses = []          # (time, status)
        self.wrong = []
        self.lock = threading.Lock()
        self.threads = []

    def run_client(self, ci):
        rnd = random.Random(ci)
        keys = list(self.objs)
        while not self.stop.is_set():
            k = rnd.choice(keys)
            try:
                st, body = self.ngx.request("GET", "/obj/" + k, timeout=15)
            except F.http.client.IncompleteRead as e:
                st, body = "cut", e.partial
            except (OSError, F.http.client.HTTPException):
                st, body = "conn", b""
            why = ""
            if st == 200:
                why = F.judge("hit", body, self.objs[k])
            elif st == "cut":
                why = F.judge("cut", body, self.objs[k])
            F.TALLY.add("http_" + str(st))
            with self.lock:
                self.statuses.append((time.monotonic(), st))
                if why:
                    self.wrong.append("%s: %s" % (k, why))
            if st not in (200, 404):
                time.sleep(0.02)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def between(self, t0, t1):
        with self.lock:
            return [s for t, s in self.statuses if t0 <= t <= t1]


def http_get(ngx, key, want, rng=None):
    """GET /obj/<key> through nginx, of bytes <rng> = (first, last) if given:
    (status or "cut"/"conn", why wrong or "")."""
    try:
        st, body = ngx.request("GET", "/obj/" + key, headers={
            "Range": "bytes=%d-%d" % rng} if rng else None)
    except F.http.client.IncompleteRead as e:
        st, body = "cut", e.partial
    except (OSError, F.http.client.HTTPException):
        st, body = "conn", b""
    F.TALLY.add("http_" + str(st))
    part = want[rng[0]:rng[1] + 1] if rng else want
    why = ""
    if st == 200:
        why = F.judge("hit", body, want)
    elif st == 206:
        why = F.judge("hit", body, part) if rng else "206 without a Range"
    elif st == "cut":
        why = F.judge("cut", body, part if rng else want)
    return st, why


def http_faults(dev, ngx, store, objs):
    """EIO on pool reads under HTTP GETs and Range GETs (whole and right,
    cut, or an error status; never wrong bytes; no pin left), EIO on the
    writes of a PUT (an error status, nothing stored)."""
    ranges = pool_ranges(dev)
    dev.fault("read-eio", ranges, "every 3")
    keys, tally, wrong = sorted(objs), {}, []
    rnd = random.Random(5)
    for i in range(16 * C.SCALE):
        k = keys[i % len(keys)]
        first = rnd.randrange(len(objs[k]))
        rng = (first, min(len(objs[k]) - 1, first + rnd.randrange(MIB))) if i % 2 else None
        st, why = http_get(ngx, k, objs[k], rng)
        tally[st] = tally.get(st, 0) + 1
        if why or st not in (200, 206, 404, 500, 502, 503, 504, "cut", "conn"):
            wrong.append("%s: %s %s" % (k, st, why))
    dev.ctl("read-eio off")
    check(not wrong, "http read-eio every 3: GETs whole and right, cut or refused, never "
          "wrong bytes (%s)%s" % (tally, ": " + "; ".join(wrong[:3]) if wrong else ""))
    check(sum(n for st, n in tally.items() if st != 200) > 0,
          "http read-eio every 3: some GETs failed")
    check(F.wait_for(lambda: store.stats()["pins"] == 0, 10),
          "http read-eio: the daemon's pins went back to 0")
    check(load(store, objs), "http read-eio: objects stored again")
    bad = [k for k in keys if http_get(ngx, k, objs[k]) != (200, "")]
    check(not bad, "http read-eio: every object right through nginx once the fault "
          "is off%s" % (": not " + ", ".join(bad) if bad else ""))

    # a Range past the head has nothing to send before its disk read: a
    # failed read is answered 502, not with an empty reply
    k = keys[0]
    dev.fault("read-eio", ranges, "count 1")
    st, why = http_get(ngx, k, objs[k], (len(objs[k]) - 100000, len(objs[k]) - 1))
    dev.ctl("read-eio off")
    check(st == 502 and not why, "http read-eio: a Range GET past the head whose "
          "read fails gets 502 (got %s%s)" % (st, " " + why if why else ""))
    check(load(store, {k: objs[k]}), "http read-eio: %s stored again" % k)

    # a stalled device holds no RAM-tier HTTP GET
    ram = ram_objects("hr", 6)
    check(load(store, ram), "http stall: RAM-tier objects STORED")
    res = {}
    dev.ctl("stall 4s")
    t_stall = time.monotonic()
    t = threading.Thread(target=lambda: res.update(got=http_get(ngx, "h0", objs["h0"])))
    t.start()
    worst, fails = 0.0, []
    while time.monotonic() < t_stall + 2.5:
        k = random.choice(sorted(ram))
        t0 = time.monotonic()
        st, why = http_get(ngx, k, ram[k])
        worst = max(worst, time.monotonic() - t0)
        if st != 200 or why:
            fails.append("%s: %s %s" % (k, st, why))
        time.sleep(0.05)
    check(not fails and worst < 1.0 and t.is_alive(),
          "http stall: RAM-tier GETs through nginx went on while a disk-tier GET "
          "waited on the stalled device (slowest %.0f ms)%s" % (
              worst * 1e3, ": " + "; ".join(fails[:3]) if fails else ""))
    t.join(30)
    dev.ctl("stall 0")
    st, why = res.get("got", ("none", "no answer"))
    check(st in (200, "cut") and not why,
          "http stall: the stalled disk-tier GET ended %s, bytes right %s" % (st, why))

    for kind in ("write-eio", "write-enospc"):
        key = "h-put-" + kind
        put = value(key, 1, 2 * MIB)
        dev.fault(kind, ranges)
        st = ngx.request("PUT", "/obj/" + key, body=put)[0]
        dev.ctl(kind + " off")
        F.TALLY.add("sets_refused", st >= 500)
        check(st >= 500, "http %s: a PUT whose pool writes fail gets %d (5xx)" % (kind, st))
        st, why = http_get(ngx, key, put)
        check(st == 404, "http %s: and stores nothing (GET: %s)" % (kind, st))
        st = ngx.request("PUT", "/obj/" + key, body=put)[0]
        check(st in (201, 204) and http_get(ngx, key, put) == (200, ""),
              "http %s: PUT works again once the fault is off (%d)" % (kind, st))


def http_put_all(ngx, objs):
    return all(ngx.request("PUT", "/obj/" + k, body=v)[0] in (201, 204)
               for k, v in objs.items())


def scenario_kill(dev, store, work):
    for rnd in range(C.SCALE):
        kill_round(dev, store, work, rnd)


def kill_round(dev, store, work, rnd):
    have_nginx = os.path.exists(F.module_path()) and os.access("/usr/sbin/nginx", os.X_OK)
    ngx = F.Nginx(work, store).start() if have_nginx else None
    if not have_nginx:
        print("# kill: HTTP part skipped: %s or /usr/sbin/nginx missing (make module)"
              % F.module_path())
    objs = disk_objects("h", 8)
    check(load(store, objs), "kill: 8 disk-tier objects STORED")
    if ngx:
        http_faults(dev, ngx, store, objs)
    mixed = MixedLoad(store, seed=10 * rnd + 1).start()
    hl = HttpLoad(ngx, objs).start() if ngx else None
    time.sleep(1.5)                         # load runs
    pid = store.proc.pid
    store.kill9()
    t_down = time.monotonic()
    check(mixed.finish(), "kill: the memcache clients saw the daemon go")
    check(not mixed.wrong and mixed.ops > 0,
          "kill: %d mixed set/get/delete ops before kill -9 %d, no wrong bytes, "
          "no acknowledged object lost%s" % (mixed.ops, pid,
                                             ": " + "; ".join(mixed.wrong[:3]) if mixed.wrong else ""))
    if hl:
        F.wait_for(lambda: len(hl.between(t_down + 0.3, time.monotonic())) >= 5, 10)
    t_up = time.monotonic()
    store.start()
    check(store.alive(), "kill: goblin-store restarts on the same pools and socket")
    # warm restart: what was acknowledged before kill -9 is served again
    read_all(store, objs, "kill: after the restart, the %d disk-tier objects" % len(objs))
    check(int(store.stats()["curr_items"]) >= len(objs),
          "kill: curr_items counts the recovered objects")
    if hl:
        check(F.wait_for(lambda: 200 in hl.between(t_up, time.monotonic()), 10),
              "kill: nginx reaches the restarted daemon (200: the objects survived)")
        down = hl.between(t_down + 0.3, t_up)
        check(down and set(down) <= {502, 503, "cut"},
              "kill: nginx answered 502/503 while the daemon was gone (%s)"
              % sorted(set(map(str, down))))
        # each worker reattaches on its own backoff (up to 2 s): a 200
        # through one does not mean the other is back yet
        check(F.wait_for(lambda: http_put_all(ngx, objs), 10),
              "kill: PUT through nginx works again")
        check(F.wait_for(lambda: 200 in hl.between(time.monotonic() - 0.5, time.monotonic()), 10),
              "kill: GETs through nginx are 200 again")
    mixed = MixedLoad(store, seed=10 * rnd + 2).start()
    time.sleep(1.0)
    check(mixed.finish() and not mixed.wrong and mixed.ops > 0 and mixed.cuts == 0,
          "kill: mixed load on the restarted daemon: %d ops, no wrong bytes%s"
          % (mixed.ops, ": " + "; ".join(mixed.wrong[:3]) if mixed.wrong else ""))
    if not hl:
        if not ngx:
            check(load(store, objs), "kill: objects stored again")
        read_all(store, objs, "kill: after the restart")
        return

    # kill -9 of the nginx workers while one is held mid-response by a
    # client that stopped reading a disk-tier object (so it holds a pin)
    big = value("h-big", 1, 6 * MIB)
    check(ngx.request("PUT", "/obj/h-big", body=big)[0] == 201, "kill: PUT of a 6 MiB object")
    slow = F.socket.create_connection(("127.0.0.1", ngx.port), timeout=10)
    slow.setsockopt(F.socket.SOL_SOCKET, F.socket.SO_RCVBUF, 4096)
    slow.sendall(b"GET /obj/h-big HTTP/1.1\r\nHost: x\r\n\r\n")
    first = slow.recv(4096)
    check(first.startswith(b"HTTP/1.1 200"), "kill: a slow client is reading h-big")
    check(F.wait_for(lambda: store.stats()["pins"] > 0, 10),
          "kill: the daemon holds pins for nginx before the kill")
    replaced, victims = kill9_workers(ngx)
    check(replaced, "kill: nginx's master replaced the killed workers %s" % victims)
    slow.close()
    time.sleep(1.0)                         # load runs on the new workers
    hl.finish()
    check(not hl.wrong, "kill: %d HTTP GETs, no wrong bytes%s" % (
        len(hl.statuses), ": " + "; ".join(hl.wrong[:3]) if hl.wrong else ""))
    check(F.wait_for(lambda: store.stats()["pins"] == 0, 10),
          "kill: the daemon's pins went back to 0 (pins %d)" % store.stats()["pins"])
    ring = ngx.status_json().get("storaged", {})
    check(ring.get("ring_pins") == 0, "kill: ring_pins is 0 (%s)" % ring.get("ring_pins"))
    read_all(store, objs, "kill: after the worker was killed (memcache)")
    bad = [k for k, v in objs.items() if ngx.request("GET", "/obj/" + k) != (200, v)]
    check(not bad, "kill: every object byte-exact through nginx%s" % (
        ": not " + ", ".join(bad) if bad else ""))
    kill_workers_under_puts(ngx, store, rnd)
    ngx.stop()


def kill9_workers(ngx):
    """kill -9 of every nginx worker: (whether the master replaced them
    all within 10 s, their pids)."""
    victims = ngx.worker_pids()
    for pid in victims:
        F.os.kill(pid, F.signal.SIGKILL)
        F.TALLY.add("worker_kill9")
    return F.wait_for(lambda: len(ngx.worker_pids()) == 2 and
                      not set(victims) & set(ngx.worker_pids()), 10), victims


def kill_workers_under_puts(ngx, store, rnd):
    """kill -9 of the nginx workers while PUTs stream into the daemon: the
    aborted PUTs store nothing, their admission is given back, the
    acknowledged ones read back right."""
    stop, res, lock = threading.Event(), [], threading.Lock()
    size = 3 * MIB

    def putter(i):
        n = 0
        while not stop.is_set():
            n += 1
            k = "u%d-%d-%d" % (rnd, i, n)
            try:
                st = ngx.request("PUT", "/obj/" + k, body=value(k, 1, size), timeout=30)[0]
            except (OSError, F.http.client.HTTPException):
                st = "conn"
            with lock:
                res.append((k, st))

    errs0 = ngx.status_json().get("storaged", {}).get("ring_store_errors", 0)
    ts = [threading.Thread(target=putter, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    F.wait_for(lambda: len(res) >= 4, 10)
    replaced, victims = kill9_workers(ngx)
    check(replaced, "kill: nginx's master replaced the workers killed under PUTs")
    n0 = len(res)
    F.wait_for(lambda: len(res) >= n0 + 4, 10)     # PUTs go on through the new workers
    stop.set()
    for t in ts:
        t.join(60)
    acked = [k for k, st in res if st in (201, 204)]
    failed = [k for k, st in res if st not in (201, 204)]
    check(F.wait_for(lambda: store.stats()["admission_bytes"] == 0, 10),
          "kill: admission_bytes back to 0 after PUTs were cut (%d)"
          % store.stats()["admission_bytes"])
    # a PUT cut before its first body bytes reached the daemon is no
    # store error there: the count is reported, not checked
    errs = ngx.status_json().get("storaged", {}).get("ring_store_errors", 0) - errs0
    c = Mc(store.port)
    bad = []
    for k in acked + failed:
        outcome, got = c.get(k)
        if judge(outcome, got, value(k, 1, size) if k in acked else [value(k, 1, size), None]) \
                or (k in acked and outcome != "hit"):
            bad.append("%s:%s" % (k, outcome))
    c.close()
    check(acked and not bad, "kill: %d acknowledged PUTs read back right, %d cut ones "
          "left nothing partial (ring_store_errors +%d)%s" % (
              len(acked), len(failed), errs, ": " + ", ".join(bad[:3]) if bad else ""))
