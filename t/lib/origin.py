#!/usr/bin/python3
# usage: t/lib/origin.py PORT [ADDRESS]   (default 127.0.0.1)
# The HTTP origin of the cache-mode suites (t/http/2NN-cache-*.t): every
# GET or HEAD of /o/<name> answers a reproducible body whose size and
# behaviour the name spells, "-" separated after an id:
#   <id>-<size>[-<flag>...]   size in bytes (k, m suffixes)
#   rate<N>[k|m]   send at N bytes a second (after the first 16 KiB)
#   chunked        Transfer-Encoding: chunked, no Content-Length
#   cut            close the connection after half the body
#   nostore        Cache-Control: no-store
#   cookie         a Set-Cookie header
#   s404           status 404
#   wait<ms>       sleep before the headers
#   cc<seconds>    Cache-Control: max-age=<seconds>; with after<N>, every
#                  response after the first says max-age=<N>
#   smax<seconds>  Cache-Control: s-maxage=<seconds>
#   nocache, private, public, mustrev, proxyrev   Cache-Control: no-cache,
#                  private, public, must-revalidate, proxy-revalidate
#   vary           Vary: Accept-Encoding, and a body (and ETag) of its own
#                  per Accept-Encoding the request sent (its sha256:
#                  /sha/<path>?ae=<value>; no ae: none sent)
#   varystar       Vary: *
#   sie<seconds>   Cache-Control: stale-if-error=<seconds>
#   swr<seconds>   Cache-Control: stale-while-revalidate=<seconds>
#   failafter<N>   every request after the first N answers 503
#   revalcc<N>     a 304 says Cache-Control: max-age=<N>
#   noreval        If-None-Match is ignored
# A GET whose If-None-Match is the body's ETag gets 304 (counted).
#   age<seconds>   Age: <seconds>; agebad: Age: 7200.0 (malformed: stale);
#                  agefirst: Age: 0, 7200 (the first member counts);
#                  agedup: Age: 3600, 3600
#   exp<seconds>   Expires: <seconds> from now; expbad: Expires: 0
#   dateback<N>, datefwd<N>   Date: <N> seconds before (after) now
#   hdrs           X-Origin-Id: <id> and a Link header (end to end), and
#                  X-Hop: 1 named by Connection: X-Hop (hop by hop)
#   mut            each PUT or POST of it makes a new version: another
#                  body and ETag (/sha/ says the current one's)
# Other methods of /o/... answer 200 "<METHOD> done", with a Location and
# a Content-Location of the query's loc= and cl= values when it has them
# (or of the request's X-Location and X-Content-Location headers),
# and the status of its st= (a 500: the request failed).  GET /count/<path>
# says how many requests /<path> got (all methods), /304/<path> how many
# of them were answered 304; /sha/<path> the
# sha256 of its full body; /ranges/<path> the Range headers it was sent;
# /broken/<path> how many of its responses the client (the cache) cut.
# Counting is per path since start; the suites use unique ids.
import hashlib
import http.server
import random
import socketserver
import sys
import threading
import time
import urllib.parse

counts = {}
versions = {}
not_modified = {}
ranges = {}
broken = {}
lock = threading.Lock()


def size_of(s):
    mult = 1
    if s[-1] in "km":
        mult = 1024 if s[-1] == "k" else 1024 * 1024
        s = s[:-1]
    return int(s) * mult


def spec(path):
    name = path.rsplit("/", 1)[-1]
    parts = name.split("-")
    o = {"size": size_of(parts[1]) if len(parts) > 1 else 1000}
    for f in parts[2:]:
        if f.startswith("rate"):
            o["rate"] = size_of(f[4:])
        elif f.startswith("wait"):
            o["wait"] = int(f[4:]) / 1000.0
        elif f.startswith("cc"):
            o["cc"] = int(f[2:])
        elif f.startswith("smax"):
            o["smax"] = int(f[4:])
        elif f.startswith("sie"):
            o["sie"] = int(f[3:])
        elif f.startswith("swr"):
            o["swr"] = int(f[3:])
        elif f.startswith("failafter"):
            o["failafter"] = int(f[9:])
        elif f.startswith("after"):
            o["after"] = int(f[5:])
        elif f.startswith("revalcc"):
            o["revalcc"] = int(f[7:])
        elif f in ("agebad", "agefirst", "agedup"):
            o["age"] = {"agebad": "7200.0", "agefirst": "0, 7200",
                        "agedup": "3600, 3600"}[f]
        elif f.startswith("age"):
            o["age"] = int(f[3:])
        elif f.startswith("dateback") or f.startswith("datefwd"):
            o["date"] = int(f[8:]) * -1 if f[4] == "b" else int(f[7:])
        elif f.startswith("exp") and f != "expbad":
            o["exp"] = int(f[3:])
        elif f.startswith("s") and f[1:].isdigit():
            o["status"] = int(f[1:])
        else:
            o[f] = True
    return o


def variant(path, ae):
    """The name a body and ETag are made from: with vary, the
    Accept-Encoding sent (None: none; spaces around commas do not count)
    too; with mut, its version after the first."""
    vary = spec(path).get("vary")
    with lock:
        v = versions.get(path, 0)
    if v:
        path = "%s#%d" % (path, v)
    if vary:
        return path + "\n" + ("-" if ae is None else "=" + ",".join(
            v.strip() for v in ae.split(",")))
    return path


