#!/usr/bin/env python3
"""Elastic data parallel training, timed around a SIGKILL (docs/elastic.md).

K times: `sfrun -n RANKS --elastic 2:RANKS` on examples/data_parallel (with --tensor-parallel T:
operator_parallel split DP x TP; with --pipeline-stages S: pipeline_parallel split DP x S stages,
--fit-stages) for one epoch of --steps steps, a loss line every step; after a
random step in [5, 150] of a rank that is not killed, plus a random part of a step, one random
rank gets SIGKILL. Measured per kill:

  detection        from the SIGKILL (time.time() just before os.kill) to the survivors' "detected at"
                   (local wall-clock HH:MM:SS.mmm of their membership line): the earliest survivor
                   and the latest one
  kill -> step     from the SIGKILL to the first loss line after the membership line in each
                   survivor's stdout (the rolled-back step redone), the files polled every 1 ms:
                   the earliest survivor and the latest one
  recovery         "recovered in" as the survivors print it (detection to the new world ready to
                   train): the fastest and the slowest survivor

and over the kills the median, min and max of each. A run with no membership change (the kill
landed after training) is reported and left out.

Then J times the same with `--max-restarts 1`, the kill after a step in [5, 40] (--rejoin-after):
sfrun starts a replacement, which joins at rank 0's door (docs/elastic.md, "Rejoin"); once
every rank has printed its join line the job is stopped (SIGTERM to sfrun), the rest of its
training untimed. Measured per rejoin:

  kill -> back to N   from the SIGKILL to the replacement's first loss line (the job on RANKS
                      ranks again): the survivors' change, the replacement's start, its wait at
                      the door for the next step boundary, the agreement and its state
  join pause          "recovered in" of the join's membership line, slowest member: the members'
                      stop from the join notice to training again
  state               the bytes of state the replacement received from rank 0; the time from its
                      link to having them all (it holds rank 0's sends to the other members first);
                      and the time from the first message's arrival to the last one's (the transfer)

and the zmq link's bandwidth for a message of the state's size, measured in the same run with
bench/p2p_bench (ipc, as the jobs' ranks use): warm (the median of many round trips) and cold
(a fresh pair's first message, as the replacement's receive is): the transfer against
bytes / bandwidth.

With --hidden W1,W2,... (data parallel only) the rejoins run once per width of the network's
hidden layers, so that the state grows from megabytes to hundreds of them, and the link is
measured at each state's size: a straight line through the streamed medians against the bytes
splits the transfer into a fixed cost (where it meets zero bytes) and a cost per byte, whose
bandwidth is set against the link's.

  python3 bench/elastic_bench.py [--kills 20] [--rejoins 20] [--ranks 4] [--seed S] [--work DIR] [--keep]
                                 [--tensor-parallel T | --pipeline-stages S | --hidden W1,W2,...]
                                 [--rejoin-after A:B]
"""

import argparse
import re
import datetime
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "elastic"))
import elastic_runs as er  # noqa: E402

POLL = 0.001  # seconds between reads of the survivors' stdout after the kill


def wall_clock_of(hms, near):
    """The epoch seconds of local time `hms` ("17:20:01.123") on the day of epoch time `near`
    (the day before or after when that is closer: a kill just before midnight)."""
    h, m, s = hms.split(":")
    sec, ms = s.split(".")
    day = datetime.datetime.fromtimestamp(near).date()
    best = None
    for shift in (-1, 0, 1):
        d = day + datetime.timedelta(days=shift)
        t = datetime.datetime(d.year, d.month, d.day, int(h), int(m), int(sec)).timestamp() + int(ms) / 1000.0
        if best is None or abs(t - near) < abs(best - near):
            best = t
    return best


class Tail:
    """New whole lines of a growing file."""

    def __init__(self, path):
        self.path, self.f, self.rest = path, None, b""

    def lines(self):
        if self.f is None:
            try:
                self.f = open(self.path, "rb")
            except FileNotFoundError:
                return []
        data = self.f.read()
        if not data:
            return []
        data = self.rest + data
        *whole, self.rest = data.split(b"\n")
        return [w.decode("utf-8", "replace") for w in whole]

    def close(self):
        if self.f:
            self.f.close()


