"""The project's error base: every error the pipeline raises on purpose derives from :class:`XursError`.

The stage runner (``xurs_pipeline/tasks/runner.py``) and the ``xurs`` command line print such an error as
one line naming the file, record or key, and exit with status 2. Any other exception is a bug and keeps its
traceback. Subclasses also derive from the builtin they refine (``ValueError``, ``RuntimeError``...), so
code catching those keeps working.
"""

from __future__ import annotations


class XursError(Exception):
    """A problem with the input, config or artifacts the user can fix; its message says how."""


class NonFiniteValuesError(XursError, FloatingPointError):
    """Values that must be finite (features, outputs, losses) are NaN or inf; names the records and the
    usual causes. Nothing is written."""


class LaunchError(XursError, RuntimeError):
    """A multi-process launch that did not form the process group it asked for (it would run N independent
    copies racing on the outputs); says which command starts the processes."""
