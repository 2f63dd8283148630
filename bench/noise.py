"""How much CPU other people's processes used while each phase ran.

The machine is shared: a figure measured while someone else's job kept a core
busy is not comparable to one measured on an idle machine. The load average
only says that the machine was busy; this says how busy it was with work that
is not the benchmark's (its own process and children, and the servers'
sessions), in cores, from /proc. On systems without /proc it reports nothing.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterable
from pathlib import Path

_PROC = Path("/proc")


def _busy_ticks() -> int:
    """Non-idle CPU time of the whole machine, in clock ticks."""
    fields = [int(v) for v in (_PROC / "stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    guest = sum(fields[8:10]) if len(fields) > 9 else 0  # already counted in user/nice
    return sum(fields) - idle - guest


def _stat(pid: str) -> tuple[int, int, int, int] | None:
    """(session id, utime + stime, children's utime + stime, ppid) of one process."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is the state: ppid=1, session=3, utime=11, stime=12, cutime=13, cstime=14.
    ticks = int(fields[11]) + int(fields[12])
    children = int(fields[13]) + int(fields[14])
    return int(fields[3]), ticks, children, int(fields[1])


def _own_ticks(sessions: Iterable[int]) -> dict[int, int]:
    """CPU time per process of this process (with its finished children) and
    of the given sessions."""
    own_sessions = set(sessions)
    me = os.getpid()
    ticks_by_pid = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(entry.name)
        if stat is None:
            continue
        session, ticks, children, ppid = stat
        pid = int(entry.name)
        if pid == me:
            ticks_by_pid[pid] = ticks + children
        elif session in own_sessions or ppid == me:
            ticks_by_pid[pid] = ticks
    return ticks_by_pid


def _own_used(before: dict[int, int], after: dict[int, int]) -> int:
    """The benchmark's CPU time between two readings, over the processes
    alive at the second. A process that ended in between (a stopping server's
    straggler) is left out rather than subtracted whole: its lifetime's
    ticks vanishing from a plain sum made a phase look 5-7 cores busy with
    other people's work on a 2-core machine."""
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items())


class NoiseMeter:
    """Marks phase boundaries; reports other processes' CPU use per phase, in cores."""

    UNMEASURED = "(unmeasured)"
    """Marks a stretch left out of the results (server start-up is not a phase)."""

    def __init__(self) -> None:
        self.available = (_PROC / "stat").is_file()
        self._sessions: set[int] = set()
        self._marks: list[tuple[str, float, int, dict[int, int]]] = []
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def add_session(self, session_id: int) -> None:
        """A server started in its own session: its processes count as the benchmark's."""
        self._sessions.add(session_id)

    def mark(self, phase: str) -> None:
        if self.available:
            self._marks.append((phase, time.monotonic(), _busy_ticks(), _own_ticks(self._sessions)))

    def close(self) -> None:
        """Ends the last phase; call it while the servers still run (a stopped server's
        CPU time can no longer be read, and would count as someone else's)."""
        self.mark("end")

    def foreign_cores(self) -> dict[str, float]:
        """Per phase (from its mark to the next): busy cores not used by the benchmark."""
        if not self.available or not self._marks:
            return {}
        marks = self._marks
        if marks[-1][0] != "end":
            marks = [*marks, ("end", time.monotonic(), _busy_ticks(), _own_ticks(self._sessions))]
        result = {}
        for (phase, t0, busy0, own0), (_, t1, busy1, own1) in itertools.pairwise(marks):
            if t1 > t0 and phase != self.UNMEASURED:
                foreign = max(0, (busy1 - busy0) - _own_used(own0, own1)) / self._tick
                result[phase] = round(foreign / (t1 - t0), 2)
        return result
