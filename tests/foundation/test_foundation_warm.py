"""Warm stage start-up (stages/warm.py, stages/__main__.py): a stage forked from the warm server is the
stage a cold ``python -m stages`` would be (its directory, environment, arguments, streams, torch threads,
exit status, the project's own code), and it starts cold where the server cannot stand in for a fresh
interpreter.

The project here is ``stages/`` as shipped, with a stand-in for the stage
runner that prints what the stage process sees (and, for the signal tests, waits).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminal import as_under_a_terminal

from stages.__main__ import CHILD_ENV, ENV, STATUS, _Forwarder, read_int, run_warm
from stages.warm import start_server

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = """
import json, os, sys, time
import torch

def main(argv):
    print("to stderr", file=sys.stderr)
    try:  # the line goes out once the clean-up below is armed
        print(json.dumps({"argv": argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("MARKER"),
                          "threads": torch.get_num_threads(), "ppid": os.getppid(), "pid": os.getpid(),
                          "tmp": __import__("tempfile").gettempdir(), "file": __file__}), flush=True)
        if argv[1] == "wait":
            time.sleep(120)
    except KeyboardInterrupt:  # the stage's own clean-up runs, as in a cold stage
        open("interrupted", "w").close()
        raise
    return int(argv[1]) if argv[1].isdigit() else 0
"""


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A warm server of this test module's own (the session's may be off: XURS_TEST_COLD)."""
    directory = Path(tempfile.mkdtemp(prefix="xw-test-"))
    socket_path = directory / "s.sock"
    process = start_server(socket_path, os.environ, preexec_fn=as_under_a_terminal)  # its children's Ctrl-C
    deadline = time.monotonic() + 240
    while not socket_path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert socket_path.exists(), "the warm server did not start"
    yield process, socket_path
    process.terminate()
    process.wait(timeout=30)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "stages", tmp_path / "stages", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "xurs_pipeline" / "tasks").mkdir(parents=True)
    (tmp_path / "xurs_pipeline" / "__init__.py").write_text("")
    (tmp_path / "xurs_pipeline" / "tasks" / "__init__.py").write_text("")
    (tmp_path / "xurs_pipeline" / "tasks" / "runner.py").write_text(STAND_IN)
    (tmp_path / "tmp").mkdir()
    return tmp_path


def _env(project: Path, socket_path: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "OMP_NUM_THREADS")}
    env.update(PYTHONPATH=str(project), MARKER="m-42", TMPDIR=str(project / "tmp"), **extra)
    if socket_path is not None:
        env[ENV] = str(socket_path)
    return env


def _stage(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stages", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _seen(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    return json.loads(result.stdout.splitlines()[0])


def test_a_warm_stage_sees_and_ends_as_a_cold_one(server, project: Path) -> None:
    process, socket_path = server
    cold = _stage(project, _env(project, None, OMP_NUM_THREADS="1"), "3", "x=1")
    warm = _stage(project, _env(project, socket_path, OMP_NUM_THREADS="1"), "3", "x=1")
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr) == (3, "to stderr\n")
    seen_cold, seen_warm = _seen(cold), _seen(warm)
    assert seen_warm["ppid"] == process.pid  # forked from the server
    assert seen_cold["ppid"] != process.pid
    for key in ("argv", "cwd", "marker", "threads", "tmp", "file"):
        assert seen_warm[key] == seen_cold[key], key
    assert seen_warm["file"] == str(project / "xurs_pipeline" / "tasks" / "runner.py")  # the project's code
    assert seen_warm["tmp"] == str(project / "tmp")
    assert seen_warm["threads"] == 1


def test_without_omp_num_threads_the_child_has_torchs_default(server, project: Path) -> None:
    _, socket_path = server
    cold, warm = _stage(project, _env(project, None), "0"), _stage(project, _env(project, socket_path), "0")
    assert _seen(warm)["threads"] == _seen(cold)["threads"]


def test_a_variable_read_at_import_that_differs_starts_the_stage_cold(server, project: Path) -> None:
    process, socket_path = server
    other = "0" if os.environ.get("HF_HUB_OFFLINE") == "1" else "1"
    result = _stage(project, _env(project, socket_path, HF_HUB_OFFLINE=other), "0")
    assert result.returncode == 0
    assert _seen(result)["ppid"] != process.pid


def test_the_warm_child_runs_its_stage_itself(server, monkeypatch: pytest.MonkeyPatch) -> None:
    """``stages/__main__.py`` in the child must not hand the stage to the server again."""
    monkeypatch.setenv(ENV, str(server[1]))
    monkeypatch.setenv(CHILD_ENV, str(os.getpid()))
    assert run_warm(["stages/__main__.py", "0"]) is None


