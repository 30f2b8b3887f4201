"""bench/numa/run's parts: the server per variant, warm-up, goblin-bench,
perf stat, the SSD-pool and numa_maps checks, the report."""
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("BUILD", "build")
sys.path.insert(0, os.path.join(TOP, "t", "lib"))
import goblin  # noqa: E402

STORE = os.environ.get("GOBLIN_STORE", os.path.join(TOP, BUILD, "goblin-store"))
# the hooked test build, which reads GOBLIN_TEST_NUMA (--simulate; t/hooks/)
STORE_HOOKS = os.environ.get("GOBLIN_STORE_HOOKS", os.path.join(
    os.path.dirname(STORE), "t", "goblin-store-hooks"))
BENCH = os.environ.get("GOBLIN_BENCH", os.path.join(TOP, BUILD, "goblin-bench"))
KEYS, SIZE, HOT = 1024, "256K", 128
WINDOW = {"promoted": 512, "frozen": 512, "local": 0, "perverse": 0}
MARKER = "goblin-pool"
# Remote-DRAM events, tried in order; every one `perf stat` counts is kept.
PERF_CANDIDATES = [
    "node-loads", "node-load-misses",                 # generic NUMA cache
    "offcore_response.demand_data_rd.l3_miss.remote_dram",   # Intel
    "ocr.demand_data_rd.remote_dram", "ocr.demand_data_rd.l3_miss.remote_dram",
    "mem_load_l3_miss_retired.remote_dram",
    "ls_dmnd_fills_from_sys.dram_io_far",             # AMD Zen
    "ls_any_fills_from_sys.dram_io_far",
]


class Failed(Exception):
    pass