def one_kill(a, rng, i, args):
    """One run, one SIGKILL. Returns a dict of the figures, or a dict with "excluded" saying why."""
    victim = rng.randrange(a.ranks)
    watcher = rng.choice([r for r in range(a.ranks) if r != victim])
    step = rng.randint(5, 150)
    name = f"kill{i}"
    job = er.Job(a.sfrun, a.program, a.work, name, a.ranks, args, elastic=f"2:{a.ranks}", timeout=a.timeout)
    res = {"run": name, "victim": victim, "after_step": step}
    try:
        job.at_step(watcher, 1)
        t1 = time.monotonic()
        job.at_step(watcher, step)
        step_time = (time.monotonic() - t1) / max(1, step - 1)
        res["step_time"] = step_time
        survivors = [r for r in range(a.ranks) if r != victim]
        pid = job.pid(victim)
        tails = {r: Tail(job.rank_file(r)) for r in survivors}
        for t in tails.values():  # everything up to the kill: the lines before it
            t.lines()
        time.sleep(rng.uniform(0, step_time))
        t_kill = time.time()
        try:
            if pid is None:
                raise ProcessLookupError
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pid = None  # the rank had already exited: the kill came after training
        changed, next_step = {}, {}
        while pid is not None and len(next_step) < len(survivors):
            for r in survivors:
                if r in next_step:
                    continue
                for line in tails[r].lines():
                    if r not in changed:
                        if er.CHANGE.search(line):
                            changed[r] = time.time()
                    elif er.LOSS.match(line):
                        next_step[r] = time.time()
                        break
            if job.proc.poll() is not None or time.monotonic() > job.deadline:
                break
            time.sleep(POLL)
        for t in tails.values():
            t.close()
        rc = job.finish()
    except Exception:
        job.kill()
        raise
    changes = {}
    for r in survivors:
        m = er.CHANGE.search(job.text(r))
        if m:
            changes[r] = m
    if not changes:
        res["excluded"] = ("no membership change (the kill came after the last step"
                           + (", the rank had exited" if pid is None else "") + f"; sfrun exited {rc})")
        return res
    if rc != 0:
        raise RuntimeError(f"{name}: sfrun exited {rc}; its stderr:\n{job.err}")
    if set(changes) != set(survivors):
        raise RuntimeError(f"{name}: only ranks {sorted(changes)} of the survivors {survivors} printed a change")
    lost = {m.group(2).strip() for m in changes.values()}
    if lost != {f"lost rank {victim}"}:
        raise RuntimeError(f"{name}: killed rank {victim}, the survivors say they lost {sorted(lost)}")
    detect = [wall_clock_of(m.group(3), t_kill) + 0.0005 - t_kill for m in changes.values()]
    recovered = [float(m.group(10)) for m in changes.values()]
    res.update(rolled_back_to=int(next(iter(changes.values())).group(9)),
               detect_first=min(detect), detect_last=max(detect),
               recovery_fast=min(recovered), recovery_slow=max(recovered))
    if len(next_step) == len(survivors):
        res.update(step_first=min(next_step.values()) - t_kill, step_last=max(next_step.values()) - t_kill)
    else:
        res["no_step"] = "no step after the change (the agreed step was the last one)"
    return res


