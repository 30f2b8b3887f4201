"""usage: from faults_io import scenario_read_eio, scenario_tiers, ...

t/daemon/faults.test's device scenarios: EIO on pool reads (read-eio) and
on two tiers (tiers), EIO and ENOSPC on pool writes (write), a device that
answers nothing for seconds (stall).
"""
import random
import threading
import time

import faults as F
import faults_common as C
from faults import KIB, MIB, Mc, value, size_of, judge
from faults_common import check, load, read_all, disk_objects, ram_objects, pool_ranges


# ---- read-eio ----

def scenario_read_eio(dev, store):
    n = 12 * C.SCALE
    disk, ram = disk_objects("r", n), ram_objects("s", 10)
    check(load(store, {**disk, **ram}), "read-eio: %d disk-tier and 10 RAM-tier objects STORED" % n)
    read_all(store, {**disk, **ram}, "read-eio: before the fault")
    ranges = pool_ranges(dev)
    st0, inj0 = store.stats(), dev.counter("injected_read_eio")

    dev.fault("read-eio", ranges, "count 1")
    c = Mc(store.port)
    outcome, got = c.get("r0")
    c.close()
    why = judge(outcome, got, disk["r0"])
    check(outcome in ("cut", "error") and not why,
          "read-eio: one failed pool read: get r0 is %s (%s bytes of the value, "
          "a correct prefix) %s" % (outcome, len(got) if got else 0, why))
    check(dev.counter("injected_read_eio") - inj0 == 1, "read-eio: the model failed one read")
    check(F.wait_for(lambda: store.stats()["io_errors"] > st0["io_errors"], 5),
          "read-eio: io_errors counts it")
    c = Mc(store.port)
    outcome, got = c.get("r0")
    c.close()
    check(outcome == "miss" or (outcome == "hit" and got == disk["r0"]),
          "read-eio: r0 afterwards misses or is whole (%s)" % outcome)
    rest = {k: v for k, v in {**disk, **ram}.items() if k != "r0"}
    read_all(store, rest, "read-eio: the other objects after one failed read")

    # every 3rd pool read fails, several clients: never wrong bytes
    dev.fault("read-eio", ranges, "every 3")
    tally, wrong, lock = {}, [], threading.Lock()

    def reader(seed):
        rnd = random.Random(seed)
        c = Mc(store.port)
        for _ in range(24 * C.SCALE):
            k = rnd.choice(list(rest))
            outcome, got = c.get(k)
            why = judge(outcome, got, [rest[k], None])
            with lock:
                tally[outcome] = tally.get(outcome, 0) + 1
                if why:
                    wrong.append("%s: %s" % (k, why))
                if k.startswith("s") and outcome != "hit":
                    wrong.append("%s: RAM-tier object %s" % (k, outcome))
            if outcome == "cut":
                c.close()
                c = Mc(store.port)
        c.close()

    # a writer overwrites its own objects meanwhile, so the extents of
    # objects dropped for a failed read are freed and taken again
    written, stop = {}, threading.Event()

    def writer():
        c = Mc(store.port)
        ver = 0
        while not stop.is_set():
            ver += 1
            k = "x%d" % (ver % 5)
            v = value(k, ver, size_of(k, ver, 100 * KIB, 1200 * KIB))
            r = c.set(k, v)
            if r == "STORED":
                written[k] = v
            elif not r.startswith("SERVER_ERROR"):
                wrong.append("set %s: %r" % (k, r))
        c.close()

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(3)]
    tw = threading.Thread(target=writer)
    tw.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    tw.join(60)
    dev.ctl("read-eio off")
    check(not any(t.is_alive() for t in threads + [tw]), "read-eio every 3: the readers finished")
    read_all(store, written, "read-eio: objects written while reads failed")
    check(not wrong, "read-eio every 3: no wrong bytes, RAM tier unaffected "
          "(outcomes %s)%s" % (tally, ": " + "; ".join(wrong[:3]) if wrong else ""))
    check(tally.get("cut", 0) + tally.get("error", 0) > 0,
          "read-eio every 3: some gets were cut or refused")
    check(store.alive(), "read-eio: the daemon kept serving")
    # buffers and pins of the failed streams were given back: new objects
    # stream fine through the same small window pool
    again = disk_objects("r", n, version=2)
    check(load(store, again), "read-eio: every disk object stored again")
    read_all(store, {**again, **ram}, "read-eio: after the faults are off")
    check(F.wait_for(lambda: store.stats()["pins"] == 0, 5), "read-eio: pins back to 0")


