#!/usr/bin/env python3
"""Where a single window's share error comes from, for bench/watch_methods' rows.tsv files.

  watch_windows.py ROWS.tsv...

Per OTP and method, over its windows, for the running and runnable shares (points):
  total   the method's share minus the target's from its stats file (what the table reports)
  align   the stats' share minus the target's own over exactly the span the method observed
          (from its events: the stats cover whole 100 ms writes around the window, and the
          window starts before watch's first snapshot)
  method  the method's share minus the target's over the same span: the error of watch itself
as mean (bias) and standard deviation over windows, the largest |method|, and binom: the
standard deviation a share estimated from that many independent snapshots would have,
sqrt(p (1 - p) / taken), the noise of the snapshot count alone; edge: the standard deviation
the snapshots' spacing alone gives (each of the state's edges placed anywhere in the gap
between the two snapshots around it: g^2 / 12 per edge, summed; from DIR/timeline.OTP.ROUND.
METHOD and DIR/events.OTP when the run kept them, else -). punct: snapshots taken of asked
(mean), and r: the correlation over windows between method error and that punctuality. Columns
of rows.tsv as bench/watch_methods writes them (19-21: the target's running, waiting and
runnable shares over the observed span).

Then, from the kept timelines, where watch puts each change against the target's event: for
each pair of consecutive snapshots whose states differ and between which exactly that one
change happened, the change's place as watch.c's credit() puts it (the punctual part of the gap
split evenly; a late spy's lateness to the running side between running and waiting) minus the
event's time: mean (the bias), median and 90th percentile of its size, in microseconds, and the
share of such pairs whose gap was late (over one interval + 30 us). Does not own: running the
windows."""
import bisect
import math
import os
import statistics as st
import sys

KINDS = {"running": "running", "runnable": "runnable"}


def edge_sd(events, timeline):
    """Per state, the share's standard deviation from edge placement within snapshot gaps."""
    if not (os.path.exists(events) and os.path.exists(timeline)):
        return None
    ts = sorted(int(l.split()[1]) for l in open(timeline) if l.startswith("s "))
    ev = []
    with open(events) as f:
        f.readline()
        ev = sorted((int(t), k) for k, t in (l.split() for l in f))
    if len(ts) < 2:
        return None
    lo, hi = ts[0], ts[-1]
    var = {k: 0.0 for k in KINDS}
    for i, (t, k) in enumerate(ev):
        if t <= lo or t >= hi:
            continue
        j = bisect.bisect_left(ts, t)
        g = ts[j] - ts[j - 1]
        prev = ev[i - 1][1] if i else None
        for state in (k, prev):  # the edge starts k and ends the state before it
            if state in var:
                var[state] += g * g / 12.0
    return {k: 100 * math.sqrt(v) / (hi - lo) for k, v in var.items()}


INTERVAL_NS, WAKE_NS, CAP = 1000000, 30000, 10


def placed(t0, s0, t1, s1):
    """Where credit() (external/src/cmd/watch/watch.c) puts a change between two snapshots."""
    dt = min(t1 - t0, CAP * INTERVAL_NS)
    planned = INTERVAL_NS + WAKE_NS
    runs = (s0 == "running") != (s1 == "running") and "runnable" not in (s0, s1)
    if dt > planned and runs:
        return t0 + planned // 2 + (dt - planned if s0 == "running" else 0)
    return t0 + dt // 2


def edges(events, timeline, out):
    ts = sorted((int(l.split()[1]), l.split()[2]) for l in open(timeline) if l.startswith("s "))
    with open(events) as f:
        f.readline()
        ev = sorted((int(t), k) for k, t in (l.split() for l in f))
    times = [t for t, _ in ev]
    for (t0, s0), (t1, s1) in zip(ts, ts[1:]):
        if s0 == s1:
            continue
        a, b = bisect.bisect_left(times, t0), bisect.bisect_left(times, t1)
        if b - a != 1 or ev[a][1] != s1 or a == 0 or ev[a - 1][1] != s0:
            continue
        late = t1 - t0 > INTERVAL_NS + WAKE_NS
        out.setdefault(s0 + ">" + s1, []).append(((placed(t0, s0, t1, s1) - ev[a][0]) / 1e3, late))


def edge_table(paths):
    print()
    print("%-28s %-4s %-19s %6s %8s %8s %8s %6s" % ("rows", "OTP", "change", "n", "bias_us",
                                                    "med|e|", "p90|e|", "late"))
    for p in paths:
        d = os.path.dirname(p) or "."
        per = {}
        for name in sorted(os.listdir(d)):
            if name.startswith("timeline."):
                otp = name.split(".")[1]
                ev = os.path.join(d, "events." + otp)
                if os.path.exists(ev):
                    edges(ev, os.path.join(d, name), per.setdefault(otp, {}))
        for otp, kinds in sorted(per.items()):
            for k, v in sorted(kinds.items()):
                e = sorted(abs(x) for x, _ in v)
                print("%-28s %-4s %-19s %6d %+8.0f %8.0f %8.0f %5.0f%%" % (
                    p[-28:], otp, k, len(v), st.mean(x for x, _ in v), e[len(e) // 2],
                    e[int(0.9 * (len(e) - 1))], 100 * sum(l for _, l in v) / len(v)))


def corr(x, y):
    if len(x) < 3 or st.pstdev(x) == 0 or st.pstdev(y) == 0:
        return float("nan")
    mx, my = st.mean(x), st.mean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (len(x) * st.pstdev(x) * st.pstdev(y))


def main(paths):
    groups = {}
    for p in paths:
        for line in open(p):
            f = line.rstrip("\n").split("\t")
            if len(f) < 21 or f[1] in ("none", "sched") or f[18] == "-" or f[5] == "-":
                continue
            g = groups.setdefault((p, f[0], f[1]), [])
            d = os.path.dirname(p) or "."
            f.append(edge_sd(os.path.join(d, "events." + f[0]),
                             os.path.join(d, "timeline.%s.%d.%s" % (f[0], len(g) + 1, f[1]))))
            g.append(f)
    print("%-28s %-4s %-6s %-8s %2s %13s %13s %13s %6s %6s %5s %5s %5s" % (
        "rows", "OTP", "method", "state", "n", "total", "align", "method", "worst", "binom",
        "edge", "punct", "r"))
    for (p, otp, m), rows in sorted(groups.items()):
        for name, tc, mc, ec in (("running", 2, 5, 18), ("runnable", 4, 7, 20)):
            tot, ali, met, bino, pun, edge = [], [], [], [], [], []
            for f in rows:
                truth, meas, exact = float(f[tc]), float(f[mc]), float(f[ec])
                taken, asked = float(f[10]), float(f[11])
                tot.append(100 * (meas - truth))
                ali.append(100 * (truth - exact))
                met.append(100 * (meas - exact))
                bino.append(100 * math.sqrt(exact * (1 - exact) / taken) if taken else float("nan"))
                pun.append(taken / asked if asked else float("nan"))
                if f[-1]:
                    edge.append(f[-1][name])
            ms = lambda v: "%+5.2f±%4.2f" % (st.mean(v), st.stdev(v) if len(v) > 1 else 0)
            print("%-28s %-4s %-6s %-8s %2d %13s %13s %13s %+6.2f %6.2f %5s %4.0f%% %+5.2f" % (
                p[-28:], otp, m, name, len(rows), ms(tot), ms(ali), ms(met),
                max(met, key=abs), st.mean(bino), "%.2f" % st.mean(edge) if edge else "-",
                100 * st.mean(pun), corr(pun, met)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
    edge_table(sys.argv[1:])
