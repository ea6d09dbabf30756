"""DVC stage ``tables`` (``python -m stages.tables``): the task :mod:`xurs_pipeline.tasks.tables`."""

from xurs_pipeline.tasks import tables
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("tables", tables.run)
