"""Elastic jobs run through the real CLIs, for the kill tests (kill_matrix.py) and the benchmark
(bench/elastic_bench.py): start `sfrun --elastic` on examples/data_parallel, kill or stop ranks at
chosen moments of training, read back every rank's loss and membership lines, and build the
restart oracle — the same program restarted, on the survivors, from the checkpoint of the step
each membership change rolled back to (docs/elastic.md, "The oracle")."""

import os
import re
import signal
import subprocess
import time

LOSS = re.compile(r"^epoch: (\d+) step: (\d+), loss is (\S+)$")
# A change: ranks lost, a replacement joined, or both (group 2 says which); a joiner prints the
# same line with "this rank joined -> R" and the bytes of state it received.
CHANGE = re.compile(r"shardflow elastic: generation (\d+): ((?:lost ranks? [\d, ]+)?(?:, )?(?:ranks? [\d, ]+ joined)?); "
                    r"detected at (\S+); members ([\d,]+) \((\d+) -> (\d+) ranks; this rank (\w+) -> (\d+)\); "
                    r"rolled back to step (\d+); (?:.*; )?recovered in ([\d.]+) s")

# The line of survivors that are fewer than MIN: the step they saved.
CHANGE_BELOW = re.compile(r"shardflow elastic: generation \d+: .*below the minimum of \d+\): saving step (\d+)")


