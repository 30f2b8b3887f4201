"""usage: sys.path.insert(0, "t/lib"); import crashmodel

The model of t/daemon/crash-model.test: per key, the states that the
acknowledged operations allow (a value, flags and TTL class, or absent),
with the operations in flight at a death allowed to have happened or not,
in any order with one another.  Op applies one operation to a state,
KeyModel holds a key's states, Model every key's and the violations found
(lost, stale, resurrected, wrong).
"""

import collections
import threading

import restartlib as R

U64 = 2 ** 64 - 1
ABSENT = ("NOT_STORED", "NOT_FOUND", "NF", "NS", None)
KINDS = ("lost", "stale", "resurrected", "wrong")



# ---- the operations and what each does to a state ----
# A state is None (absent) or (value bytes, flags, TTL class).

def counter(data):
    """The number a counter holds (goblin-store's parse: 1-20 bytes,
    digits, then only spaces), None when it is not one."""
    if not 1 <= len(data) <= 20:
        return None
    digits = data.rstrip(b" ")
    if not digits or not digits.isdigit() or int(digits) > U64:
        return None
    return int(digits)


class Op:
    """One client operation: <kind>, <key>, its arguments; apply(state)
    gives (new state, the reply it gets)."""

    __slots__ = ("id", "kind", "key", "a")
    ids = iter(range(1, 1 << 62))

    def __init__(self, kind, key, **a):
        self.id = next(Op.ids)
        self.kind, self.key, self.a = kind, key, a

    def apply(self, s):
        a, k = self.a, self.kind
        if k in ("set", "add", "replace", "cas"):
            new = (a["data"], a["flags"], a["ttl"])
            ok, no = a["ok"], a["no"]
            if k == "add":
                return (new, ok) if s is None else (s, no)
            if k in ("replace", "cas"):
                return (None, no) if s is None else (new, ok)
            return new, ok
        if k in ("append", "prepend"):
            if s is None:
                return None, a["no"]
            d = s[0] + a["data"] if k == "append" else a["data"] + s[0]
            return (d, s[1], s[2]), a["ok"]
        if k == "incr":
            if s is None:
                return None, a["no"]
            v = counter(s[0])
            if v is None:
                return s, "CLIENT_ERROR"
            v = max(v + a["delta"], 0) if a["delta"] < 0 else \
                (v + a["delta"]) & U64
            return (b"%d" % v, s[1], s[2]), a["ok"] + str(v)
        if k == "delete":
            return None, (a["no"] if s is None else a["ok"])
        if k == "touch":
            if s is None:
                return None, "NOT_FOUND"
            return (s[0], s[1], a["ttl"]), "TOUCHED"
        if k == "get":
            return s, (None if s is None else s[:2])
        if k == "mg":
            return s, s
        if k == "flush":
            return None, "OK"
        raise AssertionError("no model for %s" % k)

    def text(self):
        a = dict(self.a)
        if "data" in a:
            a["data"] = short(a["data"])
        return "%s %s %s" % (self.kind, self.key, a)


def hstate(s):
    return hash(s)


