"""What an operator can ask a running model process for.

A Python-backend stub that stops answering is restarted by the frontend's
health monitor, which destroys the evidence. ``kill -USR1 <stub pid>``
first writes every thread's Python stack to the stub's stderr (Triton's
log), even when the threads are stuck inside native code.
"""

from __future__ import annotations

import faulthandler
import signal


def dump_stacks_on_sigusr1() -> None:
    """Registers the stack dump; harmless to call more than once."""
    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
