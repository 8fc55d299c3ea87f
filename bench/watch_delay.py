#!/usr/bin/env python3
"""Delay from event to observation, for bench/watch_methods (issue 14 section 3).

  watch_delay.py window EVENTS TIMELINE OUT_DELAYS   one window of one method
  watch_delay.py table DELAYS...                      the table over all windows

EVENTS is test/targets/xp_watch.erl's watch.events ("KIND TIME_NS", CLOCK_MONOTONIC: its first
line "clock ok" says the VM checked os:perf_counter against it); TIMELINE is a method's
observations: "s TIME_NS STATE" (a spy snapshot, a poll) or "c TIME_NS FUNCTION" (a scheduler
sample of P: it shows P running). Per event inside the observed span, the delay is the first
observation at or after the event showing the new state, taken before the next event (the state's
end); when none shows it in time, the episode was missed. `window` appends "METHOD KIND
DELAY_US|miss" lines to OUT_DELAYS for each method the timeline holds (s lines: the method; c
lines: "sched") and prints the target's own shares over exactly the observed span: "running
waiting runnable" (fractions), from the events. `table` prints per method and kind the count,
missed share, median and 90th percentile. Does not own: running the methods (watch_methods)."""
import sys

STATES = {"running": "running", "runnable": "runnable", "waiting": "waiting"}


def events_of(path):
    ev = []
    with open(path) as f:
        first = f.readline().strip()
        if first != "clock ok":
            sys.exit("watch_delay: events clock not verified: " + first)
        for line in f:
            k, t = line.split()
            ev.append((int(t), k))
    ev.sort()
    return ev


def timeline_of(path):
    snaps, cpu = [], []
    with open(path) as f:
        for line in f:
            p = line.split(" ", 2)
            if len(p) < 3:
                continue
            if p[0] == "s":
                snaps.append((int(p[1]), p[2].strip()))
            elif p[0] == "c":
                cpu.append((int(p[1]), "running"))
    snaps.sort()
    cpu.sort()
    return snaps, cpu


def delays(ev, obs, lo, hi, kinds):
    """(kind, delay_us or None) for each event of kinds inside [lo, hi]."""
    res, j = [], 0
    for i in range(len(ev) - 1):
        t, k = ev[i]
        end = ev[i + 1][0]
        if t < lo or end > hi or k not in kinds:
            continue
        while j < len(obs) and obs[j][0] < t:
            j += 1
        d = None
        for o in range(j, len(obs)):
            if obs[o][0] >= end:
                break
            if obs[o][1] == STATES[k]:
                d = (obs[o][0] - t) / 1000.0
                break
        res.append((k, d))
    return res


def truth(ev, lo, hi):
    tot = {"running": 0, "waiting": 0, "runnable": 0}
    for i in range(len(ev) - 1):
        a, k = ev[i]
        b = ev[i + 1][0]
        a, b = max(a, lo), min(b, hi)
        if b > a:
            tot[k] += b - a
    n = sum(tot.values()) or 1
    return "%.4f %.4f %.4f" % (tot["running"] / n, tot["waiting"] / n, tot["runnable"] / n)


def window(events, timeline, out, method):
    ev = events_of(events)
    snaps, cpu = timeline_of(timeline)
    if not snaps:
        print("- - -")
        return
    lo, hi = snaps[0][0], snaps[-1][0]
    with open(out, "a") as f:
        # Scheduler samples only ever show P running: their delay is to running alone.
        for name, obs, kinds in ((method, snaps, STATES), ("sched", cpu, ("running",))):
            if not obs:
                continue
            for k, d in delays(ev, obs, lo, hi, kinds):
                f.write("%s %s %s\n" % (name, k, "miss" if d is None else "%.1f" % d))
    print(truth(ev, lo, hi))


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def table(paths):
    rows = {}
    for p in paths:
        otp = p.rsplit("/", 1)[-1].split(".")[1]
        with open(p) as f:
            for line in f:
                m, k, d = line.split()
                rows.setdefault((otp, m, k), []).append(None if d == "miss" else float(d))
    print("%-4s %-7s %-9s %7s %7s %11s %9s" % ("OTP", "method", "event", "events", "missed", "median_us",
                                               "p90_us"))
    for (otp, m, k), v in sorted(rows.items()):
        seen = [x for x in v if x is not None]
        med = "%.0f" % pct(seen, 0.5) if seen else "-"
        p90 = "%.0f" % pct(seen, 0.9) if seen else "-"
        print("%-4s %-7s %-9s %7d %6.1f%% %11s %9s" % (otp, m, k, len(v), 100.0 * (len(v) - len(seen)) / len(v),
                                                      med, p90))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "window":
        window(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        table(sys.argv[2:])
    else:
        sys.exit(__doc__)