# ---- two tiers ----

def scenario_tiers(ssd, hdd, store):
    """SSD prefix and HDD tail on two devices: EIO on the tail (read first)
    or on the prefix cuts a GET after a correct prefix; while the HDD
    stalls, objects that end on the SSD are served on."""
    big = disk_objects("b", 6 * C.SCALE, lo=1200 * KIB, hi=3 * MIB)     # head, prefix, tail
    small = disk_objects("p", 6, lo=100 * KIB, hi=500 * KIB)           # head and prefix only
    check(load(store, {**big, **small}), "tiers: objects STORED on both tiers")
    st = store.stats()
    check(st["ssd_objects"] >= len(big) + len(small) and st["hdd_objects"] >= len(big),
          "tiers: prefixes on the SSD, tails on the HDD (%d, %d objects)"
          % (st["ssd_objects"], st["hdd_objects"]))
    keys = sorted(big)
    for dev, name, key in ((hdd, "HDD tail", keys[0]), (ssd, "SSD prefix", keys[1])):
        inj0 = dev.counter("injected_read_eio")
        dev.fault("read-eio", pool_ranges(dev), "count 1")
        c = Mc(store.port)
        outcome, got = c.get(key)
        c.close()
        dev.ctl("read-eio off")
        why = judge(outcome, got, big[key])
        check(outcome in ("cut", "error") and not why and
              dev.counter("injected_read_eio") == inj0 + 1,
              "tiers: EIO on the %s: get is %s after %d correct bytes %s"
              % (name, outcome, len(got or b""), why))
        del big[key]
    read_all(store, {**big, **small}, "tiers: the other objects after the EIOs")

    res = {}
    hdd.ctl("stall 4s")
    t_stall = time.monotonic()
    t = threading.Thread(target=lambda: res.update(got=Mc(store.port, timeout=30).get(keys[2])))
    t.start()
    worst, bad = 0.0, []
    c = Mc(store.port)
    while time.monotonic() < t_stall + 2.5:
        k = random.choice(sorted(small))
        t0 = time.monotonic()
        outcome, got = c.get(k)
        worst = max(worst, time.monotonic() - t0)
        if outcome != "hit" or judge(outcome, got, small[k]):
            bad.append(k)
        time.sleep(0.05)
    c.close()
    check(not bad and worst < 1.0 and t.is_alive(),
          "tiers: while the HDD stalls, objects on RAM and SSD are served on "
          "(slowest %.0f ms)%s" % (worst * 1e3, ": not " + ", ".join(bad) if bad else ""))
    t.join(30)
    hdd.ctl("stall 0")
    outcome, got = res.get("got", ("none", None))
    check(outcome in ("hit", "cut") and not judge(outcome, got, big[keys[2]]),
          "tiers: the GET held by the HDD stall ended %s, bytes right" % outcome)
    check(F.wait_for(lambda: store.stats()["pins"] == 0, 5), "tiers: pins back to 0")


# ---- write-eio / write-enospc ----

def scenario_write(dev, store):
    for rnd in range(C.SCALE):
        write_round(dev, store, rnd)


