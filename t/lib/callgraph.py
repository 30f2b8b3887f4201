# A folder's file-level call graph, read from its objects, checked against
# the graph its header documents (t/check-module-calls, t/check-front-calls).
# File A calls file B when A's object takes a function B's object defines
# (`nm -u`, `nm --defined-only`; data, such as a table of callbacks, is
# shared, not called).  The documented graph is the header's
# " *   file  ->  file file" lines.
import os
import re
import subprocess


def nm(args, obj):
    out = subprocess.run(["nm"] + args + [obj], check=True,
                         capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


class Graph:
    """The objects <objs> (paths), each named by <short>(path)."""

    def __init__(self, objs, short):
        self.defs = {}      # function -> file defining it
        for o in objs:
            for f in nm(["--defined-only"], o):
                if len(f) == 3 and f[1] == "T":
                    self.defs[f[2]] = short(o)
        self.calls = {short(o): set() for o in objs}
        self.callers = {fn: set() for fn in self.defs}
        for o in objs:
            self.add_caller(o, short(o), node=True)

    def add_caller(self, obj, name, node=False):
        """Counts the calls <obj> (named <name>) makes into the graph's
        files; <node>: <name> is one of the graph's files."""
        for f in nm(["-u"], obj):
            fn = f[-1]
            if fn in self.defs and self.defs[fn] != name:
                if node:
                    self.calls[name].add(self.defs[fn])
                self.callers[fn].add(name)

    def cycle(self):
        """A circle of calls, as a list of files ending where it began,
        or None."""
        state = {}
        found = []

        def walk(f, path):
            state[f] = 1
            for g in sorted(self.calls[f]):
                if found:
                    return
                if state.get(g) == 1:
                    found.extend(path[path.index(g):] + [g])
                elif g not in state:
                    walk(g, path + [g])
            state[f] = 2

        for f in sorted(self.calls):
            if f not in state and not found:
                walk(f, [f])
        return found or None


def documented(header):
    """The graph <header> documents: file -> set of files."""
    doc = {}
    with open(header) as h:
        for line in h:
            m = re.match(r"^ \*\s+(\w+)\s+->\s*([\w ]*)$", line)
            if m:
                doc[m.group(1)] = set(m.group(2).split())
    return doc


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL " + what)

    def graph(self, g, header):
        """The objects' graph is <header>'s, and has no circle."""
        doc = documented(header)
        name = os.path.basename(header)
        for f in sorted(set(g.calls) | set(doc)):
            self.check(f in g.calls and f in doc and g.calls[f] == doc[f],
                       "%s calls %s, %s says %s" % (
                           f, " ".join(sorted(g.calls.get(f, ()))) or
                           "nothing", name,
                           " ".join(sorted(doc[f])) or "nothing"
                           if f in doc else "nothing of it"))
        cycle = g.cycle()
        self.check(cycle is None, "the files call each other in a circle: "
                   + " -> ".join(cycle or []))

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
