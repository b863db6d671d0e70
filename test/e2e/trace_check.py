#!/usr/bin/env python3
"""trace_check.py: checks of /debug/pprof/trace's answer (test/e2e/e2e_trace.sh; owned by
the trace work, issue 34).

  trace_check.py schema FILE        the trace-event format: every event's phase and its
                                    fields, B/E properly nested per thread, names of threads
  trace_check.py truth FILE DELAY LOG  p_trace's ground truth: trace-A runs 200 ms, sleeps
                                    300 ms, waits ~100 ms for the lock trace-B holds (running)
                                    for 100 ms; each phase as p_trace measured it (LOG: its
                                    PHASE lines) against the trace's slices, in order
  trace_check.py allocs FILE LOG    p_trace_proc alloc: thread "allocator" mallocs 1 MiB
                                    blocks (alloc_mib), LOG has an ALLOC line per block; the
                                    sampled allocations of 1 MiB must estimate the MiB allocated
                                    within the trace (a factor of 2), name alloc_mib, be freed
  trace_check.py procs FILE         p_trace_proc fork (run with heap sampling off): fork,
                                    exec in a vfork child, exec failed (ENOENT) and spawn
                                    instants on thread "forker"; otherData says heap sampling
                                    is off and no allocation is in the trace
  trace_check.py names FILE         the thread names, one a line (for the viewer check)
  trace_check.py frames FILE        stack frames read as the flame graph's: a name is the
                                    function alone (no args, no `{`, no `@@` version, never
                                    a bare 0x address), the source line in the category;
                                    otherData's note has no printf escape left (`%%`)
Prints "ok ..." / "FAIL ..." lines; exit 0 when no FAIL.
"""
import json
import statistics
import sys

fails = 0


def ok(msg):
    print("ok   " + msg)