def test_a_request_the_child_cannot_read_is_answered_start_cold(server) -> None:
    """A failure before the child has answered with its pid answers 0 (never a pid the stage would signal)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(server[1]))
        socket.send_fds(conn, [STATUS.pack(9) + b"not json!"], [0, 1, 2])
        assert read_int(conn) == 0
        assert read_int(conn) is None  # and the child is gone


def test_no_server_on_the_socket_starts_the_stage_cold(project: Path, tmp_path: Path) -> None:
    result = _stage(project, _env(project, tmp_path / "nobody.sock"), "5")
    assert result.returncode == 5
    assert _seen(result)["marker"] == "m-42"


def _waiting_stage(cwd: Path, env: dict[str, str], **streams: int) -> subprocess.Popen[str]:
    """``python -m stages wait`` in ``cwd``, with Ctrl-C as under a terminal (tests/terminal.py)."""
    return subprocess.Popen(
        [sys.executable, "-m", "stages", "wait"],
        cwd=cwd,
        env=env,
        text=True,
        preexec_fn=as_under_a_terminal,
        **streams,
    )


def _started(project: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, object]]:
    stage = _waiting_stage(project, env, stdout=subprocess.PIPE)
    assert stage.stdout is not None
    return stage, json.loads(stage.stdout.readline())


def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_ends_the_child_and_the_stage_as_sigint(server, project: Path) -> None:
    process, socket_path = server
    stage, seen = _started(project, _env(project, socket_path))
    assert seen["ppid"] == process.pid
    stage.send_signal(signal.SIGINT)
    assert stage.wait(timeout=60) == -signal.SIGINT
    assert _gone(int(seen["pid"]))
    assert (project / "interrupted").is_file()


def test_a_killed_stage_process_takes_its_child_with_it(server, project: Path) -> None:
    process, socket_path = server
    stage, seen = _started(project, _env(project, socket_path))
    assert seen["ppid"] == process.pid
    stage.kill()
    stage.wait(timeout=60)
    assert _gone(int(seen["pid"]))


def _stand_in_server(socket_path: Path, client_pid: list[int], child: subprocess.Popen[bytes] | None) -> None:
    """One request answered as the warm server would, with Ctrl-C sent to the stage between the request
    and the child's pid (the child may have started and printed by then): then ``child``'s pid, and, once
    ``child`` has ended, its status; without a child, 0 (start cold)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(socket_path))
        listener.listen(1)
        conn, _ = listener.accept()
        with conn:
            _, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            for fd in fds:
                os.close(fd)
            while not client_pid:
                time.sleep(0.01)
            os.kill(client_pid[0], signal.SIGINT)
            time.sleep(1.0)  # the stage handles it before it knows the child
            conn.sendall(STATUS.pack(child.pid if child else 0))
            if child:
                conn.sendall(STATUS.pack(child.wait(timeout=60)))


def _stage_interrupted_before_the_answer(child: subprocess.Popen[bytes] | None) -> tuple[int, str]:
    """A stage started against :func:`_stand_in_server` (in a thread): its exit status and stderr."""
    import threading

    directory = Path(tempfile.mkdtemp(prefix="xw-race-"))
    client_pid: list[int] = []
    answer = threading.Thread(target=_stand_in_server, args=(directory / "s.sock", client_pid, child))
    answer.start()
    try:
        while not (directory / "s.sock").exists():
            time.sleep(0.01)
        env = {**os.environ, ENV: str(directory / "s.sock")}
        stage = _waiting_stage(ROOT, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client_pid.append(stage.pid)
        _, err = stage.communicate(timeout=120)
        return stage.returncode, err
    finally:
        if child is not None:
            child.kill()
        answer.join(timeout=60)
        shutil.rmtree(directory, ignore_errors=True)


def test_ctrl_c_before_the_childs_pid_arrives_still_reaches_the_child() -> None:
    """A signal that comes after the request and before the child's pid is held and forwarded with the
    pid, not lost (nor a traceback in the stage while the child runs on)."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(sleeper, preexec_fn=as_under_a_terminal)
    status, err = _stage_interrupted_before_the_answer(child)
    assert child.returncode == -signal.SIGINT  # forwarded to the child (it ended before its status was sent)
    assert status == -signal.SIGINT  # and the stage ends as the child did
    assert "Traceback" not in err


def test_ctrl_c_before_a_refusal_stops_the_stage_before_it_starts_cold() -> None:
    """Held, and the server then answers 0 (start cold): the signal is raised again here, so the stage
    ends by it instead of starting the stage runner."""
    status, err = _stage_interrupted_before_the_answer(None)
    assert status == -signal.SIGINT
    assert "xurs_pipeline" not in err  # the stage runner never started


def test_the_forwarding_ends_with_the_child_and_what_it_took_is_not_raised_again() -> None:
    """Once the child has its signals (and has ended), the previous handlers are back and nothing held is
    raised here: no later signal goes to a pid that may be reused."""
    raised: list[int] = []
    before = signal.signal(signal.SIGHUP, lambda signum, _frame: raised.append(signum))
    try:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        forwarder = _Forwarder()
        signal.raise_signal(signal.SIGHUP)  # before the pid: held
        forwarder.to(child.pid)
        assert child.wait(timeout=30) == -signal.SIGHUP
        forwarder.restore()
        assert raised == []
        signal.raise_signal(signal.SIGHUP)
        assert raised == [signal.SIGHUP]  # the previous handler again
    finally:
        signal.signal(signal.SIGHUP, before)
