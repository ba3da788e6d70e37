#!/usr/bin/env python3
"""How much of a data-parallel step's communication is hidden behind compute, from the Chrome
trace a Runtime writes (actors/trace.h; bench/train_dp --trace FILE).

A collective's event runs from when its op actor sent the request (its inputs were ready) to
when the result came back. Per step: comm = the union of the collective events; exposed = the
part of it during which no compute op ran on this rank; hidden = 1 - exposed / comm. Steps
before --skip are warm-up and left out.

    python3 bench/trace_overlap.py t.json [--skip 5]
"""
import argparse
import json
from collections import defaultdict

COLLECTIVES = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll"}


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(intervals):
    return sum(e - s for s, e in intervals)


def minus(a, b):
    """a \\ b for sorted disjoint interval lists."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append([cur, b[k][0]])
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append([cur, e])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=5, help="warm-up steps left out")
    a = ap.parse_args()
    events = [e for e in json.load(open(a.trace))["traceEvents"] if e.get("ph") == "X"]
    comm, compute, span = defaultdict(list), defaultdict(list), defaultdict(list)
    for e in events:
        step = e["args"]["step"]
        iv = (e["ts"], e["ts"] + e["dur"])
        (comm if e["cat"] in COLLECTIVES else compute)[step].append(iv)
        span[step].append(iv)
    steps = sorted(s for s in span if s >= a.skip)
    tot_comm = tot_exposed = tot_step = 0.0
    for s in steps:
        c = union(comm[s])
        k = union(compute[s])
        tot_comm += length(c)
        tot_exposed += length(minus(c, k))
        tot_step += max(e for _, e in span[s]) - min(b for b, _ in span[s])
    n = max(len(steps), 1)
    hidden = 1 - tot_exposed / tot_comm if tot_comm else 0.0
    print(f"steps {len(steps)}: step {tot_step / n:.1f} us, communication {tot_comm / n:.1f} us, "
          f"exposed {tot_exposed / n:.1f} us, hidden {100 * hidden:.1f}%")


if __name__ == "__main__":
    main()
