# usage: imported by bench/compare.d/report.py and perf.py (not run on its own)
"""The figures every report module reads from a results dict (a peer's
measured phase, its latencies, ratios, a claim row) and markdown tables."""


def measured_phase(p):
    """The peer's measured phase: 'run', or 'read-back' for durability."""
    ph = p["phases"]
    return ph.get("run") or ph["read-back"]


def measured(p):
    return measured_phase(p)["run"]


def lat(p, which, pct):
    return measured(p)["latency_us"][which][pct]


def ratio(a, b):
    return a / b if b else float("inf") if a else 1.0


def claim(text, holds, measured_text):
    return {"claim": text, "holds": bool(holds), "measured": measured_text}


def net_name(res):
    return res["network"]["name"]


def table(header, rows):
    """Markdown table lines."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def fmt_us(us):
    return "%.2f ms" % (us / 1000) if us >= 1000 else "%.0f us" % us

