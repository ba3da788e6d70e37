#!/usr/bin/env python3
"""Kill tests of elastic training through sfrun (docs/elastic.md, "Tests").

Each scenario starts `sfrun -n 4 --elastic MIN:4` on examples/data_parallel (two epochs, a loss line
every step, a checkpoint every 5 steps so that saves are in flight) — or, with --tensor-parallel 2,
on examples/operator_parallel split data parallel 2 x tensor parallel 2; with --pipeline-stages 2, on
examples/pipeline_parallel split data parallel 2 x 2 pipeline stages —, disturbs it once training
runs, and checks: sfrun finishes with the expected status, every survivor's loss lines after each
membership change equal the restart oracle's bitwise (the same program restarted on the survivors
from the checkpoint of the step the change rolled back to; the reference run saves every step),
and no survivor loses more than one step.

  kills N   N SIGKILLs of a random rank at a random moment of training (seeded: --seed)
  phases    a random rank dies in each phase of a step for certain: at a step's start (forward),
            inside a collective (backward's AllReduce), in the optimizer's update, in a checkpoint
            save; it SIGKILLs itself at the Nth pass of the phase's fault point (SF_FAULT_AT)
  rank0     the coordinator-free claim: rank 0 killed
  two       two ranks killed at once
  recovery  a rank killed, then another while the survivors recover
  stop      a rank SIGSTOPped: lost after the heartbeat bound; woken, it is refused
  below     two of 4 killed with MIN 3: the survivors save the agreed step and stop
  rejoin N  N runs with --max-restarts 1: a rank killed, its replacement joins, the job ends on 4
            ranks; the oracle chains (3 ranks from the rollback, then 4 from the join)
  rejoin-two  two ranks killed at once with --max-restarts 2: both replacements join, one change each
  rejoin-dead-door  --max-restarts 2: a rank killed, then rank 0 as soon as the replacement's process
            exists, so that it asks at a dead door; sfrun moves it to the next world's door without
            spending a restart, and both replacements join
  no-replica  (--tensor-parallel 2 or --pipeline-stages 2) both ranks holding one tensor-parallel
            block, or one pipeline stage, killed at once: the survivors stop, naming what no member holds
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import elastic_runs as er  # noqa: E402
from small_mnist import write_small_mnist  # noqa: E402

RANKS = 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario", choices=["kills", "rank0", "two", "recovery", "stop", "below", "rejoin",
                                             "rejoin-two", "rejoin-dead-door", "no-replica", "phases"])
    ap.add_argument("count", nargs="?", type=int, default=20)
    ap.add_argument("--sfrun", required=True)
    ap.add_argument("--program", required=True,
                    help="examples/data_parallel, examples/operator_parallel with --tensor-parallel, or "
                         "examples/pipeline_parallel with --pipeline-stages")
    ap.add_argument("--tensor-parallel", type=int, default=0,
                    help="the program is operator_parallel, split data parallel x tensor parallel T (Model.train)")
    ap.add_argument("--pipeline-stages", type=int, default=0,
                    help="the program is pipeline_parallel, split data parallel x S pipeline stages (--fit-stages: "
                         "gcd(S, ranks) stages on the survivors)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--api", default="model", choices=["model", "functional"],
                    help="data_parallel's Model.train or the seed's own loop (both through train_elastic)")
    ap.add_argument("--sfviz", help="tools/sfviz: rank0 also checks the timeline's marker it draws")
    ap.add_argument("--steps", type=int, default=30, help="steps per epoch (two epochs)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    rng = random.Random(a.seed)
    print(f"kill_matrix {a.scenario} (--api {a.api}): seed {a.seed}", flush=True)
    # The rows 4 ranks read (30 steps of 16 each) and a small test set: every job starts in a
    # fraction of the time the whole of Fashion-MNIST takes to read.
    data = write_small_mnist(os.path.join(a.work, "fashion"), RANKS * 16 * a.steps, 100)
    args = ["--steps", str(a.steps), "--print-every", "1", "--epochs", "2", "--batch", "16", "--data-dir", data,
            "--api", a.api]
    if a.tensor_parallel:
        # operator_parallel's --batch is the global batch, which every rank reads whole: 48 rows
        # split over 4, 3 and 2 ranks alike.
        args = ["--steps", str(a.steps), "--print-every", "1", "--epochs", "2", "--batch", "48", "--data-dir", data,
                "--api", "model", "--tensor-parallel", str(a.tensor_parallel)]
    if a.pipeline_stages:
        # So is pipeline_parallel's: 2 micro-batches of 24 rows, split over each stage's 2, 3 or 1
        # data-parallel ranks (4 ranks: 2 stages x 2; 3: 1 x 3; 2: 2 x 1).
        args = ["--steps", str(a.steps), "--print-every", "1", "--epochs", "2", "--batch", "48", "--data-dir", data,
                "--eval-rows", "100", "--stages", str(a.pipeline_stages), "--fit-stages"]
    # The ranks that hold the same part of the state: a tensor-parallel block (rank r holds block
    # r % T of the (dp, tp) device matrix, row-major) or a pipeline stage (ranks s x dp .. s x dp +
    # dp - 1 run stage s); data parallel: every rank holds all of it.
    if a.tensor_parallel:
        part_of = lambda r: r % a.tensor_parallel  # noqa: E731
    elif a.pipeline_stages:
        part_of = lambda r: r // (RANKS // a.pipeline_stages)  # noqa: E731
    else:
        part_of = lambda r: 0  # noqa: E731
    total = 2 * a.steps

    # The reference: 4 ranks, a checkpoint after every step, for the oracles.
    ref_ckpt = os.path.join(a.work, "reference_ckpt")
    ref = er.Job(a.sfrun, a.program, a.work, "reference", RANKS,
                 args + ["--checkpoint-dir", ref_ckpt, "--save-every", "1"])
    ref.wait_for(lambda: ref.losses_seen(0) >= 1, "the reference's first step")
    first = time.monotonic()
    # The rejoin scenarios kill in the first quarter, so no oracle reads the reference's later
    # checkpoints: it stops once the one after the quarter is committed.
    needed = total // 4 + 1 if a.scenario.startswith("rejoin") else None
    if needed:
        ref.wait_for(lambda: er.committed_step(ref_ckpt) >= needed, f"the reference's checkpoint of step {needed}")
        step_time = (time.monotonic() - first) / needed
        ref.kill()
    else:
        if ref.finish() != 0:
            raise SystemExit(f"the reference run failed:\n{ref.err}")
        step_time = (time.monotonic() - first) / total  # roughly; saves included

    def two_ranks():
        """Two random ranks whose loss leaves a copy of every part of the state: under
        --tensor-parallel or --pipeline-stages, two that hold different parts (no-replica kills a
        pair that holds the same)."""
        while True:
            pair = rng.sample(range(RANKS), 2)
            if not (a.tensor_parallel or a.pipeline_stages) or part_of(pair[0]) != part_of(pair[1]):
                return pair

    def moment(job, watcher, last=None):
        """A random moment of training: after a random step that `watcher` (a survivor) printed,
        plus a random part of a step."""
        job.at_step(watcher, rng.randrange(1, last or total - 5))
        time.sleep(rng.uniform(0, step_time))

    def elastic(name, disturb, elastic_range="2:4", env=None, extra=(), restarts=0):
        job = er.Job(a.sfrun, a.program, a.work, name, RANKS,
                     args + ["--checkpoint-dir", os.path.join(a.work, name + "_ckpt"), "--save-every", "5"]
                     + list(extra), elastic=elastic_range, env=env, restarts=restarts)
        disturb(job)
        job.finish()
        return job

    def kill_two(pair, last=None):
        """A disturbance: both ranks of `pair` SIGKILLed together, at a moment of another rank."""
        def disturb(j):
            moment(j, next(r for r in range(RANKS) if r not in pair), last)
            for p in [j.pid(r) for r in pair]:
                os.kill(p, signal.SIGKILL)
        return disturb

    def check(job, expect_lost):
        if job.rc != 0:
            raise SystemExit(f"{job.name}: sfrun exited {job.rc}:\n{job.err}")
        changes, most_lost, members, compared = er.check_against_oracles(
            a.sfrun, a.program, a.work, job, ref_ckpt, args, range(RANKS), total,
            oracle_prints_rank0_only=bool(a.pipeline_stages))
        lost = sorted(set(range(RANKS)) - set(members))
        # Every disturbance lands inside training (moment()): the survivors must have changed.
        assert changes, f"{job.name}: rank(s) {sorted(expect_lost)} were disturbed mid-training and no change followed"
        assert lost == sorted(expect_lost), f"{job.name}: members {members}, expected {sorted(expect_lost)} lost"
        assert most_lost <= 1, f"{job.name}: a survivor lost {most_lost} steps"
        print(f"{job.name}: ok: {len(changes)} change(s), lost {lost}, at most {most_lost} step lost, {compared} loss "
              f"lines equal to the oracle's; "
              + "; ".join(f"step {c.group(9)}, recovered in {c.group(10)} s" for c in changes), flush=True)
        return changes

    if a.scenario == "kills":
        for i in range(a.count):
            victim = rng.randrange(RANKS)
            job = elastic(f"kill{i}", lambda j: (moment(j, (victim + 1) % RANKS), j.signal(victim, signal.SIGKILL)))
            check(job, [victim])
        print(f"kills: {a.count} runs, each with a membership change, all equal to the restart oracle")
    elif a.scenario == "phases":
        # core/fault_point.h: SF_FAULT_AT=NAME:N:RANK makes launch rank RANK SIGKILL itself the Nth
        # time it passes the fault point NAME. The ranges lie inside training on every layout:
        # "collective" counts every message a collective sends (dozens a step), "optimizer" the
        # update ops of the in-graph SGD or the Optimizer::step calls (at least one a step),
        # "save" the saves (one every 5 steps).
        phases = {"step": (3, total - 5), "collective": (40, 200), "optimizer": (5, 50), "save": (1, 8)}
        for phase, (lo, hi) in phases.items():
            victim, n = rng.randrange(RANKS), rng.randint(lo, hi)
            job = elastic(f"phase_{phase}", lambda j: None, env={"SF_FAULT_AT": f"{phase}:{n}:{victim}"})
            assert f"rank {victim} exited with signal 9" in job.err, \
                f"phase {phase}: rank {victim} did not die at pass {n} of the fault point; sfrun said:\n{job.err}"
            check(job, [victim])
        print(f"phases: a rank died in each of {', '.join(phases)}; every run equal to the restart oracle")
    elif a.scenario == "rank0":
        timelines = os.path.join(a.work, "timelines")
        changes = check(elastic("rank0", lambda j: (moment(j, 1), j.signal(0, signal.SIGKILL)),
                              extra=["--elastic-timeline", timelines]), [0])
        if a.sfviz and changes:
            # Each survivor's steps and the change, drawn: the marker is in the picture.
            svg = os.path.join(a.work, "rank1.svg")
            shown = subprocess.run([a.sfviz, "show", os.path.join(timelines, "rank.1.timeline.json"), "--svg", svg],
                                   capture_output=True, text=True, timeout=60)
            assert shown.returncode == 0, f"sfviz show failed:\n{shown.stderr}"
            assert "marker at" in shown.stdout and "generation 1: lost rank 0" in shown.stdout, shown.stdout
            with open(svg, encoding="utf-8") as f:
                assert "generation 1: lost rank 0" in f.read(), "the picture has no marker"
            print("rank0: the survivors' timeline shows the change as a marker (sfviz show)")
    elif a.scenario == "two":
        pair = two_ranks()
        check(elastic("two", kill_two(pair)), pair)
    elif a.scenario == "recovery":
        first_victim, second = two_ranks()

        def chain(j):
            moment(j, next(r for r in range(RANKS) if r not in (first_victim, second)), total // 2)
            j.signal(first_victim, signal.SIGKILL)
            time.sleep(rng.uniform(0.005, 0.3))  # detection, agreement, rebuild: within a second
            j.signal(second, signal.SIGKILL)
        check(elastic("recovery", chain), [first_victim, second])
    elif a.scenario == "stop":
        victim = rng.randrange(RANKS)
        survivor = (victim + 1) % RANKS

        def freeze(j):
            moment(j, survivor, total // 4)
            j.signal(victim, signal.SIGSTOP)
            j.wait_for(lambda: "shardflow elastic: generation 1" in j.text(survivor), "the survivors' change")
            j.signal(victim, signal.SIGCONT)
            j.wait_for(lambda: "was frozen for" in j.text(victim, "stdout") + j.text(victim, "stderr"),
                       "the woken rank's refusal")
        job = elastic("stop", freeze, env={"SF_ZMQ_HEARTBEAT_TIMEOUT_MS": "2000"})
        check(job, [victim])
    elif a.scenario == "rejoin":
        # sfrun --max-restarts 1 starts a replacement for the killed rank; it joins at rank 0's
        # door, and the job ends on 4 ranks again. The oracle chains: the survivors' restart from
        # the rolled-back step on 3 ranks, then a restart from the join's step on 4.
        for i in range(a.count):
            victim = rng.randrange(RANKS)
            job = elastic(f"rejoin{i}", lambda j: (moment(j, (victim + 1) % RANKS, total // 4),
                                                   j.signal(victim, signal.SIGKILL)), restarts=1)
            changes = check(job, [])
            joins = [c for c in changes if "joined" in c.group(2)]
            assert joins, f"rejoin{i}: no replacement joined: {[c.group(0) for c in changes]}"
            assert f"rank {victim} joined" in joins[0].group(2), joins[0].group(0)
            assert "this rank joined ->" in job.text(victim), f"rejoin{i}: the replacement printed no join line"
            assert "starting a replacement for rank" in job.err, f"rejoin{i}: sfrun said:\n{job.err}"
        print(f"rejoin: {a.count} runs, each back to {RANKS} ranks, all equal to the chained restart oracle")
    elif a.scenario == "rejoin-two":
        # Two ranks killed at once, --max-restarts 2: both replacements ask at the same door; one
        # change admits one, and the door keeps the other for the next.
        pair = two_ranks()
        job = elastic("rejoin_two", kill_two(pair, total // 4), restarts=2)
        changes = check(job, [])
        joined = sorted(int(c.group(2).split()[1]) for c in changes if "joined" in c.group(2))
        assert joined == sorted(pair), f"rejoin-two: killed {sorted(pair)}, joined {joined}"
        print(f"rejoin-two: ranks {sorted(pair)} killed at once, both replaced in {len(changes)} changes, equal to "
              f"the chained restart oracle")
    elif a.scenario == "rejoin-dead-door":
        # Rank 0 keeps its door from world to world only while it lives. Killed right after the
        # replacement's process appears (it takes 100 ms and more to ask), it leaves that
        # replacement at a dead door; sfrun moves it to the door of the next world's rank 0 by the
        # same restart, and rank 0's own replacement (restart 2 of 2) joins there too.
        # Rank 0 often dies before the survivors' first step of generation 1: the next change then
        # goes back to the state that world started from, which its members had received.
        victim = rng.randrange(1, RANKS)
        survivors = [r for r in range(1, RANKS) if r != victim]

        def dead_door(j):
            moment(j, survivors[0], total // 4)
            old = j.pid(victim)
            os.kill(old, signal.SIGKILL)
            j.wait_for(lambda: j.pid(victim) not in (None, old), f"the replacement of rank {victim}", poll=0.001)
            j.signal(0, signal.SIGKILL)
        job = elastic("rejoin_dead_door", dead_door, restarts=2)
        changes = check(job, [])
        # A change may both lose and admit ranks (`lost rank 0, rank 2 joined`).
        joined = sorted(int(r) for c in changes for m in re.finditer(r"ranks? ([\d, ]+) joined", c.group(2))
                        for r in m.group(1).split(","))
        assert joined == sorted([0, victim]), f"rejoin-dead-door: killed {victim} and 0, joined {joined}"
        assert "(2 restarts of 2 used)" in job.err, f"rejoin-dead-door: sfrun said:\n{job.err}"
        assert "before it joined" not in job.err, f"rejoin-dead-door: sfrun said:\n{job.err}"
        moved = re.search(rf"the replacement for rank {victim} waited at the door of generation \d+, whose rank 0 is "
                          r"gone; starting it again at generation \d+", job.err)
        if moved:
            how = "moved from the dead door to the next world's"
        else:
            # Rank 0 admitted the replacement before it died: nothing waited at a dead door.
            assert "starting it again" not in job.err, f"rejoin-dead-door: sfrun said:\n{job.err}"
            how = "joined before rank 0 died: the move was not exercised"
        print(f"rejoin-dead-door: rank {victim} killed, then rank 0; its replacement {how}; both replaced in "
              f"{len(changes)} changes, equal to the chained restart oracle")
    elif a.scenario == "no-replica":
        assert a.tensor_parallel == 2 or a.pipeline_stages == 2, \
            "no-replica needs --tensor-parallel 2 or --pipeline-stages 2"
        # The two ranks that hold one part: both copies of its blocks, or its stage's only ranks.
        j = rng.randrange(2)
        pair = [r for r in range(RANKS) if part_of(r) == j]
        job = elastic("no_replica", kill_two(pair))
        assert job.rc != 0, f"no-replica: sfrun exited 0 with ranks {pair} and both copies of their blocks lost"
        survivors = sorted(set(range(RANKS)) - set(pair))
        for r in survivors:
            err = job.text(r, "stderr")
            assert "no member holds" in err and "no data-parallel replica" in err, \
                f"no-replica: rank {r} said:\n{err}"
        print(f"no-replica: ok: ranks {pair} killed, the survivors {survivors} stopped naming the lost block: "
              + job.text(survivors[0], "stderr").strip().splitlines()[-1])
    elif a.scenario == "below":
        pair = two_ranks()
        # In the first epoch: a later step, mapped by rows to 2 ranks, can lie past the last epoch,
        # and then neither the saved step nor the restart has anything left to train.
        job = elastic("below", kill_two(pair, total // 2), elastic_range="3:4")
        assert job.rc != 0, "below: sfrun exited 0 with 2 of 4 ranks and MIN 3"
        survivors = sorted(set(range(RANKS)) - set(pair))
        for r in survivors:
            err = job.text(r, "stderr")
            assert "below the minimum of 3: stopped after saving step" in err, f"below: rank {r} said:\n{err}"
        saved = os.path.join(a.work, "elastic_checkpoint")
        assert os.path.isfile(os.path.join(saved, "latest")), f"below: no committed checkpoint in {saved}"
        # The state saved resumes: on the 2 survivors it continues as the restart from the same step.
        step = int(er.CHANGE_BELOW.search(job.text(survivors[0])).group(1))
        resumed = er.run_oracle(a.sfrun, a.program, a.work, "below_resumed", 2, args, saved)
        oracle = er.run_oracle(a.sfrun, a.program, a.work, "below_oracle", 2, args,
                               os.path.join(ref_ckpt, f"step_{step}"))
        assert (resumed is None) == (oracle is None), \
            f"below: step {step} resumed from the stop checkpoint and the restart disagree on whether any is left"
        for r in range(2 if resumed else 0):
            assert er.segments(resumed.text(r))[0][1] == er.segments(oracle.text(r))[0][1], \
                f"below: rank {r} resumed from the stop checkpoint differs from the restart from step {step}"
        print(f"below: ok: ranks {pair} killed, survivors {survivors} saved step {step} and stopped (sfrun {job.rc}); "
              f"resumed from it they equal the restart oracle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
