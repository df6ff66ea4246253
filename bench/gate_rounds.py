#!/usr/bin/env python3
"""The gate's measurement: each job's commands interleaved, round after round, and judged by the
medians of per-round ratios.

  python3 bench/gate_rounds.py ROUNDS JOBS_FILE [DEADLINE]

JOBS_FILE holds a job a line, fields split by '|':
  name | limit | floor name | floor command | walk command | this build's | the base's | outputs
(empty fields where a job has none; outputs: files removed before each command).

Why rounds: on a shared 2-core machine a neighbour's load comes and goes within seconds. A median
of this build's runs against a median of cp's runs taken a minute apart compares two different
machines; the ratio of two commands run back to back in one round compares one. So each round
runs every command of a job once, in an order that rotates from round to round (no command is
always the one after the sync), and each verdict is the median over rounds of a per-round ratio.

The floors tell how trustworthy the rounds were: two commands that do fixed work, the floor (cp,
perf script, perf archive) and, beside cp, the header walk (which reads the same file and writes
nothing), should each take the same time round after round, and so should their ratio. When the
floor's spread (interquartile range over median) or the spread of the per-round walk/cp ratio
passes 25%, the machine was too noisy to judge: the job is measured again after the others, up to
twice more, and the table says so. (Whether the walk is under or over cp is no sign of noise:
on ext4 cp copies in the kernel, 110 MB in 30-50 ms, where the walk decodes two million record
headers in 70 ms.)

A job fails only when this build is over its limit against the floor *and* slower than the build
before beyond the noise measured in the same rounds (three standard errors of the median of the
per-round ratios, at least 10%): a neighbour's load makes both builds slow alike, a regression
only one of them. A job that fails is measured once more after the others and fails only if it
fails again (the verdict is that second measurement's): with fourteen jobs, one unlucky set of
rounds would otherwise fail a change that slowed nothing.

The gate has a budget: DEADLINE (seconds since the epoch) is when it ends. A job measures as many
rounds as fit in its share of the time left (that time over the jobs left; its warm-up round tells
how long a round takes), at least MIN_ROUNDS; a job for which fewer fit before the deadline is
"not judged: out of time" and fails nothing, and a noisy job is measured again only while time is
left. On a busy or slow machine the gate then judges on fewer rounds, and then fewer jobs (those
it lists first first), rather than running past CI's time.
"""
import os
import shlex
import statistics
import subprocess
import sys
import time

MAX_TRIES = 3
MIN_ROUNDS = 5
FLOOR_SPREAD = 0.25
MIN_NOISE = 0.10


def run_once(cmd, outputs):
    for o in outputs:
        try:
            os.unlink(o)
        except FileNotFoundError:
            pass
    os.sync()  # the previous command's dirty pages are written back before, not during, this one
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {shlex.join(cmd)}")
    return took


def spread(xs):
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


class OutOfTime(Exception):
    pass


def measure(job, rounds, deadline, share):
    """The job's times, a list a command: `rounds` of them, or as many as fit in its `share` of
    the seconds left (at least MIN_ROUNDS); OutOfTime when fewer than MIN_ROUNDS fit before the
    deadline."""
    cmds = {k: shlex.split(job[k]) for k in ("floor", "walk", "this", "base") if job[k]}
    names = list(cmds)
    times = {k: [] for k in names}
    r = 0
    while r <= rounds:
        order = names[r % len(names):] + names[:r % len(names)]
        start = time.time()
        took = {k: run_once(cmds[k], job["outputs"]) for k in order}
        if r == 0:  # the warm-up round: page cache and binaries; and how long a round takes
            took_round = max(time.time() - start, 1e-3)
            if (deadline - time.time()) / took_round < MIN_ROUNDS:
                raise OutOfTime
            if share < rounds * took_round:
                rounds = max(MIN_ROUNDS, int(share / took_round))
        else:
            for k in names:
                times[k].append(took[k])
        r += 1
    return times


def judge(job, times):
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = statistics.median(t / f for t, f in zip(times["this"], times["floor"]))
    row = {"ratio": ratio, "med": med, "floor_spread": spread(times["floor"])}
    noisy = []
    if row["floor_spread"] > FLOOR_SPREAD:
        noisy.append(f"{job['floor_name']} spread {row['floor_spread'] * 100:.0f}%")
    if "walk" in times:
        walk = [w / f for w, f in zip(times["walk"], times["floor"])]
        row["walk"] = statistics.median(walk)
        if spread(walk) > FLOOR_SPREAD:
            noisy.append(f"walk / cp spread {spread(walk) * 100:.0f}%")
    row["noisy"] = noisy
    over = bool(job["limit"]) and ratio > float(job["limit"])
    slower = True
    if "base" in times:
        per_round = [t / b for t, b in zip(times["this"], times["base"])]
        row["vs"] = statistics.median(per_round)
        mad = statistics.median(abs(x - row["vs"]) for x in per_round)
        se = 1.2533 * 1.4826 * mad / len(per_round) ** 0.5
        row["noise"] = max(MIN_NOISE, 3 * se)
        slower = row["vs"] > 1 + row["noise"]
    row["fail"] = over and slower
    row["slower_within_limit"] = slower and not over and "base" in times
    return row


