"""usage: import faults_common as C   (t/daemon/faults.test and its scenarios)

The state one run of t/daemon/faults.test shares with its scenario modules
(faults_io.py, faults_kill.py): the checks, the scale, the figures for
bench/reliability; and the helpers that store and read objects back.
"""
import os
import sys

import faults as F
from faults import KIB, Mc, value, size_of, judge

VERBOSE = "-v" in sys.argv
ASAN = "asan" in F.BUILD
ck = F.Checks(VERBOSE)
check = ck.check
SCALE = 1           # bench/reliability raises it: more objects, rounds, bytes
RESULTS = {}        # per scenario figures for bench/reliability


def log(msg):
    if VERBOSE:
        print("#   " + msg, flush=True)


def pool_args(dev, size="192M"):
    return ["--hdd-dir", os.path.join(dev.dir, "pool"), "--hdd-size", size]


def pool_ranges(dev):
    return F.file_extents(os.path.join(dev.dir, "pool", "extents"))


def load(store, objs):
    """Stores {key: bytes}; True when all were STORED."""
    c = Mc(store.port)
    try:
        return all(c.set(k, v) == "STORED" for k, v in objs.items())
    finally:
        c.close()


def read_all(store, objs, tag):
    """Every object reads back exactly; returns the keys that did not."""
    bad = []
    c = Mc(store.port)
    try:
        for k, v in objs.items():
            outcome, got = c.get(k)
            why = judge(outcome, got, v)
            if outcome != "hit" or why:
                bad.append("%s:%s %s" % (k, outcome, why))
                if outcome == "cut":
                    c.close()
                    c = Mc(store.port)
    finally:
        c.close()
    check(not bad, "%s: %d objects read back byte-exact%s" % (
        tag, len(objs), (": not " + ", ".join(bad[:5])) if bad else ""))
    return bad


def disk_objects(prefix, n, version=1, lo=300 * KIB, hi=1536 * KIB):
    return {"%s%d" % (prefix, i): value("%s%d" % (prefix, i), version,
                                         size_of("%s%d" % (prefix, i), version, lo, hi))
            for i in range(n)}


def ram_objects(prefix, n, version=1):
    return {"%s%d" % (prefix, i): value("%s%d" % (prefix, i), version,
                                         size_of("%s%d" % (prefix, i), version, 64, 60 * KIB))
            for i in range(n)}


def stop_clean(store, what):
    if store.alive():
        quiet = F.wait_for(lambda: all(store.stats()[k] == 0 for k in
                                       ("pins", "admission_bytes")), 10)
        st = store.stats()
        check(quiet, "%s: at rest, no pin and no admission held (pins %d, admission_bytes %d)"
              % (what, st["pins"], st["admission_bytes"]))
    died = not store.alive()
    rc = store.stop()
    reports = store.sanitizer_reports()
    crashed = died or rc != 0 or bool(reports) or any(x not in (0, -9) for x in store.exits)
    F.TALLY.add("crashes", int(crashed))
    F.TALLY.add("daemon_runs", len(store.exits))
    check(not crashed,
          "%s: goblin-store stopped cleanly (exit %s), no crash, no sanitizer report%s"
          % (what, rc, ": " + reports[0] if reports else ""))