def bad(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def schema(d):
    if not isinstance(d, dict) or not isinstance(d.get("traceEvents"), list):
        bad("top level: an object with a traceEvents array")
        return
    ev = d["traceEvents"]
    problems = []
    stacks = {}
    phases = {}
    for i, e in enumerate(ev):
        ph = e.get("ph")
        phases[ph] = phases.get(ph, 0) + 1
        if ph not in ("B", "E", "X", "i", "I", "C", "M"):
            problems.append("event %d: phase %r" % (i, ph))
            continue
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            problems.append("event %d: pid and tid must be integers" % i)
        if ph != "M" and (not num(e.get("ts")) or e["ts"] < 0):
            problems.append("event %d: ts must be a number >= 0" % i)
        if ph in ("B", "X", "i", "I", "C", "M") and not isinstance(e.get("name"), str):
            problems.append("event %d (%s): a name" % (i, ph))
        if "args" in e and not isinstance(e["args"], dict):
            problems.append("event %d: args must be an object" % i)
        if ph == "X" and (not num(e.get("dur")) or e["dur"] < 0):
            problems.append("event %d: X needs dur >= 0" % i)
        if ph in ("i", "I") and e.get("s", "t") not in ("g", "p", "t"):
            problems.append("event %d: instant scope %r" % (i, e.get("s")))
        if ph == "C" and not all(num(v) for v in e.get("args", {}).values()):
            problems.append("event %d: counter values must be numbers" % i)
        if ph == "M":
            if e["name"] in ("thread_name", "process_name") and not isinstance(
                e.get("args", {}).get("name"), str
            ):
                problems.append("event %d: %s needs args.name" % (i, e["name"]))
        key = (e.get("pid"), e.get("tid"))
        if ph == "B":
            st = stacks.setdefault(key, [])
            if st and e["ts"] < st[-1][1]:
                problems.append("event %d: B before its parent's start" % i)
            st.append((e["name"], e["ts"], json.dumps(e.get("args"), sort_keys=True)))
        elif ph == "E":
            st = stacks.get(key, [])
            if not st:
                problems.append("event %d: E without B on %s" % (i, key))
            else:
                name, ts, args = st.pop()
                if e.get("name", name) != name or json.dumps(e.get("args"), sort_keys=True) != args:
                    problems.append("event %d: E %r closes B %r" % (i, e.get("name"), name))
                if e["ts"] < ts:
                    problems.append("event %d: E before its B" % i)
    for key, st in stacks.items():
        if st:
            problems.append("%s: %d B without E" % (key, len(st)))
    if problems:
        bad("trace-event schema: %d problems, first: %s" % (len(problems), "; ".join(problems[:5])))
    else:
        ok(
            "trace-event schema: %d events (%s), B/E nested on every thread"
            % (len(ev), ", ".join("%s %d" % (k, v) for k, v in sorted(phases.items())))
        )
    names = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"]
    if names and all(names):
        ok("thread_name metadata: %d threads" % len(names))
    else:
        bad("thread_name metadata missing")
    od = d.get("otherData")
    if isinstance(od, dict) and "ended_early" in od and "delay" in od:
        ok("otherData: ended_early=%r, %s ticks (%s late)" % (od["ended_early"], od.get("ticks"), od.get("late_ticks")))
    else:
        bad("otherData with ended_early and delay")


def state_slices(ev, tid):
    """[(state, start_ms, end_ms)] of a thread, from its outermost (cat state) frames."""
    out, open_ = [], None
    for e in ev:
        if e.get("tid") != tid or e.get("cat") != "state":
            continue
        if e["ph"] == "B":
            open_ = e
        elif e["ph"] == "E" and open_:
            out.append((open_["name"], open_["ts"] / 1e3, e["ts"] / 1e3))
            open_ = None
    return out


def truth(d, delay, logpath):
    """Each phase p_trace logged (its real start and end on CLOCK_MONOTONIC) against the
    trace's slice of that state: a sampled edge is late by at most the gap since the tick
    before, so a slice's length is within the two edges' gaps of the truth; with ticks on
    time (gap = delay) that is two sampling periods."""
    ev = d["traceEvents"]
    od = d["otherData"]
    base = od["start_monotonic_ns"]
    end = od["seconds_recorded"] * 1e3
    per = delay * 1e3
    tids = {e["args"]["name"]: e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    if "trace-A" not in tids or "trace-B" not in tids:
        bad("threads trace-A and trace-B named in the trace (have %s)" % sorted(tids))
        return
    ticks = sorted({e["ts"] / 1e3 for e in ev if e.get("ph") == "C" and e.get("name") == "threads"})
    gap = {round(b, 3): b - a for a, b in zip(ticks, ticks[1:])}
    phases = []
    with open(logpath) as f:
        for line in f:
            w = line.split()
            if len(w) >= 6 and w[0] == "PHASE":
                who, state = w[1], " ".join(w[2:-3])
                t0, t1 = (int(w[-3]) - base) / 1e6, (int(w[-2]) - base) / 1e6
                rd = int(w[-1]) / 1e6  # ms it waited runnable for a CPU within the phase
                if t0 > 2 * per and t1 < end - 2 * per:
                    phases.append((who, state, t0, t1, rd))
    slices = {who: state_slices(ev, tids[who]) for who in ("trace-A", "trace-B")}
    for who in ("trace-A", "trace-B"):
        # between phases the program takes short steps of its own: A's semaphore hand-shake
        # (microseconds), and on a busy machine a thread woken from its sleep waits, runnable
        # (/proc: R, so "running"), for a CPU, tens of ms at load 20; every phase is at least
        # 100 ms, so the order is that of the slices longer than 50 ms (their lengths are
        # checked against the program's below)
        seq = [s for s, a, b in slices[who][1:-1] if b - a > max(2 * per, 50)]
        seq = [x for i, x in enumerate(seq) if i == 0 or x != seq[i - 1]]
        order = ["running", "sleeping", "futex wait"] if who == "trace-A" else ["futex wait", "running"]
        if len(seq) >= 4 and all(order[(order.index(a) + 1) % len(order)] == b for a, b in zip(seq, seq[1:]) if a in order) and all(x in order for x in seq):
            ok("%s: slices in order %s, %d whole slices" % (who, " -> ".join(order), len(seq)))
        else:
            bad("%s: slices out of order: %s" % (who, seq))
    stats = {}
    for who, state, t0, t1, rd in phases:
        if state == "lock wait":
            continue
        best, bo = None, 0
        for st, s0, s1 in slices[who]:
            o = min(s1, t1) - max(s0, t0)
            if st == state and o > bo:
                best, bo = (s0, s1), o
        k = (who, state)
        stats.setdefault(k, [])
        if best is None:
            stats[k].append((t1 - t0, None, False, False))
            continue
        err = (best[1] - best[0]) - (t1 - t0)
        # the two edges' gaps (a slice's edges are ticks), 1 ms for the capture's own time, and
        # the time the thread waited runnable inside a phase it spends off the CPU (R: the
        # trace rightly says running there; only a busy machine has any)
        g = gap.get(round(best[0], 3), per) + gap.get(round(best[1], 3), per) + 1
        slack = rd if state != "running" else 0
        stats[k].append((t1 - t0, err, abs(err) <= 2 * per + slack, abs(err) <= max(g, 2 * per) + slack))
    for (who, state), v in sorted(stats.items()):
        strict = sum(1 for x in v if x[2])
        bound = sum(1 for x in v if x[3])
        desc = "%s '%s': %d phases, true ms / trace error ms: %s; %d within 2 periods (%.0f ms; + time runnable off the CPU), %d within their edges' gaps" % (
            who, state, len(v), " ".join("%.0f/%s" % (t, "none" if e is None else "%+.0f" % e) for t, e, _, _ in v),
            strict, 2 * per, bound)
        # on a busy machine a tick can come late: its edge is then late by that gap, no more
        if len(v) >= 2 and bound == len(v) and strict * 3 >= len(v) * 2:
            ok(desc)
        else:
            bad(desc)
    # the nominal lengths, for the eye (a loaded machine stretches the program itself)
    for who, want in (("trace-A", {"running": 200, "sleeping": 300, "futex wait": 100}), ("trace-B", {"running": 100})):
        for st, ms in want.items():
            v = [s1 - s0 for s, s0, s1 in slices[who][1:-1] if s == st]
            if v:
                print("info %s '%s' nominal %d ms, trace median %.1f ms" % (who, st, ms, statistics.median(v)))
    # the interposer's measured waits (PROFEP_MUTEX_RATE=1: every one) against the program's
    waits = [(e["ts"] / 1e3, e["dur"] / 1e3) for e in ev if e.get("ph") == "X" and e.get("name") == "lock wait" and e["args"].get("tid") == tids["trace-A"]]
    errs = []
    for who, state, t0, t1, rd in phases:
        if state != "lock wait":
            continue
        m = [dur for ts, dur in waits if abs(ts - t0) < 2 * per]
        errs.append(m[0] - (t1 - t0) if m else None)
    if len(errs) >= 2 and all(e is not None and abs(e) <= 2 * per for e in errs):
        ok("trace-A's lock waits from the interposer match the program's: errors %s ms" % " ".join("%+.1f" % e for e in errs))
    else:
        bad("trace-A's lock waits from the interposer vs the program's: %s" % errs)


MIB = 1 << 20


def allocs(d, logpath):
    ev = d["traceEvents"]
    od = d["otherData"]
    if od.get("heap_sampling") is True and od.get("heap_rate", 0) > 0:
        ok("otherData: heap sampling on, heap_rate %d" % od["heap_rate"])
    else:
        bad("otherData: heap sampling %r, heap_rate %r" % (od.get("heap_sampling"), od.get("heap_rate")))
    tids = {e["args"]["name"]: e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    al = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "heap" and e["name"].startswith("alloc ")]
    fr = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "heap" and e["name"].startswith("free ")]
    mib = [e for e in al if e["args"]["bytes"] == MIB]
    if len(mib) >= 20 and all(e["tid"] == tids.get("allocator") for e in mib) and all(e["name"] == "alloc %d B" % MIB for e in mib):
        ok("%d sampled allocations of 1 MiB, all on thread allocator (of %d sampled)" % (len(mib), len(al)))
    else:
        bad("sampled 1 MiB allocations: %d, tids %s, allocator %s" % (len(mib), sorted({e["tid"] for e in mib}), tids.get("allocator")))
        return
    named = [e for e in mib if e["args"].get("stack", [""])[0].startswith("alloc_mib")]
    if len(named) >= 0.9 * len(mib):
        ok("%d of them name alloc_mib at their leaf (%s)" % (len(named), mib[0]["args"].get("stack")))
    else:
        bad("%d of %d name alloc_mib at their leaf: %s" % (len(named), len(mib), mib[0]["args"]))
    base = od["start_monotonic_ns"]
    end = base + od["seconds_recorded"] * 1e9
    with open(logpath) as f:
        truth = [int(w[1]) for w in (l.split() for l in f) if len(w) == 2 and w[0] == "ALLOC"]
    n = len([t for t in truth if base <= t <= end])
    est = sum(e["args"]["est_bytes"] for e in mib)
    if n >= 20 and 0.5 <= est / (n * MIB) <= 2:
        ok("sampled bytes estimate %.1f MiB, the program allocated %d MiB meanwhile (ratio %.2f)" % (est / MIB, n, est / (n * MIB)))
    else:
        bad("sampled bytes estimate %.1f MiB, the program allocated %d MiB meanwhile" % (est / MIB, n))
    if len([e for e in fr if e["args"]["bytes"] == MIB]) >= len(mib) / 2:
        ok("%d frees of sampled 1 MiB blocks" % len(fr))
    else:
        bad("%d frees of sampled blocks for %d sampled 1 MiB allocations" % (len(fr), len(mib)))
    cnt = [e for e in ev if e.get("ph") == "C" and e.get("name") == "sampled heap (bytes)"]
    total = sum(e["args"]["est_bytes"] for e in al)
    if cnt and max(c["args"]["allocated"] for c in cnt) == total:
        ok("the sampled-heap counter ends at the events' sum (%d bytes)" % total)
    else:
        bad("the sampled-heap counter (%s) is not the events' sum %d" % (cnt[-1:] if cnt else None, total))


def procs(d):
    ev = d["traceEvents"]
    od = d["otherData"]
    tids = {e["args"]["name"]: e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    pe = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "process"]
    forker = tids.get("forker")
    got = {}
    for e in pe:
        if e["tid"] != forker:
            bad("a process event off thread forker (%s): %s" % (forker, e))
            return
        key = e["name"]
        if key == "exec" and "vfork_child" in e.get("args", {}):
            key = "exec (vfork child)"
        if key == "exec failed" and e.get("args", {}).get("errno") != 2:
            key = "exec failed, not ENOENT"
        got[key] = got.get(key, 0) + 1
    want = ["fork", "exec (vfork child)", "exec", "exec failed", "spawn"]
    if all(got.get(k, 0) >= 1 for k in want) and "exec failed, not ENOENT" not in got:
        ok("process events on thread forker: %s" % ", ".join("%s %d" % (k, got[k]) for k in want))
    else:
        bad("process events on thread forker: %s (want each of %s)" % (got, want))
    hs = od.get("heap_sampling")
    al = [e for e in ev if e.get("cat") == "heap"]
    if isinstance(hs, str) and "off" in hs and od.get("heap_rate") == 0 and not al:
        ok("heap sampling off: otherData says %r, no allocation in the trace" % hs)
    else:
        bad("heap sampling off: otherData says %r, heap_rate %r, %d allocation events" % (hs, od.get("heap_rate"), len(al)))


def frames(d):
    import re

    ev = d["traceEvents"]
    fr = [e for e in ev if e.get("ph") in ("B", "E") and e.get("cat", "").startswith("stack")]
    badn = sorted({e["name"] for e in fr if "{" in e["name"] or "@@" in e["name"] or re.fullmatch(r"0x[0-9a-f]+", e["name"])})
    if fr and not badn:
        ok("%d stack frame events, every name a function (e.g. %s)" % (len(fr), sorted({e["name"] for e in fr})[:4]))
    else:
        bad("stack frame names: %d events, these are not function names: %s" % (len(fr), badn[:6]))
    withargs = [e for e in fr if "args" in e]
    if withargs:
        bad("%d stack frames carry args (speedscope puts them in the name): %s" % (len(withargs), withargs[0]))
    else:
        ok("no stack frame carries args")
    at = [e for e in fr if re.fullmatch(r"stack,[^,]+:[0-9]+", e["cat"])]
    if at:
        ok("%d frames carry their source line in the category (%s: %s)" % (len(at), at[0]["name"], at[0]["cat"]))
    else:
        bad("no frame carries a source line")
    inl = [e["name"] for e in fr if e["name"].endswith(" [inlined]")]
    ok("%d inlined frames say [inlined]" % len(inl))
    note = d.get("otherData", {}).get("note", "")
    if note and "%%" not in note:
        ok("otherData.note reads as text")
    else:
        bad("otherData.note: %r" % note[:120])


def main():
    mode, path = sys.argv[1], sys.argv[2]
    try:
        d = load(path)
    except Exception as e:  # not JSON at all
        bad("%s: not JSON: %s" % (path, e))
        return 1
    if mode == "schema":
        schema(d)
    elif mode == "truth":
        truth(d, float(sys.argv[3]), sys.argv[4])
    elif mode == "allocs":
        allocs(d, sys.argv[3])
    elif mode == "procs":
        procs(d)
    elif mode == "frames":
        frames(d)
    elif mode == "names":
        for e in d["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                print(e["args"]["name"])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