def one_rejoin(a, rng, name, args):
    """One run, one SIGKILL, one replacement. Returns a dict of the figures, or one with "excluded"."""
    victim = rng.randrange(a.ranks)
    watcher = rng.choice([r for r in range(a.ranks) if r != victim])
    step = rng.randint(*a.rejoin_after)
    job = er.Job(a.sfrun, a.program, a.work, name, a.ranks, args, elastic=f"2:{a.ranks}", timeout=a.timeout,
                 restarts=1)
    res = {"run": name, "victim": victim, "after_step": step}
    try:
        job.at_step(watcher, step)
        tail = Tail(job.rank_file(victim))
        tail.lines()  # the victim's lines so far; the replacement's come after
        pid = job.pid(victim)
        t_kill = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        joined, t_back = False, None  # the killed rank's last lines come first, then the replacement's
        while t_back is None and job.proc.poll() is None and time.monotonic() < job.deadline:
            for line in tail.lines():
                if "this rank joined" in line:
                    joined = True
                elif joined and er.LOSS.match(line):
                    t_back = time.monotonic()
                    break
            time.sleep(POLL)
        tail.close()
        if t_back is not None:
            # Every member printed its join line before the step the replacement just printed; once
            # sfrun has relayed them the figures are in, and the rest of the training is not timed.
            job.wait_for(lambda: all(any("joined" in m.group(2) for m in er.CHANGE.finditer(job.text(r)))
                                     for r in range(a.ranks)), "every rank's join line")
            job.proc.send_signal(signal.SIGTERM)
            job.finish()
        elif job.finish() != 0:
            raise RuntimeError(f"{name}: sfrun exited {job.rc}; its stderr:\n{job.err}")
    except Exception:
        job.kill()
        raise
    joins = [m for r in range(a.ranks) for m in er.CHANGE.finditer(job.text(r)) if "joined" in m.group(2)]
    mine = re.search(r"this rank joined -> \d+\); rolled back to step \d+; (\d+) bytes of state from rank 0 within "
                     r"([\d.]+) s of the link, streamed in ([\d.]+) s", job.text(victim))
    if not joins or not mine or t_back is None:
        res["excluded"] = "no rejoin before the end of training"
        return res
    members = [m for m in joins if "this rank joined" not in m.group(0)]
    res.update(back=t_back - t_kill, pause=max(float(m.group(10)) for m in members),
               bytes=int(mine.group(1)), transfer=float(mine.group(2)), streamed=float(mine.group(3)))
    return res


