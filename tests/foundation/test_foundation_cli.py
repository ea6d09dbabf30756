"""The ``xurs`` console script: help works, ``xurs params --check`` detects drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xurs_pipeline.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_console_script_is_installed():
    exe = shutil.which("xurs") or str(Path(sys.executable).parent / "xurs")
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert "credal width" in result.stdout


def test_params_check_detects_drift(tmp_path, capsys):
    out = tmp_path / "params.yaml"
    assert main(["params", "--conf", str(ROOT / "conf"), "--out", str(out)]) == 0
    assert main(["params", "--conf", str(ROOT / "conf"), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text().replace("experiment_name: local", "experiment_name: edited"))
    assert main(["params", "--conf", str(ROOT / "conf"), "--out", str(out), "--check"]) == 1
    assert "differs" in capsys.readouterr().out


def test_a_command_parser_comes_from_its_module_docstring():
    """One factory makes every sub-command's parser: name and help from the docstring's first paragraph,
    the description from the rest; a docstring of another form is refused (every command's is parsed by
    ``build_parser`` above)."""
    import argparse

    from xurs_pipeline.commands.args import command

    sub = argparse.ArgumentParser().add_subparsers()
    doc = """``xurs demo``: do one
    thing.

    Longer description."""
    p = command(sub, doc, lambda args: 0, "composed config")
    assert p.prog.endswith("demo")
    assert p.description == "Longer description."
    assert sub._choices_actions[0].help == "do one thing"
    assert p.parse_args([]).params == "params.yaml"
    with pytest.raises(ValueError, match=r"starts with '``xurs NAME``: help\.'"):
        command(sub, "Do a thing without naming the command.", lambda args: 0)


def test_params_refuses_to_replace_hand_edits_without_force(tmp_path, capsys):
    """A hand edit of params.yaml was replaced without a word; now refused, naming only the edited key (not
    the keys the new overrides change), and with --force replaced, saying which edits went."""
    import shutil

    out = tmp_path / "params.yaml"
    conf = ["--conf", str(ROOT / "conf"), "--out", str(out), "--no-dvc-yaml"]
    shutil.copy(ROOT / "params.yaml", out)  # the committed file (the defaults): replaced freely
    assert main(["params", *conf, "experiment=smoke"]) == 0
    assert main(["params", *conf, "experiment=smoke", "train.seed=9"]) == 0  # what xurs params wrote: too
    text = out.read_text()
    out.write_text(text.replace("  max_epochs:", "  max_epochs: 99\n  old_max_epochs:", 1))
    edited = out.read_text()
    capsys.readouterr()
    assert main(["params", *conf, "experiment=local"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"xurs params: error: {out}: edited since `xurs params` wrote it")
    assert ": train.max_epochs, train.old_max_epochs would be replaced; --force replaces it" in line
    assert out.read_text() == edited  # nothing written
    assert main(["params", *conf, "experiment=local", "--force"]) == 0
    assert f"replaced the edits of {out}: train.max_epochs, train.old_max_epochs" in capsys.readouterr().out
    assert main(["params", *conf, "experiment=local", "--check"]) == 0
