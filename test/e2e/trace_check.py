#!/usr/bin/env python3
"""Checks extrospect's Chrome trace event files (record --format trace, record --ring dumps).

  trace_check.py validate FILE...
      each file is a JSON object whose traceEvents hold only well-formed events: ph, name, pid,
      tid on every event; ts on all but metadata; dur >= 0 on complete (X) events; s on instant
      events; args an object; the required fields of the Trace Event Format document.
  trace_check.py stalls --log STALLS --since US --until US --kind KIND --server NAME
                 --function FN DIR
      every stall in the target's log (lines "START_US DURATION_US") that starts within
      [since, until] (microseconds since the epoch) is in one of DIR's dumps named
      STAMP-KIND.trace.json: a run of the server (cat process, args.name NAME) whose duration
      is the stall's within 10 % or 15 ms and whose start is within 30 ms of the stall's, with
      a slice named FN nested in it; beyond these, by what the run's args say its edges are
      uncertain (start_uncertain_ms, end_uncertain_ms: the OS preempted the scheduler's thread
      where the edge falls).
      Each dump's .folded and .txt are there, the .txt names the trigger, and the trace
      marks it with one instant event.
Prints one line per check, the measured errors, and exits 0 when all passed, 1 otherwise.
"""
import glob
import json
import os
import re
import sys

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail))
    if not ok:
        failed += 1


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate_event(e):
    """The reason e is not a valid trace event, or None."""
    if not isinstance(e, dict):
        return "not an object"
    ph = e.get("ph")
    if not isinstance(ph, str) or len(ph) != 1:
        return "no ph"
    if not isinstance(e.get("name"), str):
        return "no name"
    if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
        return "no integer pid/tid"
    if ph != "M" and not is_num(e.get("ts")):
        return "no ts"
    if ph == "X" and not (is_num(e.get("dur")) and e["dur"] >= 0):
        return "X without dur >= 0"
    if ph == "i" and e.get("s") not in ("g", "p", "t"):
        return "instant without scope"
    if "args" in e and not isinstance(e["args"], dict):
        return "args not an object"
    if ph not in "XBEiIMC":
        return "unexpected ph " + ph
    return None


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return doc


