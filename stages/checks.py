"""DVC stage ``checks`` (``python -m stages.checks``): the task :mod:`xurs_pipeline.tasks.checks`."""

from xurs_pipeline.tasks import checks
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("checks", checks.run)
