"""DVC stage ``swap`` (``python -m stages.swap``): the task :mod:`xurs_pipeline.tasks.swap`."""

from xurs_pipeline.tasks import swap
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("swap", swap.run)