def write_round(dev, store, rnd):
    ranges = pool_ranges(dev)
    old = value("w-old", 1, MIB)
    check(load(store, {"w-old": old}), "write: w-old v1 STORED")
    for kind, counter in (("write-eio", "injected_write_eio"),
                          ("write-enospc", "injected_write_enospc")):
        st0, inj0 = store.stats(), dev.counter(counter)
        dev.fault(kind, ranges)
        c = Mc(store.port)
        try:
            key = "w-%s-%d" % (kind, rnd)
            reply = c.set(key, value(key, 1, MIB + 4321))
            check(reply.startswith("SERVER_ERROR"),
                  "%s: a 1 MiB set gets SERVER_ERROR (%r)" % (kind, reply))
            outcome, got = c.get(key)
            check(outcome == "miss", "%s: and leaves nothing (get: %s)" % (kind, outcome))
            reply = c.set("w-old", value("w-old", 2, 2 * MIB))
            F.TALLY.add("sets_refused", reply.startswith("SERVER_ERROR"))
            check(reply.startswith("SERVER_ERROR"),
                  "%s: overwriting w-old gets SERVER_ERROR (%r)" % (kind, reply))
            outcome, got = c.get("w-old")
            check(outcome == "miss" or (outcome == "hit" and got == old),
                  "%s: w-old misses or keeps its old value, never part of the new (%s)"
                  % (kind, outcome))
            small = value("w-ram", 1, 3000)
            check(c.set("w-ram", small) == "STORED" and c.get("w-ram") == ("hit", small),
                  "%s: a RAM-tier set and get still work" % kind)
        finally:
            c.close()
            dev.ctl("%s off" % kind)
        check(dev.counter(counter) > inj0, "%s: the model failed writes (%s)" % (kind, counter))
        check(store.stats()["io_errors"] > st0["io_errors"], "%s: io_errors counts them" % kind)

    # one failed chunk in the middle of a multi-chunk object
    dev.fault("write-eio", ranges, "every 3", "count 1")
    c = Mc(store.port)
    try:
        reply = c.set("w-mid", value("w-mid", 1, 5 * MIB))
        check(reply.startswith("SERVER_ERROR"),
              "write-eio: one failed chunk of a 5 MiB set gets SERVER_ERROR (%r)" % reply)
        check(c.get("w-mid")[0] == "miss", "write-eio: and leaves nothing")
    finally:
        c.close()
        dev.ctl("write-eio off")
    objs = disk_objects("w%d-" % rnd, 6)
    check(load(store, objs), "write: sets work again once the faults are off")
    read_all(store, objs, "write: after the faults")
    check(store.alive(), "write: the daemon kept serving")


# ---- stall ----

def closed_within(sock, secs):
    """Reads and discards until EOF/reset; the seconds that took, or None
    if the connection stayed open for <secs>."""
    t0 = time.monotonic()
    sock.settimeout(0.5)
    while time.monotonic() - t0 < secs:
        try:
            if not sock.recv(1 << 20):
                return time.monotonic() - t0
        except TimeoutError:
            continue
        except ConnectionError:
            return time.monotonic() - t0
    return None


def scenario_stall(dev, store):
    for _ in range(C.SCALE):
        stall_round(dev, store)


def ram_ops(store, ram, until):
    """RAM-tier gets and sets on a fresh connection until <until>
    (monotonic): (slowest op in s, what failed)."""
    worst, fails = 0.0, []
    c = Mc(store.port, timeout=10)
    rnd = random.Random(7)
    while time.monotonic() < until:
        k = "t%d" % rnd.randrange(len(ram))
        t0 = time.monotonic()
        try:
            outcome, got = c.get(k)
            fresh = value("t-new", int(t0 * 1000), 2000)
            ok = outcome == "hit" and not judge(outcome, got, ram[k]) and \
                c.set("t-new", fresh) == "STORED" and c.get("t-new") == ("hit", fresh)
        except (OSError, F.Cut, ValueError) as e:
            ok = False
            fails.append(str(e))
        worst = max(worst, time.monotonic() - t0)
        if not ok:
            fails.append(k)
            break
        time.sleep(0.05)
    c.close()
    return worst, fails