def validate(path):
    try:
        doc = load(path)
    except (OSError, ValueError) as err:
        check(f"{os.path.basename(path)}: parses as JSON", False, str(err))
        return None
    evs = doc.get("traceEvents") if isinstance(doc, dict) else None
    check(f"{os.path.basename(path)}: an object with a traceEvents array", isinstance(evs, list))
    if not isinstance(evs, list):
        return None
    bad = [(i, validate_event(e)) for i, e in enumerate(evs)]
    bad = [(i, why) for i, why in bad if why]
    check(f"{os.path.basename(path)}: {len(evs)} events well-formed", not bad,
          "; ".join(f"#{i}: {why}" for i, why in bad[:5]))
    names = {e["tid"]: e["args"].get("name") for e in evs
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    tracks = {e["tid"] for e in evs if e.get("ph") == "X"}
    check(f"{os.path.basename(path)}: every track named", tracks <= set(names),
          str(sorted(tracks - set(names))))
    return evs


# A run broken by a gap this short in which no other process ran on the scheduler it left or the
# one it resumed on (the scheduler's own loop between two time slices, the OS holding its thread
# off the CPU, an asleep scheduler waking to take it) is the same stall as the server timed it:
# ci76 (2 December 2026) split a 150 ms stall on one scheduler into 61.2 ms, a 1 ms sample of the
# scheduler with no process and 1.6 ms without samples, then 85.7 ms; stop 52's landing CI split
# a 450 ms stall into 13.4 ms on scheduler 1, 202.2 ms on scheduler 2, and, 1.8 ms later (scheduler
# 1 waking from sleep to take it), 232.9 ms on scheduler 1.
RESUMED_GAP_US = 5000


def others_between(evs, tid, name, a, b):
    """Whether a process or collection other than name's ran on tid between a and b."""
    return any(e.get("ph") == "X" and e.get("tid") == tid and e.get("cat") in ("process", "gc")
               and e.get("args", {}).get("name") != name and e["ts"] < b and e["ts"] + e["dur"] > a
               for e in evs)


def migrated(runs, best, name):
    """The run best, joined with the runs of the same process in the same dump that continue it
    on another scheduler (the VM moved the process): each starts within a sampling period and a
    half of where the last ended, plus what they say their edges are uncertain by; or within
    RESUMED_GAP_US, nothing else run in between on the scheduler it left or the one it resumed on
    (moves counts the runs joined from another scheduler)."""
    _, ts, rdur, tid, base, evs, sunc, eunc = best
    same = sorted((r for r in runs if r[3] == base), key=lambda r: r[0])
    start, end, moves = ts, ts + rdur, 0
    start_tid, end_tid = tid, tid  # the schedulers at the joined run's two edges
    changed = True
    while changed:
        changed = False
        for r in same:
            rs, re_, su, eu = r[0], r[0] + r[1], r[5], r[6]

            def joins(a, b, unc, edge_tid):  # the gap a..b between the run so far and r
                return abs(b - a) <= 1500 + unc or (
                    0 <= b - a <= RESUMED_GAP_US and
                    not any(others_between(evs, t, name, a, b) for t in {edge_tid, r[2]}))
            if re_ > end and joins(end, rs, eunc + su, end_tid):
                moves += r[2] != end_tid
                end, eunc, end_tid, changed = re_, eu, r[2], True
            elif rs < start and joins(re_, start, sunc + eu, start_tid):
                moves += r[2] != start_tid
                start, sunc, start_tid, changed = rs, su, r[2], True
    return start, end - start, sunc, eunc, moves


def stalls(args):
    opts = {"--log": None, "--since": None, "--until": None, "--kind": None, "--server": None,
            "--function": None}
    rest = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    kind, server, fn = opts["--kind"], opts["--server"], opts["--function"]
    since, until = int(opts["--since"]), int(opts["--until"])
    dumps = sorted(glob.glob(os.path.join(rest[0], "*.trace.json")))
    check(f"dumps in {rest[0]}", bool(dumps))
    runs = []  # (ts, dur, tid, dump, events)
    for path in dumps:
        base = os.path.basename(path)
        check(f"{base}: named STAMP-{kind}",
              re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-" + re.escape(kind) + r"\.trace\.json", base))
        stem = path[: -len(".trace.json")]
        check(f"{base}: .folded and .txt beside it",
              os.path.isfile(stem + ".folded") and os.path.isfile(stem + ".txt"))
        if os.path.isfile(stem + ".txt"):
            with open(stem + ".txt", encoding="utf-8") as f:
                txt = f.read()
            check(f"{base}: summary names the trigger", f"Trigger: {kind} at " in txt, txt[:200])
        evs = validate(path)
        if evs is None:
            continue
        marks = [e for e in evs if e.get("ph") == "i" and e.get("cat") == "trigger"]
        check(f"{base}: one trigger mark", len(marks) == 1, str(marks))
        for e in evs:
            if e.get("ph") == "X" and e.get("cat") in ("process", "gc") and \
                    e.get("args", {}).get("name") == server:
                runs.append((e["ts"], e["dur"], e["tid"], base, evs,
                             1000 * e["args"].get("start_uncertain_ms", 0),
                             1000 * e["args"].get("end_uncertain_ms", 0)))
    with open(opts["--log"], encoding="utf-8") as f:
        log = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    todo = [(s, d) for s, d in log if since <= s <= until]
    check(f"stalls to find: {len(todo)} of {len(log)} logged", len(todo) >= 2,
          f"since {since} until {until}: {log}")
    errs = []
    for start, dur in todo:
        best = None
        for ts, rdur, tid, base, evs, sunc, eunc in runs:
            overlap = min(ts + rdur, start + dur) - max(ts, start)
            if overlap > 0 and (best is None or overlap > best[0]):
                best = (overlap, ts, rdur, tid, base, evs, sunc, eunc)
        what = f"stall at {start} of {dur / 1000:.1f} ms"
        if best is None:
            check(f"{what}: a run of {server} in a dump", False, "none overlaps it")
            continue
        _, ts, rdur, tid, base, evs, sunc, eunc = best
        ts, rdur, sunc, eunc, moves = migrated(runs, best, server)
        derr, serr = rdur - dur, ts - start
        errs.append((serr, derr, dur))
        unc = f", edges uncertain by {sunc / 1000:.1f} and {eunc / 1000:.1f} ms" \
            if sunc or eunc else ""
        unc += f", moved between schedulers {moves} time(s)" if moves else ""
        ok = abs(derr) <= max(0.10 * dur, 15000) + sunc + eunc and abs(serr) <= 30000 + sunc
        check(f"{what}: {server} ran {rdur / 1000:.1f} ms from {serr / 1000:+.1f} ms "
              f"({base}{unc})", ok,
              f"duration error {derr / 1000:+.1f} ms, start error {serr / 1000:+.1f} ms")
        if not ok:  # what the dump has there, to tell a split run from a misnamed or lost one
            for e in sorted((e for e in evs if e.get("ph") in ("X", "i") and
                             start - 5000 <= e.get("ts", 0) <= start + dur + 5000 and
                             e.get("cat") in ("process", "gc", "idle", "trigger")),
                            key=lambda e: e["ts"]):
                print(f"    | {(e['ts'] - start) / 1000:+9.2f} ms tid {e.get('tid')} "
                      f"{e.get('ph')} {e.get('cat')} {e.get('name')} "
                      f"dur {e.get('dur', 0) / 1000:.2f} ms {json.dumps(e.get('args', {}))}")
        # Within 1 us: at 1.8e15 us a double's step is 0.25 us, so a slice that ends where its
        # run ends can sum to just past it (ci41c: 1796313664044110.2 against ...110.0).
        inner = [e for e in evs if e.get("ph") == "X" and e["tid"] == tid and
                 e.get("name") == fn and ts - 1 <= e["ts"] and e["ts"] + e["dur"] <= ts + rdur + 1]
        check(f"{what}: {fn} inside the run", bool(inner))
    if errs:
        print("errors (ms): start " + " ".join(f"{s / 1000:+.2f}" for s, _, _ in errs) +
              "; duration " + " ".join(f"{d / 1000:+.2f}" for _, d, _ in errs) +
              "; stalls " + " ".join(f"{n / 1000:.0f}" for _, _, n in errs))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    if sys.argv[1] == "validate":
        for path in sys.argv[2:]:
            validate(path)
    elif sys.argv[1] == "stalls":
        stalls(sys.argv[2:])
    else:
        print(__doc__)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
