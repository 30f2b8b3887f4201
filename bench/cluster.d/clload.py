#!/usr/bin/python3
"""usage: bench/cluster.d/clload.py --port P --keys FILE --threads N
                                  --until T --seed S --out FILE
                                  [--prefix /o/] [--rng R]

bench/cluster's load client: <threads> threads, each on one keep-alive
HTTP/1.1 connection to the front (127.0.0.1:<port>), GET <prefix><key>
for keys drawn uniformly from FILE (object indexes, one a line) until
CLOCK_MONOTONIC reaches <until>; every body is compared byte for byte
with the object's bytes (cllib.body_of).  Writes one JSON list per GET
to <out>: [start, end, index, status, whole (1/0), node (the last
X-Node address's host), walked (1 when the front tried more than one
node), X-Cache ('' without)].  A connection that fails is counted as
status 0 and opened again."""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cllib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--keys", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--until", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--rng", type=int, default=1)
    ap.add_argument("--prefix", default="/o/")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.keys) as f:
        keys = [int(x) for x in f.read().split()]
    cllib.base(a.seed)
    results = [[] for _ in range(a.threads)]

    def client(n):
        rng = random.Random(a.rng * 7919 + n)
        out = results[n]
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
        while time.monotonic() < a.until:
            i = rng.choice(keys)
            t0 = time.monotonic()
            try:
                c.request("GET", a.prefix + cllib.key_name(i))
                r = c.getresponse()
                body = r.read()
                status = r.status
                xn = (r.getheader("X-Node") or "?").split(", ")
                node = xn[-1].rsplit(":", 1)[0]
                walked = 1 if len(xn) > 1 else 0
                xc = r.getheader("X-Cache") or ""
                whole = 1 if status == 200 and body == cllib.body_of(i, a.seed) else 0
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
            except (OSError, http.client.HTTPException):
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
                status, whole, node, walked, xc = 0, 0, "", 0, ""
            out.append([round(t0, 6), round(time.monotonic(), 6), i, status,
                        whole, node, walked, xc])
        c.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(a.out, "w") as f:
        json.dump([r for rs in results for r in rs], f)


if __name__ == "__main__":
    main()