def cells(job, row, tries):
    name = job["name"].split()
    ms = lambda s: f"{s * 1000:.0f} ms"
    out = [name[0], name[1], ms(row["med"]["this"]), f"{job['floor_name']} {ms(row['med']['floor'])}",
           f"{row['ratio']:.2f}", job["limit"] or "-",
           f"{row['floor_spread'] * 100:.0f}%", f"{row['walk']:.2f}" if "walk" in row else "-"]
    if "vs" in row:
        out += [ms(row["med"]["base"]), f"{row['vs']:.2f}", f"{row['noise'] * 100:.0f}%"]
    verdict = "**over**" if row["fail"] else "ok"
    if row["rounds"] < row["asked"]:
        verdict += f" ({row['rounds']} rounds, what the budget left)"
    if row["noisy"]:
        verdict += f" (too noisy to judge {tries}x: {', '.join(row['noisy'])})"
    if job.get("confirming"):
        verdict += " (its first measurement failed; this is the second)"
    if row["slower_within_limit"]:
        verdict += " (slower than base, within its limit)"
    return "| " + " | ".join(out + [verdict]) + " |"


def main():
    rounds = int(sys.argv[1])
    deadline = float(sys.argv[3]) if len(sys.argv) > 3 else float("inf")
    keys = ("name", "limit", "floor_name", "floor", "walk", "this", "base", "outputs")
    jobs = []
    for line in open(sys.argv[2]):
        if line.strip():
            job = dict(zip(keys, (f.strip() for f in line.rstrip("\n").split("|"))))
            job["outputs"] = job["outputs"].split()
            jobs.append(job)
    has_base = any(j["base"] for j in jobs)
    print("| recording | verb | this build | floor | ratio | limit | floor spread | walk / cp |"
          + (" base | this / base | noise |" if has_base else "") + " verdict |")
    print("|---" * (9 + (3 if has_base else 0)) + "|")
    failed = noisy_left = unjudged = 0
    # A job, its try, and its last noisy row: what is judged when no time is left to measure again.
    queue = [(j, 1, None) for j in jobs]
    while queue:
        job, tries, row = queue.pop(0)
        try:
            if time.time() >= deadline:
                raise OutOfTime
            # Its share of the time left: the jobs after it are judged too, on fewer rounds.
            times = measure(job, rounds, deadline, (deadline - time.time()) / (len(queue) + 1))
            row = judge(job, times)
            row["rounds"], row["asked"] = len(times["this"]), rounds
        except RuntimeError as e:
            print(f"| {job['name']} | failed to run: {e} |")
            failed += 1
            continue
        except OutOfTime:
            if row is None:
                print(f"| {' | '.join(job['name'].split())} | not judged: out of time |",
                      flush=True)
                unjudged += 1
                continue
            tries -= 1  # judged on its last noisy measurement, which was try `tries - 1`
        else:
            if row["noisy"] and tries < MAX_TRIES:
                print(f"gate: {job['name']}: machine too noisy to judge "
                      f"({', '.join(row['noisy'])}); measured again later in the run",
                      file=sys.stderr, flush=True)
                queue.append((job, tries + 1, row))
                continue
            # A failure is confirmed by measuring again after the other jobs: a regression is
            # slower both times, a neighbour's burst (or one unlucky set of rounds among the
            # gate's fourteen jobs) rarely twice. Out of time, the one failure stands.
            if row["fail"] and not job.get("confirming") and tries < MAX_TRIES:
                vs = f" and {row['vs']:.2f}x the base" if "vs" in row else ""
                print(f"gate: {job['name']}: over its limit{vs}; measured again later in the run "
                      "to confirm", file=sys.stderr, flush=True)
                job["confirming"] = True
                queue.append((job, tries + 1, row))
                continue
        noisy_left += bool(row["noisy"])
        failed += row["fail"]
        print(cells(job, row, tries), flush=True)
    print(f"gate: {rounds} interleaved rounds a job, medians of per-round ratios; "
          f"{failed} over, {noisy_left} judged on noisy floors, {unjudged} not judged "
          "(out of time)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
