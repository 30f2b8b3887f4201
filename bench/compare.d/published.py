# usage: imported by bench/compare (not run on its own)
"""The last published result of a scenario at a network, to print beside a
new run: the newest committed bench/results/*-<scenario>-<net>.json (by
commit time; on loopback also *-<scenario>.json, from before the rig had
networks), or the file a --baseline prefix names.  Only figures are taken
from it."""
import glob
import json
import os
import subprocess

from cmplib import TOP, Failure


def commit_time(path):
    """Unix time of the last commit touching <path>; 0 if never committed."""
    res = subprocess.run(["git", "-C", TOP, "log", "-1", "--format=%ct", "--",
                          os.path.relpath(path, TOP)],
                         capture_output=True, text=True)
    out = res.stdout.strip()
    return int(out) if res.returncode == 0 and out else 0


def candidates(scen, net, prefix):
    """Results files of <scen> at <net> named <prefix>-..."""
    names = ["%s-%s-%s.json" % (prefix, scen, net)]
    if net == "loopback":
        names.append("%s-%s.json" % (prefix, scen))
    return names


def find(scen, net, results_dir, exclude):
    """Path of the newest committed results file of <scen> at <net> other
    than <exclude>, or None."""
    best, best_t = None, 0
    skip = os.path.realpath(exclude)
    for path in sorted(set(p for name in candidates(scen, net, "*") for p in
                           glob.glob(os.path.join(results_dir, name)))):
        if os.path.realpath(path) == skip:
            continue
        t = commit_time(path)
        if t > best_t:
            best, best_t = path, t
    return best


def _measured(p):
    ph = p["phases"]
    return (ph.get("run") or ph["read-back"])["run"]


def summary(path):
    """The figures of one results file that a new run is set beside."""
    try:
        with open(path) as f:
            res = json.load(f)
        peer, gob = res["peers"]
        out = {"file": os.path.relpath(path, TOP),
               "network": (res.get("network") or {}).get("name", "loopback"),
               "mode": res["meta"]["mode"], "git_head": res["meta"]["git_head"],
               "ratios": res["ratios"], "scale": res["scale"], "peers": {}}
        for p in (peer, gob):
            m = _measured(p)
            d = {"qps": m["qps"], "ram_bytes": p["ram"]["usage_bytes"],
                 "misses": m["misses"]}
            if "durability" in p:
                d["missing"] = p["durability"]["missing"]
            out["peers"][p["kind"]] = d
        return out
    except (OSError, ValueError, KeyError) as e:
        raise Failure("cannot read the last published %s: %s" % (path, e))


def last_published(scen, net, results_dir, exclude, prefix=None):
    """summary() of --baseline's <prefix>-<scen>-<net>.json (loopback: or
    <prefix>-<scen>.json) when given (None if missing), else of find();
    None when there is none."""
    if prefix:
        for path in candidates(scen, net, prefix):
            if os.path.exists(path):
                return summary(path)
        return None
    path = find(scen, net, results_dir, exclude)
    return summary(path) if path else None