class Job:
    """One sfrun job of `program` with `args` (its own options, as given), running in `work`/`name`."""

    def __init__(self, sfrun, program, work, name, ranks, args, elastic=None, env=None, timeout=120, restarts=0):
        self.work, self.name, self.ranks = work, name, ranks
        self.dir = os.path.join(work, "log_output", name)
        cmd = [sfrun, "-n", str(ranks), "--job-id", name, "--timeout", "30"]
        if elastic:
            cmd += ["--elastic", elastic]
        if restarts:
            cmd += ["--max-restarts", str(restarts)]
        cmd += ["--", program] + list(args)
        self.env = dict(os.environ, **(env or {}))
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.proc = subprocess.Popen(cmd, cwd=work, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def rank_file(self, rank, stream="stdout"):
        return os.path.join(self.dir, f"rank.{rank}", stream)

    def text(self, rank, stream="stdout"):
        try:
            with open(self.rank_file(rank, stream), encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def pid(self, rank):
        """The pid of launch rank `rank` (its environment names the job and the rank)."""
        want = {f"SF_JOB_ID={self.name}".encode(), f"SF_RANK={rank}".encode()}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = set(f.read().split(b"\0"))
            except OSError:
                continue
            if want <= env and int(entry) != self.proc.pid:
                return int(entry)
        return None

    def wait_for(self, predicate, what, poll=0.005):
        """Polls until predicate() is true; raises naming `what` past the deadline."""
        while not predicate():
            if self.proc.poll() is not None or time.monotonic() > self.deadline:
                if predicate():  # it happened just before the job ended
                    return
                raise RuntimeError(f"{self.name}: {what} never happened")
            time.sleep(poll)

    def losses_seen(self, rank):
        return sum(1 for line in self.text(rank).splitlines() if LOSS.match(line))

    def at_step(self, rank, step, poll=0.002):
        """Waits until `rank` has printed `step` loss lines (a moment inside training)."""
        self.wait_for(lambda: self.losses_seen(rank) >= step, f"rank {rank}'s step {step}", poll)

    def signal(self, rank, sig):
        pid = self.pid(rank)
        if pid is None:
            raise RuntimeError(f"{self.name}: rank {rank} has no process")
        os.kill(pid, sig)
        return time.monotonic()

    def kill(self):
        """Ends the whole job at once (sfrun and its ranks), as a failed test leaves it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate()

    def finish(self):
        left = max(1.0, self.deadline - time.monotonic())
        try:
            out, err = self.proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            out, err = self.proc.communicate()
            raise RuntimeError(f"{self.name}: sfrun did not finish in time; its stderr:\n{err}")
        self.rc, self.out, self.err = self.proc.returncode, out, err
        return self.rc


def committed_step(ckpt_dir):
    """The newest step committed to a checkpoint directory (its `latest`), 0 when none is."""
    try:
        with open(os.path.join(ckpt_dir, "latest"), encoding="utf-8") as f:
            name = f.read().strip()
    except FileNotFoundError:
        return 0
    return int(name[len("step_"):]) if name.startswith("step_") and name[len("step_"):].isdigit() else 0


def segments(text):
    """A rank's stdout cut at its membership lines, by generation: {generation: (change or None,
    {(epoch, step): loss})}. A replacement's lines follow those of the rank it replaces, from the
    generation it joined."""
    out = {0: (None, {})}
    current = 0
    for line in text.splitlines():
        m = CHANGE.search(line)
        if m:
            current = int(m.group(1))
            out[current] = (m, {})
            continue
        m = LOSS.match(line)
        if m:
            out[current][1][(int(m.group(1)), int(m.group(2)))] = m.group(3)
    return out


def run_oracle(sfrun, program, work, name, ranks, args, resume, save=False, timeout=120, until=None):
    """The restart oracle: the same program on `ranks` ranks resumed from `resume`; with `save`,
    saving every step (the oracle of a later change resumes from its checkpoints). With `until`
    (the step a later change goes back to, from resume step `until[1]`), only what that change
    reads is waited for: every rank's loss lines through the step after it, and its checkpoint;
    then the oracle is stopped."""
    ckpt = os.path.join(work, name + "_ckpt")
    saving = ["--checkpoint-dir", ckpt, "--save-every", "1"] if save else []
    job = Job(sfrun, program, work, name, ranks, list(args) + ["--resume", resume] + saving, timeout=timeout)
    if until is not None:
        step, start = until
        enough = lambda: (committed_step(ckpt) >= step and
                          all(job.losses_seen(r) >= step + 1 - start for r in range(ranks)))  # noqa: E731
        while job.proc.poll() is None and not enough() and time.monotonic() < job.deadline:
            time.sleep(0.005)
        if job.proc.poll() is None and enough():
            job.kill()
            return job
    if job.finish() != 0:
        # The step mapped to these ranks lies past the last epoch (train/state_mapping.h): a
        # restart has nothing to train, and Model::train refuses such a point.
        if "the resume point's epoch must be in [0, epochs)" in job.err:
            return None
        raise RuntimeError(f"oracle {name} failed ({job.rc}):\n{job.err}")
    return job


def check_against_oracles(sfrun, program, work, job, reference_ckpt, args, launch_ranks, total_steps,
                          oracle_prints_rank0_only=False):
    """Checks every survivor's loss lines after each membership change against the restart oracle
    of that change (print every step, one epoch), and that the survivors of a change agree on it.
    With `oracle_prints_rank0_only` (pipeline_parallel: its step's loss is reduced over the stages,
    and only rank 0 prints it when the job is not elastic) every survivor is checked against the
    oracle's rank 0.
    Returns (the changes, the most steps a survivor printed and then rolled back, the final
    members, the loss lines compared). Raises AssertionError naming the first difference."""
    segs = {r: segments(job.text(r)) for r in launch_ranks}
    by_generation = {}
    for r in launch_ranks:
        for g, (m, _) in segs[r].items():
            if g:
                by_generation.setdefault(g, m)
    changes = [by_generation[g] for g in sorted(by_generation)]
    assert sorted(by_generation) == list(range(1, len(changes) + 1)), \
        f"{job.name}: the generations printed are {sorted(by_generation)}"
    for r in launch_ranks:
        for g, (m, _) in segs[r].items():
            if not g:
                continue
            assert (m.group(4), m.group(9)) == (changes[g - 1].group(4), changes[g - 1].group(9)), \
                f"{job.name} rank {r}: generation {g} is members {m.group(4)} at step {m.group(9)}, another rank's " \
                f"members {changes[g - 1].group(4)} at step {changes[g - 1].group(9)}"
    # Where each oracle resumes: the previous oracle's checkpoint of the step, or, when the
    # previous world did no step, the checkpoint that world itself started from.
    source, prev_ckpt, prev_step, most_lost, compared = None, reference_ckpt, 0, 0, 0
    members = list(launch_ranks)
    for g, change in enumerate(changes, start=1):
        step, n = int(change.group(9)), int(change.group(6))
        members = [int(x) for x in change.group(4).split(",")]
        assert step >= prev_step, f"{job.name}: generation {g} rolled back to step {step}, before {prev_step}"
        if step >= total_steps:  # the change came after the last step: nothing is left to compare
            for r in members:
                assert g not in segs[r] or not segs[r][g][1], f"{job.name} rank {r} trained after the last step"
            break
        if source is None or step != prev_step:
            source = os.path.join(prev_ckpt, f"step_{step}")
        later = (int(changes[g].group(9)), step) if g < len(changes) else None
        oracle = run_oracle(sfrun, program, work, f"{job.name}_oracle{g}", n, args, source, save=later is not None,
                            until=later)
        prev_ckpt = os.path.join(work, f"{job.name}_oracle{g}_ckpt")
        if oracle is None:  # nothing left to train after the change, on either side
            for r in members:
                assert g not in segs[r] or not segs[r][g][1], \
                    f"{job.name} rank {r} trained after a change whose restart has nothing left"
            break
        for new_rank, r in enumerate(members):
            if g not in segs[r]:
                continue  # lost in a later change before it printed this one
            if g - 1 in segs[r]:  # a replacement that joined in g lost nothing before it
                most_lost = max(most_lost, len(segs[r][g - 1][1]) - (step - prev_step))
            want = segments(oracle.text(0 if oracle_prints_rank0_only else new_rank))[0][1]
            got = segs[r][g][1]
            for key, loss in got.items():
                assert key in want, f"{job.name} rank {r}: generation {g} printed epoch {key[0]} step {key[1]}, " \
                                    f"which the oracle (restart from step {step} on {n}) did not"
                assert want[key] == loss, f"{job.name} rank {r}: generation {g} epoch {key[0]} step {key[1]}: " \
                                          f"loss {loss}, the restart oracle {want[key]}"
            compared += len(got)
            if g == len(changes):
                assert set(got) == set(want), f"{job.name} rank {r}: generation {g} printed {len(got)} loss " \
                                              f"lines, the oracle {len(want)}"
        prev_step = step
    return changes, most_lost, members, compared