def body_of(name, size):
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return random.Random(seed).randbytes(size)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def plain(self, code, text):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        for what in ("count", "sha", "ranges", "broken", "304"):
            if path.startswith("/" + what + "/"):
                target = path[len(what) + 1:]
                if what == "count":
                    with lock:
                        return self.plain(200, str(counts.get(target, 0)))
                if what == "broken":
                    with lock:
                        return self.plain(200, str(broken.get(target, 0)))
                if what == "304":
                    with lock:
                        return self.plain(200,
                                          str(not_modified.get(target, 0)))
                if what == "ranges":
                    with lock:
                        return self.plain(200, ",".join(ranges.get(target, [])))
                o = spec(target)
                ae = urllib.parse.parse_qs(query).get("ae", [None])[0]
                return self.plain(200, hashlib.sha256(
                    body_of(variant(target, ae), o["size"])).hexdigest())
        try:
            self.serve(path, self.command == "HEAD")
        except (BrokenPipeError, ConnectionResetError):
            with lock:
                broken[path] = broken.get(path, 0) + 1
            self.close_connection = True

    def do_HEAD(self):
        self.do_GET()

    def other(self):
        path, _, query = self.path.partition("?")
        q = urllib.parse.parse_qs(query)
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        with lock:
            counts[path] = counts.get(path, 0) + 1
            if self.command in ("PUT", "POST") and spec(path).get("mut"):
                versions[path] = versions.get(path, 0) + 1
        data = (self.command + " done").encode()
        self.send_response(int(q.get("st", ["200"])[0]))
        for name, arg in (("Location", "loc"), ("Content-Location", "cl")):
            v = self.headers.get("X-" + name, q.get(arg, [None])[0])
            if v is not None:
                self.send_header(name, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = other

    def serve(self, path, head):
        o = spec(path)
        with lock:
            counts[path] = counts.get(path, 0) + 1
            if self.headers.get("Range"):
                ranges.setdefault(path, []).append(self.headers["Range"])
        if "wait" in o:
            time.sleep(o["wait"])
        with lock:
            failing = counts[path] > o.get("failafter", counts[path])
        if failing:
            return self.plain(503, "origin down")
        name = variant(path, self.headers.get("Accept-Encoding"))
        etag = '"%s"' % hashlib.sha256(name.encode()).hexdigest()[:16]
        if self.headers.get("If-None-Match") == etag and \
                o.get("status", 200) == 200 and not o.get("noreval"):
            with lock:
                not_modified[path] = not_modified.get(path, 0) + 1
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Cache-Control", "max-age=%d"
                             % o.get("revalcc", o.get("cc", 0)))
            self.end_headers()
            return
        body = body_of(name, o["size"])
        status = o.get("status", 200)
        start, end = 0, len(body)
        rng = self.headers.get("Range")
        if rng and status == 200 and rng.startswith("bytes=") and \
                "," not in rng:
            a, b = rng[6:].split("-")
            if a:
                start = int(a)
                end = min(int(b) + 1, len(body)) if b else len(body)
            else:
                start = max(len(body) - int(b), 0)
            status = 206
        if "date" in o:
            self.send_response_only(status)
            self.send_header("Date", self.date_time_string(
                time.time() + o["date"]))
        else:
            self.send_response(status)
        self.send_header("Content-Type", "application/x-goblin-test")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")
        if status == 206:
            self.send_header("Content-Range",
                             "bytes %d-%d/%d" % (start, end - 1, len(body)))
        names = {"nostore": "no-store", "nocache": "no-cache",
                 "private": "private", "public": "public",
                 "mustrev": "must-revalidate",
                 "proxyrev": "proxy-revalidate"}
        cc = [v for k, v in names.items() if o.get(k)]
        if "cc" in o:
            with lock:
                later = counts[path] > 1 and "after" in o
            cc.append("max-age=%d" % (o["after"] if later else o["cc"]))
        if "smax" in o:
            cc.append("s-maxage=%d" % o["smax"])
        if "sie" in o:
            cc.append("stale-if-error=%d" % o["sie"])
        if "swr" in o:
            cc.append("stale-while-revalidate=%d" % o["swr"])
        if cc:
            self.send_header("Cache-Control", ", ".join(cc))
        if "age" in o:
            self.send_header("Age", str(o["age"]))
        if o.get("vary"):
            self.send_header("Vary", "Accept-Encoding")
        if o.get("varystar"):
            self.send_header("Vary", "*")
        if "exp" in o:
            self.send_header("Expires", self.date_time_string(
                time.time() + o["exp"]))
        elif o.get("expbad"):
            self.send_header("Expires", "0")
        if o.get("hdrs"):
            self.send_header("X-Origin-Id", path.rsplit("/", 1)[-1])
            self.send_header("Link", "</style.css>; rel=preload")
            self.send_header("Connection", "X-Hop")
            self.send_header("X-Hop", "1")
        if o.get("cookie"):
            self.send_header("Set-Cookie", "session=1")
        chunked = o.get("chunked")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(end - start))
        if o.get("cut"):
            self.send_header("Connection", "close")
        self.end_headers()
        if head:
            return
        data = body[start:end]
        if o.get("cut"):
            data = data[:len(data) // 2]
        rate = o.get("rate")
        t0 = time.time()
        sent = 0
        step = 16384
        while sent < len(data):
            piece = data[sent:sent + step]
            if chunked:
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            else:
                self.wfile.write(piece)
            self.wfile.flush()
            sent += len(piece)
            if rate and sent >= step:
                ahead = t0 + (sent - step) / rate - time.time()
                if ahead > 0:
                    time.sleep(ahead)
        if o.get("cut"):
            self.close_connection = True
            return
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # a client (the cache) that closes or resets is no test failure
        pass


if __name__ == "__main__":
    Server((sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1",
            int(sys.argv[1])), Handler).serve_forever()
