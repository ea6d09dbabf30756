"""DVC stage ``report`` (``python -m stages.report``): the task :mod:`xurs_pipeline.tasks.report`."""

from xurs_pipeline.tasks import report
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("report", report.run)
