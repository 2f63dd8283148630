"""Where a served load's CPU goes: each process of the stack and the load's
own client, in cores, and how much of the time the decoder's threads wanted
a core but waited for one.

Why: streamed one token a response, the served decoder's steps take
2-3 times as long as the same steps in process (``bench.step_profile``),
and its step counters say it steps nearly all the time. The Linux scheduler
says why: per thread, ``/proc/<pid>/task/<tid>/schedstat`` holds the time
run on a core and the time spent runnable in a run queue, so a thread slowed
by other processes on the cores shows its waiting there, one slowed by
Python's GIL or an IPC round trip does not. The load goes straight to the
ensemble over gRPC, as the sweep phase sends it (closed loop, 64 tokens a
request, ``stream_interval_ms`` as given); the frontend stays idle.

    python -m bench.served_cpu --concurrency 1 16 --constraint none
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

from bench.decoder_steps import read_step_counters, step_share
from bench.load import tokens_in_closed_loop
from bench.report import print_and_save
from bench.servers import REPO_ROOT, served_stack
from bench.workload import constraint_kinds, requests

_PROC = Path("/proc")
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
MAX_TOKENS = 64
# Requests per stream in a measured window (after a warm-up of two each).
REQUESTS_PER_STREAM = 6


@dataclass(frozen=True)
class ThreadTimes:
    running_s: float
    waiting_s: float  # runnable, in a run queue


def _stat_fields(pid: str) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, ...)."""
    try:
        return (_PROC / pid / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # ended meanwhile
        return None


def process_label(command: list[str], *, is_client: bool, in_frontend_group: bool) -> str:
    """What a process of the stack is, from its command line: a Python-backend
    stub by its model's name, tritonserver, the frontend, or the load's client."""
    if is_client:
        return "load client (this process)"
    for word in command:
        if word.endswith("/1/model.py"):  # a stub runs its model's model.py
            return f"stub: {Path(word).parent.parent.name}"
    if any(word.endswith("/tritonserver") for word in command):
        return "tritonserver"
    return "frontend" if in_frontend_group else "other"


def _command(pid: str) -> list[str]:
    try:
        raw = (_PROC / pid / "cmdline").read_bytes()
    except OSError:  # ended meanwhile
        return []
    return [word.decode(errors="replace") for word in raw.split(b"\0") if word]


def _processes(stack) -> dict[str, tuple[str, float]]:
    """pid -> (label, CPU seconds) of the stack's processes (its two process
    groups: tritonserver with its stubs, the frontend) and this one."""
    frontend_group = os.getpgid(stack.frontend.pid)
    groups = {os.getpgid(stack.triton.pid), frontend_group}
    found = {}
    for pid in os.listdir(_PROC):
        if not pid.isdigit() or (fields := _stat_fields(pid)) is None:
            continue
        group, is_client = int(fields[2]), int(pid) == os.getpid()
        if group in groups or is_client:
            label = process_label(
                _command(pid), is_client=is_client, in_frontend_group=group == frontend_group
            )
            found[pid] = (label, (int(fields[11]) + int(fields[12])) * _TICK_S)  # utime + stime
    return found


def _threads(pid: str) -> dict[str, ThreadTimes]:
    found = {}
    for tid in os.listdir(_PROC / pid / "task"):
        try:
            running_ns, waiting_ns, _ = (
                (_PROC / pid / "task" / tid / "schedstat").read_text().split()
            )
        except (OSError, ValueError):
            continue
        found[tid] = ThreadTimes(int(running_ns) / 1e9, int(waiting_ns) / 1e9)
    return found


def _decoder_pid(processes: dict[str, tuple[str, float]]) -> str:
    return next(
        pid for pid, (label, _) in processes.items() if label == "stub: constrained_decoder"
    )


def measure(stack, constraint_name: str, concurrency: int, interval_ms: float) -> dict:
    """One closed-loop window at ``concurrency``, after a warm-up."""
    constraint = constraint_kinds()[constraint_name]
    url = stack.triton.grpc_url
    warm = requests(constraint, 2 * concurrency, MAX_TOKENS, interval_ms=interval_ms)
    asyncio.run(tokens_in_closed_loop(url, warm, concurrency))
    specs = requests(
        constraint, REQUESTS_PER_STREAM * concurrency, MAX_TOKENS, first=len(warm),
        interval_ms=interval_ms,
    )  # fmt: skip
    steps_before = read_step_counters(stack.triton.metrics_url)
    processes_before = _processes(stack)
    decoder = _decoder_pid(processes_before)
    threads_before = _threads(decoder)
    tokens, wall_s = asyncio.run(tokens_in_closed_loop(url, specs, concurrency))
    processes_after, threads_after = _processes(stack), _threads(decoder)
    steps = step_share(steps_before, read_step_counters(stack.triton.metrics_url))
    cores: dict[str, float] = {}
    for pid, (label, cpu_s) in processes_after.items():
        if pid in processes_before:
            cores[label] = cores.get(label, 0.0) + (cpu_s - processes_before[pid][1]) / wall_s
    threads = sorted(
        (
            {
                "running_share": (after.running_s - before.running_s) / wall_s,
                "run_queue_share": (after.waiting_s - before.waiting_s) / wall_s,
            }
            for tid, after in threads_after.items()
            if (before := threads_before.get(tid)) is not None
        ),
        key=lambda shares: -shares["running_share"],
    )
    return {
        "constraint": constraint_name,
        "concurrency": concurrency,
        "stream_interval_ms": interval_ms,
        "tokens_per_s": tokens / wall_s,
        "cores": {label: round(value, 3) for label, value in sorted(cores.items())},
        # The busiest first: the engine loop, then the response sender.
        "decoder_threads": [
            {key: round(value, 3) for key, value in shares.items()}
            for shares in threads if shares["running_share"] >= 0.01
        ],
        "decoder_steps": steps,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / ".cache" / "models" / "demo")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--constraint", choices=sorted(constraint_kinds()), default="none")
    parser.add_argument("--stream-interval-ms", type=float, nargs="+", default=[0.0])
    parser.add_argument("--logs", type=Path, default=Path("/tmp/served_cpu"))
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    results = []
    with served_stack(args.model_dir, args.logs) as stack:
        for interval_ms in args.stream_interval_ms:
            for concurrency in args.concurrency:
                started = time.monotonic()
                results.append(measure(stack, args.constraint, concurrency, interval_ms))
                result = results[-1]
                print(
                    f"c={concurrency} interval {interval_ms:g} ms: "
                    f"{result['tokens_per_s']:.0f} tokens/s, cores {result['cores']}, "
                    f"engine thread {result['decoder_threads'][:1]} "
                    f"({time.monotonic() - started:.0f} s)",
                    flush=True,
                )
    print_and_save({"model_dir": str(args.model_dir), "results": results}, args.output)


if __name__ == "__main__":
    main()
