"""``python -m stages <name> [Hydra overrides]``: the command of every DVC stage.

Runs the task of stage ``<name>`` (``xurs_pipeline/tasks/<name>.py``, declared in
``xurs_pipeline/contracts.py``) through the one runner, :func:`xurs_pipeline.tasks.runner.main`.
Several processes: ``torchrun --nproc_per_node N -m stages <name>``.
"""

import sys

from xurs_pipeline.tasks.runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
