"""One output file of a DVC experiment: the workspace's copy, or the experiment's revision through DVC,
only when the stage that writes it ran in that experiment under its own params (:mod:`.lock`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xurs_pipeline.experiments.lock import not_run, read_lock, writer
from xurs_pipeline.experiments.show import WORKSPACE, Experiment, parse_json

NOT_MADE = "{path} not found (its stage did not run in this experiment, or the run failed before it)"


def json_bytes(data: bytes, where: str) -> Any:
    """A JSON file's bytes, parsed (``show.parse_json``: a clear error naming ``where``)."""
    return parse_json(data.decode("utf-8"), where)


def experiment_json(
    exp: Experiment, path: str, cwd: str | Path = ".", parse: Callable[[bytes, str], Any] = json_bytes
) -> tuple[Any, str]:
    """The file ``path`` (relative to the project) of experiment ``exp``: (``parse(bytes, where)``, JSON by
    default, ``path``), or (None, why not): the stage writing it did not run in the experiment (its
    ``dvc.lock`` entry is another run's), or the file is not in the DVC cache. The workspace's file is read
    from ``cwd``; an experiment's through DVC (``dvc.api``: the hash its ``dvc.lock`` records, from the DVC
    cache)."""
    try:
        lock = read_lock(exp.rev, cwd)
    except ValueError as err:
        return None, f"{path}: {err}"
    stage = writer(lock, path)
    if stage is None:
        return None, NOT_MADE.format(path=path)
    why = not_run(lock, exp.params, stage)
    if why:
        return None, f"{path}: not this experiment's ({why})"
    return _read(exp.rev, path, cwd, parse)


def _read(rev: str, path: str, cwd: str | Path, parse: Callable[[bytes, str], Any]) -> tuple[Any, str]:
    import dvc.api
    from dvc.exceptions import DvcException, PathMissingError

    if rev == WORKSPACE:
        file = Path(cwd) / path
        if not file.is_file():
            return None, NOT_MADE.format(path=path)
        return parse(file.read_bytes(), str(file)), path
    try:
        data = dvc.api.read(path, repo=str(cwd), rev=rev, mode="rb")
    except (FileNotFoundError, PathMissingError):  # in dvc.lock, not in the cache (`dvc gc`, a kill)
        return None, (
            f"{path}: in the experiment's dvc.lock but not in the DVC cache (removed by `dvc gc`?): "
            "`dvc exp pull` it from a remote, or rerun the experiment"
        )
    except DvcException as err:
        return None, f"{path}: {err}"
    return parse(data, f"{rev[:7]}:{path}"), path


def outputs(
    exps: Sequence[Experiment], located: Callable[[Mapping[str, Any]], Path], cwd: str | Path = "."
) -> tuple[list[tuple[Experiment, Any]], dict[str, str]]:
    """Each experiment's JSON output at ``located(paths)`` (``paths``: its ``paths.*`` params, as a
    ``contracts.Artifact.at`` takes them): (experiment, content) of those that have it of their own, and
    name -> why not of the others (unfinished, its stage not run in it, not in the cache)."""
    found, left_out = [], {}
    for exp in exps:
        why = exp.unfinished
        if not why:
            paths = {root: exp.params.get(f"paths.{root}") for root in ("artifacts", "results")}
            if paths["artifacts"] is None:
                why = "its params have no paths.artifacts (not this project's experiment?)"
            else:
                content, why = experiment_json(exp, located(paths).as_posix(), cwd)
                if content is not None:
                    found.append((exp, content))
                    continue
        left_out[exp.name] = why
    return found, left_out