def p2p_bandwidth(a, nbytes, cold=False):
    """GB/s of one zmq message of `nbytes` between two processes (bench/p2p_bench, ipc): the median
    of its timed round trips, or with `cold` the first round trip of a fresh pair (no warm-up), as a
    replacement's first receive is: its buffers are touched for the first time."""
    prog = os.path.join(os.path.dirname(a.program), "..", "bench", "sfbench_p2p")
    extra = ["--warmup", "0", "--min-iters", "1", "--budget", "0.000001"] if cold else []
    out = subprocess.run([prog, "--mode", "zmq", "--zmq-scheme", "ipc", "--sizes", str(nbytes)] + extra,
                         capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT,p2p,zmq"):
            return float(line.split(",")[5]), line
    raise RuntimeError(f"sfbench_p2p printed no result:\n{out.stdout}\n{out.stderr}")


def ms(x):
    return f"{x * 1000:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--rejoins", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None, help="default: from the time")
    ap.add_argument("--work", default=None, help="default: a fresh temporary directory, removed at the end")
    ap.add_argument("--keep", action="store_true", help="keep the runs' logs (log_output/kill<i> under --work)")
    ap.add_argument("--sfrun", default=os.path.join(ROOT, "build", "tools", "sfrun", "sfrun"))
    ap.add_argument("--program", default=None,
                    help="default: build/examples/data_parallel, operator_parallel with --tensor-parallel, or "
                         "pipeline_parallel with --pipeline-stages")
    ap.add_argument("--tensor-parallel", type=int, default=0,
                    help="time operator_parallel split data parallel x tensor parallel T (global batch 48)")
    ap.add_argument("--pipeline-stages", type=int, default=0,
                    help="time pipeline_parallel split data parallel x S stages, gcd(S, ranks) after a change "
                         "(global batch 48 in 2 micro-batches)")
    ap.add_argument("--steps", type=int, default=200, help="steps of the one epoch")
    ap.add_argument("--hidden", default=None,
                    help="data parallel: widths W1,W2,... of the hidden layers (the seed's is 512), the rejoins "
                         "run at each, and the transfer is fitted against the state's size")
    ap.add_argument("--rejoin-after", default="5:40", help="A:B: a rejoin's kill comes after a step in [A, B]")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one run may take")
    a = ap.parse_args()
    if a.ranks < 3:
        ap.error("--ranks must be at least 3 (--elastic 2:RANKS, one rank killed)")
    if a.kills and a.steps < 160:
        ap.error("--steps must be at least 160 (kills come after a step in [5, 150])")
    try:
        a.rejoin_after = tuple(int(x) for x in a.rejoin_after.split(":"))
        ok = len(a.rejoin_after) == 2 and 1 <= a.rejoin_after[0] <= a.rejoin_after[1]
    except ValueError:
        ok = False
    if not ok:
        ap.error("--rejoin-after must be A:B with 1 <= A <= B")
    if a.rejoins and a.steps < a.rejoin_after[1] + 20:
        ap.error(f"--steps must be at least {a.rejoin_after[1] + 20} (a rejoin's kill comes after a step in "
                 f"[{a.rejoin_after[0]}, {a.rejoin_after[1]}], and the replacement joins steps later)")
    if a.hidden is not None:
        try:
            a.hidden = [int(w) for w in a.hidden.split(",")]
        except ValueError:
            a.hidden = []
        if not a.hidden or min(a.hidden) < 1:
            ap.error("--hidden must be widths W1,W2,... each at least 1")
        if a.tensor_parallel or a.pipeline_stages:
            ap.error("--hidden widens data_parallel's network: not with --tensor-parallel or --pipeline-stages")
    if a.seed is None:
        a.seed = int(time.time())
    if a.tensor_parallel and a.pipeline_stages:
        ap.error("--tensor-parallel and --pipeline-stages time different programs: give one")
    if a.program is None:
        a.program = os.path.join(ROOT, "build", "examples",
                                 "operator_parallel" if a.tensor_parallel else
                                 "pipeline_parallel" if a.pipeline_stages else "data_parallel")
    for p in (a.sfrun, a.program):
        if not os.access(p, os.X_OK):
            raise SystemExit(f"elastic_bench: {p} is not built (bash scripts/build.sh)")
    a.sfrun, a.program = os.path.abspath(a.sfrun), os.path.abspath(a.program)
    made_work = a.work is None
    if made_work:
        a.work = tempfile.mkdtemp(prefix="elastic_bench_")
    else:
        a.work = os.path.abspath(a.work)
        os.makedirs(a.work, exist_ok=True)
    rng = random.Random(a.seed)
    args = ["--api", "model", "--steps", str(a.steps), "--epochs", "1", "--batch", "32", "--print-every", "1"]
    if a.tensor_parallel:  # operator_parallel's --batch is the global batch: 48 splits over 4, 3 and 2 ranks
        args = ["--api", "model", "--steps", str(a.steps), "--epochs", "1", "--batch", "48", "--print-every", "1",
                "--tensor-parallel", str(a.tensor_parallel)]
    if a.pipeline_stages:  # so is pipeline_parallel's: 2 micro-batches of 24 rows over 2, 3 or 4 ranks a stage
        args = ["--steps", str(a.steps), "--epochs", "1", "--batch", "48", "--print-every", "1", "--eval-rows", "100",
                "--stages", str(a.pipeline_stages), "--fit-stages"]

    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    print("elastic_bench: " + shlex.join([sys.argv[0]] + sys.argv[1:]))
    print(f"seed {a.seed}; {a.kills} kills")
    run = ["sfrun", "-n", str(a.ranks), "--elastic", f"2:{a.ranks}", "--", os.path.basename(a.program)]
    print(f"each run: {shlex.join(run + args)}")
    print(f"machine: {os.cpu_count()} cpus (nproc {sh(['nproc'])}), kernel {platform.release()}, "
          f"{platform.machine()}; {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(flush=True)

    done, excluded = [], []
    try:
        for i in range(a.kills):
            r = one_kill(a, rng, i, args)
            if "excluded" in r:
                excluded.append(r)
                print(f"{r['run']}: rank {r['victim']} killed after step {r['after_step']}: EXCLUDED, {r['excluded']}",
                      flush=True)
            else:
                done.append(r)
                step = (f"next step {ms(r['step_first'])} / {ms(r['step_last'])} ms" if "step_first" in r
                        else r["no_step"])
                print(f"{r['run']}: rank {r['victim']} killed after step {r['after_step']} (step {ms(r['step_time'])} ms), "
                      f"rolled back to {r['rolled_back_to']}: detection {ms(r['detect_first'])} / "
                      f"{ms(r['detect_last'])} ms, {step}, recovered in {ms(r['recovery_fast'])} / "
                      f"{ms(r['recovery_slow'])} ms (earliest / latest survivor)", flush=True)
            if not a.keep:
                shutil.rmtree(os.path.join(a.work, "log_output", r["run"]), ignore_errors=True)
        if a.kills:
            kill_table(a, done, excluded)
        rejoin_figures(a, rng, args)
    finally:
        if made_work and not a.keep:
            shutil.rmtree(a.work, ignore_errors=True)
    return 0


def kill_table(a, done, excluded):

    print()
    rows = [("step time before the kill", "step_time"),
            ("detection, earliest survivor", "detect_first"),
            ("detection, latest survivor", "detect_last"),
            ("kill -> next step, earliest survivor", "step_first"),
            ("kill -> next step, latest survivor", "step_last"),
            ("recovered in, fastest survivor", "recovery_fast"),
            ("recovered in, slowest survivor", "recovery_slow")]
    print(f"{len(done)} of {a.kills} kills with a membership change"
          + (f"; {len(excluded)} excluded (no membership change)" if excluded else "")
          + f"; {a.ranks} -> {a.ranks - 1} ranks")
    print()
    print("| ms | median | min | max | n |")
    print("|---|---:|---:|---:|---:|")
    for label, key in rows:
        v = [r[key] for r in done if key in r]
        if v:
            print(f"| {label} | {ms(statistics.median(v))} | {ms(min(v))} | {ms(max(v))} | {len(v)} |")
        else:
            print(f"| {label} | - | - | - | 0 |")
    print()
    print("detection: the zmq fabric's notice that the connection to the killed rank is lost, plus the survivors' "
          "5 ms poll of it; its stamp is wall-clock time printed to the ms, taken at the middle of its ms (+-0.5 ms).")
    print("kill -> next step: detection, the agreement on the members and the step, the rebuild, then the "
          "rolled-back step redone, whose AllReduce waits for the slowest survivor's recovery; seen through sfrun's "
          "relay of the rank's stdout, polled every 1 ms.")
    print("recovered in: from the rank's detection to the new world ready to train: the agreement, the new "
          "world's connections, and rebuilding the model and the dataset shard in the new world.")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min; the 4 ranks "
          f"and this script on {os.cpu_count()} cpus, so other load moves the figures)")