def stall_round(dev, store):
    disk, ram = disk_objects("d", 3), ram_objects("t", 10)
    check(load(store, {**disk, **ram}), "stall: objects STORED")
    stall_s, timeout_s = 6, 2
    res = {}

    def slow_get():
        c = Mc(store.port, timeout=30)
        t0 = time.monotonic()
        res["get"] = c.get("d0")
        res["took"] = time.monotonic() - t0
        c.close()

    idle = Mc(store.port)
    partial = Mc(store.port)
    greedy = Mc(store.port)
    stalled0 = dev.counter("stalled")
    dev.ctl("stall %ds" % stall_s)
    t_stall = time.monotonic()
    t = threading.Thread(target=slow_get)
    t.start()
    # a client that sends part of a value, one that stops reading
    partial.send(b"set t-part 0 0 1000000\r\n" + b"x" * 1000)
    greedy.send(b"".join(b"get t%d\r\n" % (i % 10) for i in range(1000)))

    worst, fails = ram_ops(store, ram, t_stall + 2.5)
    C.RESULTS.setdefault("stall_worst_ms", []).append(round(worst * 1e3, 1))
    check(not fails and worst < 1.0,
          "stall: RAM-tier gets and sets of another client went on during a %d s "
          "device stall (slowest %.0f ms)%s" % (stall_s, worst * 1e3,
                                                 ": " + ", ".join(fails[:3]) if fails else ""))
    # an append to a disk-tier object must wait without holding the others
    appended = {}

    def append():
        c = Mc(store.port, timeout=30)
        try:
            appended["reply"] = c.set("d1", b"+tail", verb="append")
        except (F.Cut, OSError) as e:
            appended["reply"] = str(e)
        c.close()

    ta = threading.Thread(target=append)
    ta.start()
    worst, fails = ram_ops(store, ram, t_stall + stall_s - 1.5)
    check(not fails and worst < 1.0,
          "stall: an append to a disk-tier object waiting on the device holds no "
          "other client (slowest %.0f ms)" % (worst * 1e3))
    check(t.is_alive() or res.get("took", 0) >= stall_s - 0.5,
          "stall: the disk-tier get waited for the device")
    # the daemon's timers fire while its device stalls
    for name, conn, secs in (("idle", idle, "--idle-timeout"),
                             ("partial", partial, "--read-timeout"),
                             ("greedy", greedy, "--send-timeout")):
        left = t_stall + stall_s - 0.3 - time.monotonic()
        took = closed_within(conn.sock, max(left, 0.1))
        check(took is not None,
              "stall: a client %s is closed by %s %ds while the device stalls"
              % ({"idle": "idle between commands",
                  "partial": "that sent 1000 of 1000000 value bytes",
                  "greedy": "that reads none of its replies"}[name], secs, timeout_s))
        conn.close()
    t.join(30)
    ta.join(30)
    check(not ta.is_alive() and appended.get("reply") == "STORED",
          "stall: the append was STORED once the device answered (%r)" % appended.get("reply"))
    disk["d1"] = disk["d1"] + b"+tail"
    outcome, got = res.get("get", ("none", None))
    check(not t.is_alive() and outcome in ("hit", "cut") and not judge(outcome, got, disk["d0"]),
          "stall: the stalled disk-tier get ended %s, bytes right (%.1f s)"
          % (outcome, res.get("took", -1)))
    check(dev.counter("stalled") > stalled0, "stall: the model counted stalled requests")
    dev.ctl("stall 0")
    c = Mc(store.port)
    check(c.get("t-part")[0] == "miss", "stall: the unfinished set left nothing")
    c.close()
    read_all(store, {**disk, **ram}, "stall: after the stall")
