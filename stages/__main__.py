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


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


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
    socket.send_fds(conn, [STATUS.pack(len(body)) + body], [0, 1, 2])
    pid = read_int(conn)
    if not pid:
        conn.close()
        return None
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    status = read_int(conn)
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