def number(text):
    """perf's count: an int, a float (task-clock), else the text as is
    (<not counted>, <not supported>)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def real_nodes():
    return max(1, len(glob.glob("/sys/devices/system/node/node[0-9]*")))


def distances():
    """The host's real distance rows, by node (numactl --hardware's)."""
    out = {}
    for d in sorted(glob.glob("/sys/devices/system/node/node[0-9]*")):
        try:
            with open(os.path.join(d, "distance")) as f:
                out[os.path.basename(d)] = f.read().strip()
        except OSError:
            pass
    return out


def server_args(a, variant, port=None, ssd="STATE/ssd"):
    """goblin-store's flags (its command line less the binary) for
    <variant>."""
    flags = ["--numa", a.node, "--block", "2M", "--ram-head", "256K",
             "--io-buffers", "2", "--cores", "1"]
    if variant in ("frozen", "local", "perverse"):
        flags.append("--no-numa-promotion")
    if variant == "perverse":
        flags.append("--perverse")
    return goblin.store_argv(port or a.port, *flags, memory="64M",
                             sub_memory="64M", mlock=False, ssd=[ssd],
                             binary=STORE)[1:]


def perf_events():
    """The remote-DRAM events this host's perf counts, with a note."""
    perf = shutil.which("perf")
    if perf is None:
        return {"events": [], "note": "not available: no perf binary"}
    probe = subprocess.run([perf, "stat", "-x,", "-e", "instructions", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    text = probe.stderr.decode(errors="replace")
    if probe.returncode != 0 or "<not supported>" in text \
            or "<not counted>" in text:
        return {"events": [], "note": "not available: perf stat -e "
                "instructions does not count here (no PMU)"}
    got = []
    for ev in PERF_CANDIDATES:
        p = subprocess.run([perf, "stat", "-x,", "-e", ev, "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t = p.stderr.decode(errors="replace")
        if p.returncode == 0 and "<not supported>" not in t:
            got.append(ev)
    return {"events": got, "note": "counted on the server process" if got
            else "not available: no remote-DRAM event on this host"}


def memcache_stats(port):
    """`stats goblin` on <port>: {name: int, or str where not a number}."""
    try:
        return goblin.stats(port, "goblin", ints=True, timeout=10)
    except (OSError, ValueError, AssertionError) as e:  # ProtocolError too
        raise Failed("stats goblin: %s" % e)


def numa_maps(pid):
    """The head arenas' mappings: [{policy, huge, pages per node}]."""
    out = []
    try:
        with open("/proc/%d/numa_maps" % pid) as f:
            for line in f:
                if "goblin-heads" not in line:
                    continue
                w = line.split()
                out.append({"policy": w[1], "huge": "huge" in w,
                            "pages": {x[1:].split("=")[0]: int(x.split("=")[1])
                                      for x in w if x[0] == "N" and "=" in x}})
    except OSError as e:
        return "not readable: %s" % e
    return out


def ssd_check(ssd, st):
    """The seed's "pool holds only its safety marker", for this store: no
    objects and no extent bytes; besides the marker (goblin-pool) only empty
    extents files and the index journal (which keeps RAM-only objects'
    bytes across restarts; README "Pools")."""
    files = {n: os.path.getsize(os.path.join(ssd, n))
             for n in sorted(os.listdir(ssd))}
    extent_bytes = sum(v for n, v in files.items() if n.startswith("extent"))
    others = [n for n in files if n != MARKER and n != "journal"
              and not n.startswith("extent")]
    ok = (MARKER in files and extent_bytes == 0 and not others
          and st.get("ssd_objects") == 0 and st.get("ssd_used_bytes") == 0)
    return {"ok": ok, "files": files, "extent_bytes": extent_bytes,
            "ssd_objects": st.get("ssd_objects"),
            "ssd_used_bytes": st.get("ssd_used_bytes")}


class Bench:
    def __init__(self, a, row):
        self.store = STORE_HOOKS if row else STORE
        for b in (self.store, BENCH):
            if not os.access(b, os.X_OK):
                raise SystemExit("bench/numa/run: %s not built (make all)" % b)
        self.a, self.env = a, dict(os.environ)
        self.env.pop("GOBLIN_TEST_NUMA", None)
        if row:
            self.env["GOBLIN_TEST_NUMA"] = row
        self.state = "/var/tmp/goblin-numa-bench.%d" % os.getpid()
        self.proc = None
        self.burst = "300ms" if a.quick else "1s"

    def start(self, variant):
        ssd = os.path.join(self.state, "ssd")
        shutil.rmtree(self.state, ignore_errors=True)
        os.makedirs(self.state)
        self.log = os.path.join(self.state, "server.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [self.store] + server_args(self.a, variant, ssd=ssd),
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failed("goblin-store exited %d: %s" % (
                    self.proc.returncode, self.log_tail()))
            try:
                socket.create_connection(("127.0.0.1", self.a.port), 1).close()
                return ssd
            except OSError:
                time.sleep(0.05)
        raise Failed("goblin-store not listening after 30 s")

    def log_tail(self):
        with open(self.log, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-3:])

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.state, ignore_errors=True)

    def goblin_bench(self, args, what):
        pin = ["taskset", "-c", self.a.client_cpus] if self.a.client_cpus \
            else []
        argv = pin + [BENCH, "--host", "127.0.0.1", "--port", str(self.a.port),
                "--size", SIZE, "--keys", str(KEYS), "--quiet"] + args
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise Failed("goblin-bench %s exited %d: %s" % (
                what, p.returncode, p.stdout.decode(errors="replace")[-400:]))

    def load(self, variant, duration, extra=()):
        conns = self.a.conns if WINDOW[variant] else self.a.control_conns
        return ["--hot-start", str(WINDOW[variant]), "--hot-keys", str(HOT),
                "--no-store", "--conns", str(conns), "--duration",
                duration] + list(extra)

    def warm(self, variant):
        """Bursts of the measured load until numa_promotions stops moving
        (at least two bursts, the same for every variant)."""
        prev, bursts = (None, 0), 0
        promoting = variant == "promoted"
        while bursts < 60:
            self.goblin_bench(self.load(variant, self.burst), "warm-up")
            bursts += 1
            st = memcache_stats(self.a.port)
            p = st.get("numa_promotions")
            r = st.get("numa_promotion_rounds", 0)
            if bursts >= 2 and p == prev[0] and (
                    not promoting or (p > 0 and r >= prev[1] + 3)):
                return bursts, p
            prev = (p, r)
        raise Failed("%s: numa_promotions still moving after 60 bursts"
                     % variant)

    def perf_start(self, perf):
        if not perf["events"]:
            return None
        out = os.path.join(self.state, "perf.csv")
        p = subprocess.Popen(["perf", "stat", "-x,", "-o", out, "-e",
                              ",".join(perf["events"]), "-p",
                              str(self.proc.pid)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        return p, out

    @staticmethod
    def perf_stop(handle):
        if handle is None:
            return "not available"
        p, out = handle
        p.send_signal(signal.SIGINT)
        p.wait(30)
        counts = {}
        try:
            with open(out) as f:
                for line in f:
                    w = line.strip().split(",")
                    if len(w) >= 3 and not line.startswith("#"):
                        counts[w[2]] = number(w[0])
        except OSError as e:
            return "perf stat failed: %s" % e
        return counts

    def variant(self, variant, rep, perf):
        t0 = time.monotonic()
        ssd = self.start(variant)
        try:
            # one connection: keys stored in order, 8 to a 2M block, so the
            # HOT keys fill HOT / 8 blocks (concurrent sets interleave them
            # over more, and the promotions the test bounds with them)
            self.goblin_bench(["--populate-only", "--conns", "1"], "populate")
            bursts, _ = self.warm(variant)
            before = memcache_stats(self.a.port)
            js = os.path.join(self.state, "run.json")
            handle = self.perf_start(perf)
            self.goblin_bench(self.load(variant, self.a.duration,
                                        ["--json", js]), "measured")
            counts = self.perf_stop(handle)
            st = memcache_stats(self.a.port)
            maps = numa_maps(self.proc.pid)
            with open(js) as f:
                run = json.load(f)["run"]
        finally:
            self.stop()
        return {"variant": variant, "rep": rep, "warm_bursts": bursts,
                "hot_start": WINDOW[variant],
                "conns": self.a.conns if WINDOW[variant] else
                self.a.control_conns,
                "wall_s": round(time.monotonic() - t0, 2),
                "throughput": {k: run[k] for k in
                               ("qps", "payload_mb_per_s", "gets", "hits",
                                "misses", "errors", "verify_errors", "lost")},
                "latency_us": {h: {p: run["latency_us"][h][p] for p in
                                   ("p50", "p90", "p99", "p99_9", "max")}
                               for h in ("ttfb", "first_payload", "complete")},
                "numa": {k: v for k, v in st.items() if k.startswith("numa_")},
                "hits_during_run": {
                    k: st[k] - before.get(k, 0) for k in st
                    if k.startswith("numa_node") and k.endswith("_hits")},
                "numa_maps": maps, "perf": counts, "ssd": ssd_check(ssd, st)}


def med(xs):
    return statistics.median(xs) if xs else None


def summary(runs):
    out = {}
    for v in sorted({r["variant"] for r in runs}):
        rs = [r for r in runs if r["variant"] == v]
        s = {"reps": len(rs),
             "qps": med([r["throughput"]["qps"] for r in rs]),
             "payload_mb_per_s":
                 med([r["throughput"]["payload_mb_per_s"] for r in rs])}
        for h in ("ttfb", "first_payload", "complete"):
            for p in ("p50", "p99", "p99_9"):
                s["%s_%s_us" % (h, p)] = med(
                    [r["latency_us"][h][p] for r in rs])
        for k in ("promotions", "promotion_bytes", "promotion_time_us",
                  "promotion_max_us"):
            s[k] = med([r["numa"].get("numa_" + k, 0) for r in rs])
        events = sorted({e for r in rs if isinstance(r["perf"], dict)
                         for e in r["perf"]})
        s["perf"] = {e: med([r["perf"][e] for r in rs
                             if isinstance(r["perf"].get(e), (int, float))])
                     for e in events} or "not available"
        out[v] = s
    return out


def checks(runs, reps):
    by = {v: [r for r in runs if r["variant"] == v] for v in WINDOW}
    return {
        "every variant ran every repetition":
            all(len(rs) == reps for rs in by.values()),
        "promoted: numa_promotions > 0": all(
            r["numa"].get("numa_promotions", 0) > 0 for r in by["promoted"]),
        "frozen, local, perverse: nothing promoted": all(
            r["numa"].get("numa_promotions", 1) == 0
            for v in ("frozen", "local", "perverse") for r in by[v]),
        "perverse: region zero off --numa's node": all(
            r["numa"]["numa_region0_node"] != by["local"][0]["numa"]
            ["numa_region0_node"] for r in by["perverse"]) if by["local"]
        else False,
        "SSD pool: marker, empty extents, journal": all(r["ssd"]["ok"] for r in runs),
        "every byte verified, no misses": all(
            r["throughput"]["verify_errors"] == 0 and
            r["throughput"]["misses"] == 0 and r["throughput"]["errors"] == 0
            for r in runs),
        "no misplaced blocks": all(
            r["numa"].get("numa_misplaced_blocks") == 0 for r in runs),
    }


def one_line(r):
    t, lat, n = r["throughput"], r["latency_us"], r["numa"]
    return ("%.0f req/s %.1f MB/s, payload TTFB p50 %.0f p99 %.0f us, "
            "complete p99 %.0f us; promotions %d (%d bytes, %d us, max %d us)"
            "; ssd %s" % (t["qps"], t["payload_mb_per_s"],
                          lat["first_payload"]["p50"],
                          lat["first_payload"]["p99"], lat["complete"]["p99"],
                          n.get("numa_promotions", 0),
                          n.get("numa_promotion_bytes", 0),
                          n.get("numa_promotion_time_us", 0),
                          n.get("numa_promotion_max_us", 0),
                          "marker only" if r["ssd"]["ok"] else "NOT CLEAN"))


def markdown(out):
    sim = out["simulated"]
    lines = ["# NUMA head placement (bench/numa/run, %s)" % out["date"], ""]
    if sim:
        head, rest = out["note"].split(":", 1)
        lines += ["**%s**:%s (GOBLIN_TEST_NUMA=\"%s\")." % (
            head, rest, out["distance_row"]), ""]
    else:
        lines += ["%s; --numa %d." % (out["note"], out["node"]), ""]
    lines += ["%d repetitions of %s per variant, order alternating; medians."
              % (out["reps"], out["duration"]), "",
              "| variant | req/s | MB/s | TTFB p50/p99 us | payload p50/p99 "
              "us | complete p50/p99 us | promotions | bytes | time us | "
              "max us |", "|" + "---|" * 10]
    for v in ("promoted", "frozen", "local", "perverse"):
        s = out["summary"].get(v)
        if not s:
            continue
        lines.append("| %s%s | %.0f | %.1f | %.0f / %.0f | %.0f / %.0f | "
                     "%.0f / %.0f | %d | %d | %d | %d |" % (
                         "(sim) " if sim else "", v, s["qps"],
                         s["payload_mb_per_s"], s["ttfb_p50_us"],
                         s["ttfb_p99_us"], s["first_payload_p50_us"],
                         s["first_payload_p99_us"], s["complete_p50_us"],
                         s["complete_p99_us"], s["promotions"],
                         s["promotion_bytes"], s["promotion_time_us"],
                         s["promotion_max_us"]))
    lines += ["", "perf stat on the server (remote DRAM): %s" % (
        out["perf_note"] if not isinstance(out["perf_events"], list) else
        "; ".join("%s: %s" % (v, ", ".join(
            "%s %s" % (e, n) for e, n in s["perf"].items()))
            for v, s in out["summary"].items()
            if isinstance(s["perf"], dict))), "", "Checks:", ""]
    lines += ["- %s: %s" % (k, "ok" if ok else "FAILED")
              for k, ok in out["checks"].items()]
    return "\n".join(lines) + "\n"