def remember(history, h, most=20000):
    """Adds <h> to <history> (a dict in insertion order), the older half
    forgotten past <most>: a long run's memory stays bounded."""
    history[h] = 0
    if len(history) > most:
        for old in list(history)[:most // 2]:
            del history[old]


class KeyModel:
    """What one key may hold: configurations (state, frozenset of
    (op id, reply) applied of the pending ops)."""

    def __init__(self, state=None):
        self.reset(state)
        self.history = {hstate(None): 0}    # states it may have held
        self.history_data = {hash(None): 0}

    def reset(self, state):
        self.configs = {(state, frozenset())}
        self.pending = {}
        self.tainted = False
        self.trace = collections.deque(maxlen=24)   # for -v

    def closure(self):
        out = set(self.configs)
        todo = list(out)
        while todo:
            s, applied = todo.pop()
            done = {i for i, _ in applied}
            for i, op in self.pending.items():
                if i in done:
                    continue
                s2, r = op.apply(s)
                c = (s2, applied | {(i, r)})
                if c not in out:
                    out.add(c)
                    todo.append(c)
        for s, _ in out:
            remember(self.history, hstate(s))
            remember(self.history_data, hash(s if s is None else s[:2]))
        return out

    def states(self):
        return {s for s, _ in self.closure()}

    def guess(self):
        """One state it may hold (for choosing operations)."""
        return next(iter(self.configs))[0]

    def respond(self, op, reply):
        """True when a linearization gives <op> <reply>."""
        cl = self.closure()
        key = (op.id, reply)
        new = {(s, ap - {key}) for s, ap in cl if key in ap}
        del self.pending[op.id]
        if not new:
            return False
        self.configs = new
        return True

    def classify(self, got, data_only=False):
        """The kind of a value <got> no configuration allows."""
        states = self.states()
        if got is None:
            return "lost"
        seen = got in self.history_data if data_only else \
            hstate(got) in self.history
        if not seen:
            return "wrong"
        return "resurrected" if states == {None} else "stale"

    def classify_reply(self, op, reply):
        states = self.states()
        if op.kind in ("get", "mg"):
            return self.classify(reply, op.kind == "get")
        if reply in ABSENT and None not in states:
            return "lost"
        if reply not in ABSENT and states == {None}:
            return "resurrected"
        return "wrong"


class Model:
    """Every key's KeyModel, one lock; the violations found."""

    def __init__(self, keys):
        self.keys = {k: KeyModel() for k in keys}
        self.lock = threading.Lock()
        self.bad = {kind: [] for kind in KINDS}

    def invoke(self, op):
        with self.lock:
            for km in self.models(op):
                km.pending[op.id] = op
                km.trace.append("%s: %s" % (threading.current_thread().name,
                                            op.text()))

    def models(self, op):
        if op.kind == "flush":
            return list(self.keys.values())
        return [self.keys[op.key]]

    def respond(self, op, reply):
        with self.lock:
            for km in self.models(op):
                km.trace.append("%s: %s -> %s" % (
                    threading.current_thread().name, op.text(), short(reply)))
                if km.tainted:
                    km.pending.pop(op.id, None)
                    continue
                if not km.respond(op, reply) or len(km.configs) > 4096:
                    self.violation(km, op, reply)

    def violation(self, km, op, reply):
        kind = km.classify_reply(op, reply) if len(km.configs) <= 4096 \
            else "wrong"
        self.bad[kind].append("%s -> %s; allowed %s%s" % (
            op.text(), short(reply), [short(s) for s in km.states()][:4],
            "".join("\n          " + t for t in km.trace)
            if R.VERBOSE else ""))
        km.tainted = True           # judged once; resynced after the restart
        km.pending.clear()

    def guess(self, key):
        with self.lock:
            km = self.keys[key]
            return km.guess(), len(km.configs)

    def verify(self, got, judge=True):
        """After a restart: <got> {key: state}; what no configuration
        allows ({kind: [why]}); the model then holds what was found."""
        found = {kind: [] for kind in KINDS}
        for k, km in self.keys.items():
            if judge and not km.tainted and got[k] not in km.states():
                found[km.classify(got[k])].append(
                    "%s holds %s; allowed %s" % (k, short(got[k]), [
                        short(s) for s in km.states()][:4]))
            km.reset(got[k])
        self.bad = {kind: [] for kind in KINDS}
        return found

    def in_flight(self):
        with self.lock:
            return len({i for km in self.keys.values() for i in km.pending})


def short(s):
    if s is None:
        return "absent"
    if isinstance(s, tuple):
        return "(%s)" % ", ".join(short(x) for x in s)
    if isinstance(s, bytes):
        return "%d bytes %r" % (len(s), s[:24])
    return repr(s)
