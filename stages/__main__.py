"""``python -m stages <name> [Hydra overrides]``: the command of every DVC stage.

Runs the task of stage ``<name>`` (``xurs_pipeline/tasks/<name>.py``, declared in
``xurs_pipeline/contracts.py``) through the one runner, :func:`xurs_pipeline.tasks.runner.main`.
Several processes: ``torchrun --nproc_per_node N -m stages <name>``.

Where ``$XURS_WARM_SOCKET`` names a warm stage server (``stages/warm.py``), the stage runs in a child forked
from it (:func:`run_warm`: the same run without the imports' start-up time); without one, or where the server
refuses, here.
"""

import contextlib
import json
import os
import signal
import socket
import struct
import sys

ENV = "XURS_WARM_SOCKET"
CHILD_ENV = "XURS_WARM_CHILD"  # the pid of a warm child: that process is the stage and starts no other
STATUS = struct.Struct("!i")  # the server's answers: the child's pid (0: start cold), then its exit status


def python_identity() -> list[str]:
    """The interpreter and environment (``python`` and ``python3`` of one venv are the same)."""
    return [os.path.realpath(sys.executable), sys.prefix]


def read_int(conn: socket.socket) -> int | None:
    """One :data:`STATUS` integer from ``conn``; None when it closes first."""
    data = b""
    while len(data) < STATUS.size:
        chunk = conn.recv(STATUS.size - len(data))
        if not chunk:
            return None
        data += chunk
    return int(STATUS.unpack(data)[0])


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Forwarder:
    """Forwards :data:`FORWARDED` to the warm child, installed before the request is sent: the child may
    start the stage (and its output reach a reader) before its pid arrives here, so a signal that comes
    before the pid is held and forwarded with it, or, where the stage starts here instead, raised again
    here once the previous handlers are back."""

    def __init__(self) -> None:
        self.pid = 0
        self.held: list[int] = []
        self.previous = {sig: signal.signal(sig, self._on_signal) for sig in FORWARDED}

    def _on_signal(self, signum: int, _frame: object) -> None:
        if not self.pid:
            self.held.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def to(self, pid: int) -> None:
        """The child's pid is known: forward what was held."""
        self.pid = pid
        for signum in self.held:
            self._on_signal(signum, None)

    def restore(self) -> None:
        """The previous handlers back; where no child took the held signals, they are raised again here."""
        for sig, handler in self.previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        for signum in [] if self.pid else self.held:
            os.kill(os.getpid(), signum)


def run_warm(argv: list[str]) -> int | None:
    """Run this stage command (``sys.argv``) in a child of the warm server named by ``$XURS_WARM_SOCKET``,
    handing it the command line, directory, environment, ``sys.path`` and standard streams; the child's exit
    status, or None where the stage must start here (no server, a refusal, a distributed launch, or this
    process being the warm child itself)."""
    path = os.environ.get(ENV)
    if not path or "LOCAL_RANK" in os.environ or os.environ.get(CHILD_ENV) == str(os.getpid()):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path}
    body = json.dumps({**request, "python": python_identity()}).encode()
    forwarder = _Forwarder()
    socket.send_fds(conn, [STATUS.pack(len(body)) + body], [0, 1, 2])
    pid = read_int(conn)
    if not pid:
        conn.close()
        forwarder.restore()
        return None
    forwarder.to(pid)
    try:
        status = read_int(conn)
    finally:  # the child is gone: nothing is left to forward to (its pid may be reused)
        forwarder.restore()
    if status is None:
        print(f"stages: the warm child {pid} ended without an exit status (killed?)", file=sys.stderr)
        return 1
    if status < 0:  # ended by this signal (Ctrl-C): end the same way, as a cold stage would
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    status = run_warm(sys.argv)
    if status is None:
        from xurs_pipeline.tasks.runner import main

        status = main(sys.argv)
    sys.exit(status)
