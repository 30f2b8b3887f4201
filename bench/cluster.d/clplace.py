# usage: imported by bench/cluster (not run on its own)
"""Placement agreement (issue 25): for --keys keys, the node each of four
placements puts a key on, before and after one node is removed:

  front-ketama  the front nginx (nodes.conf: goblin_hash ketama), learnt
                from its X-Node header on a GET through it (the last
                address tried: with a node gone, the ring's next node)
  libmemcached  pylibmc with behaviors={"ketama_weighted": True}: each
                key set to "L<round>" over the nodes, then found by a
                get_multi on each node alone
  front-crc32   the front's /crc/ location (goblin_hash crc32)
  cmf           Cache::Memcached::Fast with ketama_points => 160, each key
                set to "C<round>", found the same way

The nodes here are plain (pools under /var/tmp, no device model): only
where keys go is measured.  "After": the third node killed (kill -9,
store and nginx); the clients list the two others, the front still
lists three and walks past the dead one."""
import http.client
import subprocess
import threading

import cllib

CMF = r'''
use Cache::Memcached::Fast;
my $v = shift @ARGV;
my $m = Cache::Memcached::Fast->new({ servers => [@ARGV],
    ketama_points => 160, connect_timeout => 2, io_timeout => 10 });
my @k = map { chomp; $_ } <STDIN>;
my $bad = 0;
for (my $i = 0; $i < @k; $i += 1000) {
    my $e = $i + 999 < $#k ? $i + 999 : $#k;
    my @r = $m->set_multi(map { [$_, $v] } @k[$i..$e]);
    $bad += scalar(grep { !$_ } @r);
}
print "$bad\n";
'''


def key(i):
    return "pk%07d" % i


def pylibmc_set(servers, keys, value):
    import pylibmc
    mc = pylibmc.Client(servers, behaviors={"ketama_weighted": True})
    failed = 0
    for i in range(0, len(keys), 1000):
        failed += len(mc.set_multi({k: value for k in keys[i:i + 1000]}))
    mc.disconnect_all()
    return failed


def cmf_set(servers, keys, value):
    p = subprocess.run(["perl", "-e", CMF, value.decode()] + servers,
                       input="".join(k + "\n" for k in keys).encode(),
                       stdout=subprocess.PIPE, timeout=600)
    out = p.stdout.decode().strip()
    return int(out) if p.returncode == 0 and out.isdigit() else len(keys)


def find(servers, keys, value):
    """{key: host} for each key a node holds as <value>."""
    import pylibmc
    where = {}
    for s in servers:
        mc = pylibmc.Client([s])
        for i in range(0, len(keys), 1000):
            got = mc.get_multi(keys[i:i + 1000])
            for k, v in got.items():
                if v == value:
                    where[k] = s.rsplit(":", 1)[0]
        mc.disconnect_all()
    return where


def front_nodes(port, prefix, keys, threads=8):
    """{key: host of the node that answered} through the front."""
    where = {}
    lock = threading.Lock()

    def run(part):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        mine = {}
        for k in part:
            for _ in range(3):
                try:
                    c.request("GET", prefix + k)
                    r = c.getresponse()
                    r.read()
                    mine[k] = (r.getheader("X-Node") or "?").split(", ")[-1].rsplit(":", 1)[0]
                    break
                except (OSError, http.client.HTTPException):
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.close()
        with lock:
            where.update(mine)

    ts = [threading.Thread(target=run, args=(keys[n::threads],)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return where


def agreement(a, b, keys):
    same = sum(1 for k in keys if a.get(k) is not None and a.get(k) == b.get(k))
    return same / len(keys)


def spread(where, keys):
    out = {}
    for k in keys:
        h = where.get(k, "none")
        out[h] = out.get(h, 0) + 1
    return dict(sorted(out.items()))


def one_round(tag, servers, front_port, keys):
    cllib.log("placement %s: %d keys, libmemcached" % (tag, len(keys)))
    lv, cv = ("L" + tag).encode(), ("C" + tag).encode()
    bad = pylibmc_set(servers, keys, lv)
    if bad:
        raise cllib.Failure("libmemcached failed %d of %d sets" % (bad, len(keys)))
    lm = find(servers, keys, lv)
    cllib.log("placement %s: Cache::Memcached::Fast" % tag)
    bad = cmf_set(servers, keys, cv)
    if bad:
        raise cllib.Failure("Cache::Memcached::Fast failed %d of %d sets"
                            % (bad, len(keys)))
    cmf = find(servers, keys, cv)
    cllib.log("placement %s: through the front (ketama, crc32)" % tag)
    fk = front_nodes(front_port, "/", keys)
    fc = front_nodes(front_port, "/crc/", keys)
    pairs = {"front-ketama/libmemcached": agreement(fk, lm, keys),
             "front-crc32/cmf": agreement(fc, cmf, keys)}
    other = {"libmemcached/cmf": agreement(lm, cmf, keys),
             "front-ketama/front-crc32": agreement(fk, fc, keys)}
    return {"servers": servers, "pairs": pairs, "different_rings": other,
            "spread": {"front-ketama": spread(fk, keys), "libmemcached": spread(lm, keys),
                       "front-crc32": spread(fc, keys), "cmf": spread(cmf, keys)},
            "disagree_examples": [k for k in keys if fk.get(k) != lm.get(k)][:5]
            + [k for k in keys if fc.get(k) != cmf.get(k)][:5]}


def run(work, n_keys, mc_port):
    """Three plain nodes and the front: the agreement before and after the
    third node is removed.  Everything is stopped before it returns."""
    import os
    import time
    http_port = cllib.free_port_on(cllib.HOSTS)
    front_port = cllib.goblin.free_port()
    d = os.path.join(work, "placement")
    nodes = []
    t0 = time.monotonic()
    try:
        for i, h in enumerate(cllib.HOSTS):
            nd = os.path.join(d, "pools%d" % i)
            n = cllib.Node(i, h, mc_port, http_port, d, os.path.join(nd, "ssd"),
                           os.path.join(nd, "hdd"), memory="256M")
            nodes.append(n)
            n.start()
        front = cllib.Front(d, mc_port, http_port, front_port)
        front.start(cllib.HOSTS)
        keys = [key(i) for i in range(n_keys)]
        servers = ["%s:%d" % (h, mc_port) for h in cllib.HOSTS]
        before = one_round("3", servers, front_port, keys)
        nodes[2].kill9()
        after = one_round("2", servers[:2], front_port, keys)
        front.proc.stop()
    finally:
        for n in nodes:
            n.stop()
    res = {"keys": n_keys, "mc_port": mc_port, "before": before, "after": after,
           "seconds": round(time.monotonic() - t0, 1)}
    res["lowest_pair"] = min(
        ((v, "%s %s" % (p, w)) for w in ("before", "after")
         for p, v in res[w]["pairs"].items()), key=lambda x: x[0])
    res["placement_agreement"] = res["lowest_pair"][0]
    cllib.log("placement: lowest pair %s %.6f (%.0f s)" % (
        res["lowest_pair"][1], res["placement_agreement"], res["seconds"]))
    return res