def rejoin_figures(a, rng, args):
    if a.rejoins <= 0:
        return
    sizes = []
    for width in a.hidden or [None]:
        run_args = args + ["--hidden", str(width)] if width else args
        print()
        print(f"rejoins: {a.rejoins} runs of the same job with --max-restarts 1"
              + (f" and --hidden {width}" if width else "")
              + f", a rank killed after a step in [{a.rejoin_after[0]}, {a.rejoin_after[1]}]", flush=True)
        done = []
        for i in range(a.rejoins):
            name = f"rejoin{i}" if width is None else f"rejoin_h{width}_{i}"
            r = one_rejoin(a, rng, name, run_args)
            if "excluded" in r:
                print(f"{r['run']}: rank {r['victim']} killed after step {r['after_step']}: EXCLUDED, {r['excluded']}",
                      flush=True)
            else:
                done.append(r)
                print(f"{r['run']}: rank {r['victim']} killed after step {r['after_step']}: back to {a.ranks} ranks "
                      f"{ms(r['back'])} ms after the kill; join pause {ms(r['pause'])} ms; {r['bytes']} bytes of "
                      f"state within {ms(r['transfer'])} ms of the link, streamed in {ms(r['streamed'])} ms",
                      flush=True)
            if not a.keep:
                shutil.rmtree(os.path.join(a.work, "log_output", r["run"]), ignore_errors=True)
        if not done:
            print("no rejoin completed")
            continue
        sizes.append(dict(rejoin_table(a, done), width=width))
    if len(sizes) > 1:
        size_fit(sizes)


