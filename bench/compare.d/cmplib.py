# usage: imported by bench/compare (not run on its own)
"""Pieces of bench/compare: the rig and its server cgroup, the peers'
processes, memcache stats (read by t/lib/goblin.py, the harness's one stats
reader), goblin-bench runs.  Everything started here is stopped by pid;
every failure raises Failure with a one-line reason."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "t", "lib"))
import goblin  # noqa: E402
from goblin import free_port  # noqa: E402,F401 (bench/compare's too)

RIG = os.path.join(TOP, "bench", "rig")
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
NETS = ("loopback", "1g", "10g")     # bench/rig/up --net


class Failure(Exception):
    """A peer, the rig or the client misbehaved: the run must stop."""


LOG_PREFIX = "compare"      # the script's name on its log lines


def log(msg):
    print("%s: %s" % (LOG_PREFIX, msg), file=sys.stderr, flush=True)


def human(n):
    n = float(n)
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= size:
            return "%.2f %s" % (n / size, unit)
    return "%d B" % n


def read_kv(path):
    """A 'name value' file (device model stats, memory.stat) as a dict."""
    out = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(" ")
            try:
                out[key] = int(value)
            except ValueError:
                try:
                    out[key] = float(value)
                except ValueError:
                    out[key] = value
    return out


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Rig:
    """bench/rig/up at <state> with network <net> (one of NETS); down()
    undoes it.  After up(): net (the name), server_host (the address
    servers bind to and clients connect to), client_prefix (argv prefix
    that runs a command in the client's network namespace; [] on
    loopback) and net_info (the name, and for a shaped network the target
    rate and RTT, the delay line's one-way delay and net-check's measured
    RTT and goodput each way; net_check() measures again)."""

    def __init__(self, state, server_ram, hdd_size, ssd_size, net="loopback"):
        if net not in NETS:
            raise Failure("unknown network %r (one of %s)" % (net, ", ".join(NETS)))
        self.state = state
        self.net = net
        self.args = ["--state", state, "--server-ram", str(server_ram),
                     "--hdd-size", hdd_size, "--ssd-size", ssd_size,
                     "--net", net]
        self.env = None
        self.server_host = "127.0.0.1"
        self.client_prefix = []
        self.net_info = {"name": net}

    def up(self):
        if os.path.exists(os.path.join(self.state, "state")):
            log("taking down a rig left at %s" % self.state)
            self.down()
        res = subprocess.run([os.path.join(RIG, "up")] + self.args,
                             capture_output=True, text=True)
        if res.returncode:
            raise Failure("bench/rig/up failed: " + res.stderr.strip())
        env = {}
        for line in res.stdout.splitlines():
            if line.startswith("export GOBLIN_RIG_"):
                key, _, value = line[len("export "):].partition("=")
                env[key] = value.strip("'\"")
        self.env = env
        self.server_host = env.get("GOBLIN_RIG_SERVER_ADDR") or "127.0.0.1"
        ns = env.get("GOBLIN_RIG_CLIENT_NETNS")
        self.client_prefix = ["ip", "netns", "exec", ns] if ns else []
        self.net_info = {"name": self.net}
        if self.net != "loopback":
            self.net_check()
        return env

    def net_check(self, seconds=2):
        """Runs bench/rig/net-check (report only) and refreshes net_info:
        rate_bps, target_rtt_us, delay_us (one way), rtt_us (p10/p50/p90/
        p99), c2s_bps and s2c_bps (goodput), target_goodput_bps, ok and
        problems (net-check's verdict), warnings, check (its whole JSON)."""
        res = subprocess.run([os.path.join(RIG, "net-check"), "--state",
                              self.state, "--seconds", str(seconds),
                              "--report-only"], capture_output=True, text=True)
        if res.returncode:
            raise Failure("bench/rig/net-check failed: " + res.stderr.strip()[-500:])
        chk = json.loads(res.stdout)
        for line in res.stderr.strip().splitlines():
            log(line.removeprefix("net-check: "))
        self.net_info = {"name": self.net, "rate_bps": chk["rate_bps"],
                         "target_rtt_us": chk["target_rtt_us"],
                         "delay_us": chk["delay_us"], "rtt_us": chk["rtt_us"],
                         "c2s_bps": chk["c2s"]["goodput_bps"],
                         "s2c_bps": chk["s2c"]["goodput_bps"],
                         "target_goodput_bps": chk["target_goodput_bps"],
                         "ok": chk["ok"], "problems": chk["problems"],
                         "warnings": chk.get("warnings", []),
                         "check": chk}
        return self.net_info

    def down(self):
        res = subprocess.run([os.path.join(RIG, "down"), "--state", self.state],
                             capture_output=True, text=True)
        if res.returncode:
            raise Failure("bench/rig/down failed: " + res.stderr.strip())
        self.env = None
        self.server_host = "127.0.0.1"
        self.client_prefix = []
        self.net_info = {"name": self.net}

    # ---- the server's memory cgroup (v1) ----
    def cg(self, name):
        return os.path.join(self.env["GOBLIN_RIG_CGROUP_DIR"], name)

    def cg_int(self, name):
        with open(self.cg(name)) as f:
            return int(f.read().split()[0])

    def cg_write(self, name, value):
        with open(self.cg(name), "w") as f:
            f.write(str(value))

    def cg_procs(self):
        with open(self.cg("cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]

    def cg_oom_kills(self):
        return read_kv(self.cg("memory.oom_control")).get("oom_kill", 0)

    def cg_empty(self):
        """Drops what the last peer left charged (page cache of its deleted
        files) so the next one starts from zero; fails if it cannot.  An
        exiting server's memory (io_uring teardown among it) is uncharged
        asynchronously: up to 20 s are given for it."""
        end = time.time() + 20
        while time.time() < end:
            if not self.cg_procs():
                self.cg_write("memory.force_empty", 0)
                if self.cg_int("memory.usage_in_bytes") <= 16 * MIB:
                    break
            time.sleep(0.2)
        if self.cg_procs():
            raise Failure("processes left in the server cgroup: %s"
                          % self.cg_procs())
        self.cg_write("memory.force_empty", 0)
        self.cg_write("memory.max_usage_in_bytes", 0)
        used = self.cg_int("memory.usage_in_bytes")
        if used > 16 * MIB:
            raise Failure("server cgroup still charges %s after force_empty"
                          % human(used))

    @contextlib.contextmanager
    def cg_limit(self, limit):
        """The server cgroup's memory limit (and memsw's, where the kernel
        has it) set to <limit> for a with block; afterwards the cgroup is
        emptied (cg_empty) and the old limit written back."""
        names = ["memory.limit_in_bytes"]
        if os.path.exists(self.cg("memory.memsw.limit_in_bytes")):
            names.append("memory.memsw.limit_in_bytes")
        old = {n: self.cg_int(n) for n in names}

        def write(values):
            # memsw may never be below the plain limit: raise memsw first,
            # lower it last
            up = values["memory.limit_in_bytes"] > self.cg_int("memory.limit_in_bytes")
            for n in (reversed(names) if up else names):
                try:
                    self.cg_write(n, values[n])
                except OSError as e:
                    raise Failure("cannot set the server cgroup's %s to %s: %s"
                                  % (n, human(values[n]), e))
        write({n: limit for n in names})
        try:
            yield
        finally:
            self.cg_empty()
            write(old)

    def cg_memory(self):
        st = read_kv(self.cg("memory.stat"))
        return {"usage_bytes": self.cg_int("memory.usage_in_bytes"),
                "max_usage_bytes": self.cg_int("memory.max_usage_in_bytes"),
                "limit_bytes": self.cg_int("memory.limit_in_bytes"),
                "rss_bytes": st.get("rss", 0) + st.get("rss_huge", 0),
                "cache_bytes": st.get("cache", 0),
                "shmem_bytes": st.get("shmem", 0),
                "mapped_file_bytes": st.get("mapped_file", 0),
                "failcnt": self.cg_int("memory.failcnt"),
                "oom_kills": self.cg_oom_kills()}

    def devices(self):
        """Counters of both device models, read now."""
        return {"hdd": read_kv(self.env["GOBLIN_RIG_HDD_STATS"]),
                "ssd": read_kv(self.env["GOBLIN_RIG_SSD_STATS"])}


DEV_COUNTERS = ("reads", "writes", "read_bytes", "write_bytes", "seeks",
                "fsyncs", "late", "overshoot_us")


def device_delta(before, after, seconds):
    out = {}
    for dev in before:
        d = {k: after[dev][k] - before[dev][k] for k in DEV_COUNTERS}
        d["read_mb_per_s"] = round(d["read_bytes"] / seconds / 1e6, 3) if seconds else 0
        d["write_mb_per_s"] = round(d["write_bytes"] / seconds / 1e6, 3) if seconds else 0
        out[dev] = d
    return out


def memcache_stats(port, arg="", host="127.0.0.1"):
    """'stats <arg>' over the memcache text protocol as a dict (from this
    namespace: a server on the rig's server_host answers here unshaped)."""
    try:
        st = goblin.stats(port, arg, ints=True, host=host, timeout=10)
    except (OSError, ValueError, AssertionError) as e:  # ProtocolError too
        raise Failure("'stats %s' on port %d: %s" % (arg, port, e))
    for k, v in st.items():
        if isinstance(v, str):
            try:
                st[k] = float(v)
            except ValueError:
                pass
    return st


class Server:
    """A peer run by bench/rig/exec-in-server-cgroup in its own session."""

    def __init__(self, rig, name, argv, port, logdir):
        self.rig, self.name, self.argv, self.port = rig, name, argv, port
        self.logpath = os.path.join(logdir, name + ".log")
        self.proc = None

    def log_tail(self, n=5):
        try:
            with open(self.logpath, errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-n:])
        except OSError:
            return ""

    def start(self, timeout=60):
        cmd = [os.path.join(RIG, "exec-in-server-cgroup"), "--state",
               self.rig.state] + self.argv
        with open(self.logpath, "w") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise Failure("%s exited with %d before listening: %s" % (
                    self.name, self.proc.returncode, self.log_tail()))
            try:
                socket.create_connection((self.rig.server_host, self.port),
                                         0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise Failure("%s did not listen on port %d within %ds: %s"
                          % (self.name, self.port, timeout, self.log_tail()))
        if self.proc.pid not in self.rig.cg_procs():
            self.stop()
            raise Failure("%s (pid %d) is not in the server cgroup"
                          % (self.name, self.proc.pid))

    def check_alive(self):
        if self.proc.poll() is not None:
            raise Failure("%s died (exit %s, %d OOM kills in the cgroup): %s"
                          % (self.name, self.proc.returncode,
                             self.rig.cg_oom_kills(), self.log_tail()))

    def rss_bytes(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * KIB
        return 0

    def stop(self):
        """TERM, then KILL after 15 s; by pid only."""
        p = self.proc
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            log("%s (pid %d) ignored SIGTERM; killing it" % (self.name, p.pid))
            p.kill()
            p.wait(10)


def goblin_bench(bench, args, json_path, client_cpu, allow_corrupt=False,
                 timeout=3600, rig=None):
    """Runs goblin-bench pinned to the client cpu; returns its JSON.  With
    <rig> it runs in the rig's client namespace (rig.client_prefix) and
    connects to rig.server_host unless <args> name a --host.  Fails on
    connection failures, accounting errors, and (unless <allow_corrupt>)
    verify errors; exit status 1 is accepted only when verify errors are
    what it reports and <allow_corrupt> is set."""
    if rig is not None and "--host" not in args:
        args = ["--host", rig.server_host] + args
    prefix = rig.client_prefix if rig is not None else []
    cmd = prefix + ["taskset", "-c", str(client_cpu), bench, "--quiet",
                    "--json", json_path] + args
    log("  $ " + " ".join(cmd[len(prefix) + 3:]))
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if not os.path.exists(json_path):
        raise Failure("goblin-bench exited %d without results: %s"
                      % (res.returncode, (res.stderr or res.stdout).strip()[-500:]))
    with open(json_path) as f:
        out = json.load(f)
    out["stderr"] = res.stderr.strip().splitlines()[-20:]
    for phase in ("populate", "run"):
        st = out.get(phase)
        if not st:
            continue
        if st["conn_failures"] or st["lost"]:
            raise Failure("goblin-bench %s: %d connection failures, %d lost "
                          "requests: %s" % (phase, st["conn_failures"],
                                            st["lost"], " | ".join(out["stderr"][-3:])))
        if not st["gets_eq_hits_plus_misses"]:
            raise Failure("goblin-bench %s: gets != hits + misses" % phase)
        if st["verify_errors"] and not allow_corrupt:
            raise Failure("goblin-bench %s: %d verify errors (wrong bytes "
                          "served): %s" % (phase, st["verify_errors"],
                                           " | ".join(out["stderr"][-3:])))
    if res.returncode not in (0, 1) or (res.returncode == 1 and not (
            allow_corrupt and out.get("run") and out["run"]["verify_errors"])):
        raise Failure("goblin-bench exited %d: %s" % (
            res.returncode, " | ".join(out["stderr"][-3:])))
    return out
