"""Processes a test sends Ctrl-C start as a terminal's foreground job would have them."""

from __future__ import annotations

import signal


def as_under_a_terminal() -> None:
    """``preexec_fn`` of a process a test interrupts: SIGINT unblocked and at its default action. A test
    runner may hold it blocked (an earlier test of the worker), or ignored (pytest started in the background
    of a script: a shell without job control starts such commands with SIGINT ignored), and a child inherits
    both, so it would never see the Ctrl-C; Python installs its KeyboardInterrupt handler only where SIGINT
    is at its default when it starts."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
