"""The warm stage server: ``python -m stages <name>`` in a child forked from a server that has already
imported the heavy libraries (``python -m stages.warm SOCKET``; the stage side is ``stages/__main__.py``).

A stage process spends about 7 s importing torch, transformers, peft, captum, scipy and pandas before it
reads its config (BENCHMARKS.md section 16); a stage of the tiny experiments then works for under a second.
Where many short stages run (the test suite's ``dvc repro`` of the smoke project, a user iterating on a
tiny config), a server started once (``python -m stages.warm SOCKET``) holds those imports, and a
stage whose environment names the server (``XURS_WARM_SOCKET=SOCKET``) hands it its command line, working
directory, environment, ``sys.path`` and standard streams; a child forked from the server runs the stage
exactly as ``stages/__main__.py`` would, and the stage process exits with the child's status.

What makes the child the stage a cold start would be:

- the server imports third-party libraries only: the child imports the project's own code (``stages``,
  ``xurs_pipeline``) afresh from the stage's ``sys.path``, so an edited project file is what runs;
- libraries read some variables when they are imported (``HF_HUB_OFFLINE``, ``CUDA_VISIBLE_DEVICES``...),
  and set some (``TORCHINDUCTOR_CACHE_DIR``): the child's environment is the stage's with what the imports
  set, and where its value of any variable with a prefix in :data:`FROZEN_ENV` then differs from the
  server's, or the stage runs another Python, the server refuses and the stage starts cold;
- the child is the stage: ``stages/__main__.py`` run in it (``$XURS_WARM_CHILD`` is its pid) runs the stage
  there, and only processes it starts may ask the server for children of their own;
- torch's thread count is set from the stage's ``OMP_NUM_THREADS`` (torch's default where unset);
- ``tempfile`` reads the stage's ``TMPDIR`` again;
- the stage forwards SIGINT, SIGTERM and SIGHUP to the child (from before its request: one that comes
  before the child's pid is held and forwarded with it; its own handlers are back once the child has
  ended), and the child ends itself when the stage process is gone (a killed ``dvc repro`` kills its
  stages).

Distributed launches (``torchrun``) always start cold. Without the variable, or when nothing answers on
the socket, the stage starts cold: the server is an accelerator, never a requirement.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.__main__ import CHILD_ENV, ENV, STATUS, python_identity

PRELOAD = (
    "torch",
    "transformers.models.llama.modeling_llama",
    "peft",
    "captum.attr",
    "accelerate",
    "scipy.stats",
    "pandas",
    "pyarrow.parquet",
    "hydra",
)
FROZEN_ENV = ("HF_", "TRANSFORMERS_", "TORCH", "PYTORCH_", "CUDA_", "MKL_", "KMP_", "TOKENIZERS_")
OWN_PACKAGES = ("stages", "xurs_pipeline")
REFUSED = 0  # the pid the server answers with when the stage must start cold
MAX_REQUEST = 1 << 20
POLL_S = 2.0
PROJECT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Server:
    """frozen: the server's variables read at import (:data:`FROZEN_ENV`), after its imports; imports_set:
    the variables its imports added (a cold stage's imports would add them too); threads: torch's default
    thread count (a stage without ``OMP_NUM_THREADS`` gets it)."""

    frozen: dict[str, str]
    imports_set: dict[str, str]
    threads: int


def _frozen(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(FROZEN_ENV)}


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, MAX_REQUEST, 3)
    (size,) = STATUS.unpack(data[: STATUS.size])
    body = data[STATUS.size :]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the stage closed the connection mid-request")
        body += chunk
    return json.loads(body), fds


def _adopt(request: dict[str, Any], fds: list[int], default_threads: int) -> None:
    """Become the stage process the request describes: its streams, directory, environment, path, argv,
    torch threads; the project's own modules are imported afresh."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = request["path"]
    sys.argv = list(request["argv"])
    for name in [m for m in sys.modules if m.split(".")[0] in OWN_PACKAGES]:
        del sys.modules[name]
    importlib.invalidate_caches()
    tempfile.tempdir = None  # read $TMPDIR again
    import torch

    threads = os.environ.get("OMP_NUM_THREADS", "")
    torch.set_num_threads(int(threads) if threads.isdigit() and int(threads) > 0 else default_threads)


def _run_stage() -> int:
    import runpy

    try:
        runpy.run_module("stages", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return int(stop.code or 0)
        print(stop.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a cold interpreter prints it, then ends by SIGINT
        traceback.print_exc()
        return -int(signal.SIGINT)
    except BaseException:  # what a cold interpreter prints for an uncaught exception
        traceback.print_exc()
        return 1
    return 0


def _end_with_the_stage(conn: socket.socket) -> None:
    """End this child when the stage process closes the connection (it was killed)."""
    while conn.recv(1):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def _child(conn: socket.socket, server: Server) -> None:
    """Run one stage and end, whatever happens: this process is a fork of the server and must never return
    to its loop. Before it has answered with its pid, any failure answers :data:`REFUSED` (start cold)."""
    status, answered = 1, False
    try:
        request, fds = _receive(conn)
        request["env"] = {**server.imports_set, **request["env"], CHILD_ENV: str(os.getpid())}
        if request["python"] != python_identity() or _frozen(request["env"]) != server.frozen:
            return
        conn.sendall(STATUS.pack(os.getpid()))
        answered = True
        threading.Thread(target=_end_with_the_stage, args=(conn,), daemon=True).start()
        _adopt(request, fds, server.threads)
        status = _run_stage()
    finally:
        with contextlib.suppress(BaseException):  # the stage may be gone: end all the same
            if answered:
                _finish(conn, status)
            else:
                conn.sendall(STATUS.pack(REFUSED))
        os._exit(status & 0xFF)


def _finish(conn: socket.socket, answer: int) -> None:
    """What a cold interpreter does at its end (exit handlers, logging, streams), then the answer."""
    import atexit
    import logging

    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    conn.sendall(STATUS.pack(answer))


def serve(path: Path) -> None:
    """Import :data:`PRELOAD`, then fork a child for each stage that connects to the UNIX socket ``path``;
    ends when the process that started it is gone."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())  # a test runner may have blocked Ctrl-C in us
    before = dict(os.environ)
    for module in PRELOAD:
        importlib.import_module(module)
    import torch

    imports_set = {k: v for k, v in os.environ.items() if k not in before}  # TORCHINDUCTOR_CACHE_DIR...
    server = Server(_frozen(dict(os.environ)), imports_set, torch.get_num_threads())
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    listener.settimeout(POLL_S)
    parent = os.getppid()
    while os.getppid() == parent:
        try:
            conn, _addr = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(conn, server)
        conn.close()
    path.unlink(missing_ok=True)


def start_server(socket_path: Path, env: Mapping[str, str], **popen: Any) -> subprocess.Popen[bytes]:
    """``python -m stages.warm socket_path`` as a process of this project, in ``env`` without
    ``OMP_NUM_THREADS`` (the children take each stage's own) or ``$XURS_WARM_SOCKET``; it binds the socket
    once its imports are done. ``popen``: further arguments of :class:`subprocess.Popen` (output files)."""
    env = {k: v for k, v in env.items() if k not in ("OMP_NUM_THREADS", ENV)}
    return subprocess.Popen(
        [sys.executable, "-m", "stages.warm", str(socket_path)], cwd=PROJECT, env=env, **popen
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m stages.warm SOCKET  (then XURS_WARM_SOCKET=SOCKET for the stages)")
    serve(Path(sys.argv[1]))