def rejoin_table(a, done):
    """Prints the rejoins' table and the link at the state's size; returns the figures size_fit uses."""
    nbytes = done[0]["bytes"]
    gbs, line = p2p_bandwidth(a, nbytes)
    ideal = nbytes / (gbs * 1e9)
    print()
    print(f"zmq link, one message of {nbytes} bytes over ipc (bench/p2p_bench, same run): {gbs:.2f} GB/s "
          f"({line}); bytes / bandwidth = {ms(ideal)} ms")
    colds = sorted(p2p_bandwidth(a, nbytes, cold=True)[0] for _ in range(5))
    cold_ideal = nbytes / (statistics.median(colds) * 1e9)
    print(f"the same message as a fresh pair's first (5 pairs, median): {statistics.median(colds):.2f} GB/s "
          f"({', '.join(f'{g:.2f}' for g in colds)}); bytes / bandwidth = {ms(cold_ideal)} ms")
    print()
    print("| ms | median | min | max | n |")
    print("|---|---:|---:|---:|---:|")
    for label, key in [("kill -> back to N ranks", "back"), ("join pause, slowest member", "pause"),
                       ("state received, within (of the link)", "transfer"),
                       ("state streamed (first message to last)", "streamed")]:
        v = [r[key] for r in done]
        print(f"| {label} | {ms(statistics.median(v))} | {ms(min(v))} | {ms(max(v))} | {len(v)} |")
    streamed = statistics.median(r["streamed"] for r in done)
    pause = statistics.median(r["pause"] for r in done)
    within = sum(1 for r in done if r["streamed"] <= 1.2 * ideal)
    within_cold = sum(1 for r in done if r["streamed"] <= 1.2 * cold_ideal)
    print()
    print(f"state streamed (median) {ms(streamed)} ms against 1.2 x bytes / bandwidth = {ms(1.2 * ideal)} ms warm "
          f"({within} of {len(done)} runs within it), {ms(1.2 * cold_ideal)} ms cold ({within_cold} of {len(done)}); "
          f"the rest of the join pause, {ms(max(0.0, pause - streamed))} ms (median), is the agreement, the new "
          f"world's links, rank 0 putting the state together and sending it to the other members, and the rebuild "
          f"of the model and the dataset shard")
    return dict(bytes=nbytes, streamed=streamed, streamed_max=max(r["streamed"] for r in done), n=len(done),
                warm=ideal, cold=cold_ideal)


def size_fit(sizes):
    """The transfer against the state's size: a least-squares line through the streamed medians,
    its slope's bandwidth set against the link's at the largest size."""
    xs = [s["bytes"] for s in sizes]
    ys = [s["streamed"] for s in sizes]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    fixed = my - slope * mx
    big = max(sizes, key=lambda s: s["bytes"])
    print()
    print("state size against the transfer (medians of each width's rejoins; the link measured at each size):")
    print()
    print("| hidden | state bytes | streamed ms (median) | max | bytes / bandwidth, warm ms | cold ms "
          "| streamed / cold | n |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        print(f"| {s['width']} | {s['bytes']} | {ms(s['streamed'])} | {ms(s['streamed_max'])} | {ms(s['warm'])} "
              f"| {ms(s['cold'])} | {s['streamed'] / s['cold']:.2f} | {s['n']} |")
    print()
    if slope <= 0:
        print(f"the streamed medians do not grow with the bytes (slope {slope:.3g} s/B): the sizes are too close "
              f"to tell a cost per byte from the noise")
        return
    link_warm = big["bytes"] / big["warm"] / 1e9
    link_cold = big["bytes"] / big["cold"] / 1e9
    print(f"straight line: streamed = {ms(fixed)} ms + bytes / {1 / slope / 1e9:.2f} GB/s; the link at "
          f"{big['bytes']} bytes: {link_warm:.2f} GB/s warm, {link_cold:.2f} GB/s cold; the cost per byte is "
          f"{slope * link_warm * 1e9:.2f}x the warm link's and {slope * link_cold * 1e9:.2f}x the cold link's "
          f"(goal: at most 1.2x), the fixed cost {ms(fixed)} ms")


if __name__ == "__main__":
    sys.exit(main())
