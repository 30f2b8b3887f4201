# usage: imported by bench/compare and its selftest (not run on its own)
"""Which resource bounds a measured phase, and how close each peer runs to
it: the emulated HDD and SSD, the link between client and server, the
server's and the client's CPU.  Every figure is a fraction of the phase's
run time (1.0 = busy all of it), computed from counters taken around it.

  device  the model books each non-continuing I/O an access time on one of
          its channels and every byte a transfer on the bus the channels
          share (bench/rig/README.md), so
            channel busy = (seeks x access + bytes / bandwidth) / (T x channels)
            bus busy     = bytes / bandwidth / T
          and the device is as busy as the busier of the two (one channel:
          the same).  I/O booked in the phase may finish just after it, so a
          saturated device can read slightly above 1.
  link    payload bytes each way x 8 / T / what the link carries of payload
          (TCP's goodput at the shaped rate, rate x MSS / (MSS + 90), as
          bench/rig/net-check measures it); the busier direction; protocol
          lines are not counted.  None on loopback.
  CPU     utime + stime of the process over T, per core it may use.
"""
import os
import resource

# the resources, in the order the limit row names them
NAMES = (("hdd", "HDD"), ("ssd", "SSD"), ("link", "link"),
         ("server_cpu", "server CPU"), ("client_cpu", "client CPU"))
DEVICE_PARAMS = ("access_us", "bandwidth_mbps", "channels")


def device_busy(delta, params, seconds):
    """<delta>: the model's counter deltas over the phase (reads, seeks,
    read_bytes, writes, write_bytes); <params>: its access_us,
    bandwidth_mbps, channels; <seconds>: the phase's run time."""
    if seconds <= 0:
        raise ValueError("a phase of %r seconds has no busy fraction" % seconds)
    access_s = params["access_us"] / 1e6
    moved = delta["read_bytes"] + delta["write_bytes"]
    transfer_s = moved / (params["bandwidth_mbps"] * 1e6)
    channel = (delta["seeks"] * access_s + transfer_s) / (seconds * params["channels"])
    bus = transfer_s / seconds
    return {"busy": round(max(channel, bus), 4), "channel_busy": round(channel, 4),
            "bus_busy": round(bus, 4), "seeks": delta["seeks"],
            "read_bytes": delta["read_bytes"], "write_bytes": delta["write_bytes"],
            "read_bytes_per_seek": round(delta["read_bytes"] / delta["seeks"])
            if delta["seeks"] else None}


def link_busy(down_bytes, up_bytes, seconds, rate_bps):
    """The busier direction's share of a link of <rate_bps> (server to
    client: <down_bytes>); None without a link (<rate_bps> None)."""
    if not rate_bps:
        return None
    down = down_bytes * 8 / seconds / rate_bps
    up = up_bytes * 8 / seconds / rate_bps
    return {"busy": round(max(down, up), 4), "down": round(down, 4),
            "up": round(up, 4), "rate_bps": rate_bps}


def cpu_busy(cpu_seconds, seconds, cores):
    return {"busy": round(cpu_seconds / seconds / cores, 4),
            "cpu_seconds": round(cpu_seconds, 3), "cores": cores}


def proc_cpu_seconds(pid):
    """utime + stime of process <pid> (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """CPU of this process's waited-for children (goblin-bench runs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_count(cpulist):
    """Cores in a cpu list such as '1', '0-3' or '1,3'."""
    n = 0
    for part in str(cpulist).split(","):
        lo, _, hi = part.strip().partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def phase_limits(stats, deltas, params, seconds, rate_bps, server_cpu,
                 client_cpu):
    """The limit of one measured phase: each resource's busy fraction and
    the binding one (the highest).  <stats>: goblin-bench's phase object
    (get_bytes, set_bytes); <deltas>/<params>: per device ('hdd', 'ssd');
    <server_cpu>/<client_cpu>: (cpu seconds, wall seconds, cores) or None."""
    out = {"seconds": round(seconds, 3)}
    for dev in ("hdd", "ssd"):
        out[dev] = device_busy(deltas[dev], params[dev], seconds)
    out["link"] = link_busy(stats["get_bytes"], stats["set_bytes"], seconds, rate_bps)
    for key, cpu in (("server_cpu", server_cpu), ("client_cpu", client_cpu)):
        out[key] = cpu_busy(*cpu) if cpu else None
    key, name = max(((k, n) for k, n in NAMES if out[k]), key=lambda kn: out[kn[0]]["busy"])
    out["binding"], out["binding_busy"] = name, out[key]["busy"]
    return out


def pct(x):
    return "%.0f%%" % (100 * x)


def limit_text(lim):
    """One table cell: the binding resource first, in bold, then the rest;
    bytes read per HDD seek when the HDD seeks."""
    parts = []
    for key, name in NAMES:
        r = lim.get(key)
        if not r:
            continue
        text = "%s %s" % (name, pct(r["busy"]))
        if key == "hdd" and r["read_bytes_per_seek"]:
            text += " (%.2f MB/seek)" % (r["read_bytes_per_seek"] / 1e6)
        if name == lim["binding"]:
            parts.insert(0, "**%s**" % text)
        else:
            parts.append(text)
    if not lim.get("link"):
        parts.append("no link (loopback)")
    return ", ".join(parts)
