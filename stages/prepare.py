"""DVC stage ``prepare`` (``python -m stages.prepare``): the task :mod:`xurs_pipeline.tasks.prepare`."""

from xurs_pipeline.tasks import prepare
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("prepare", prepare.run)
