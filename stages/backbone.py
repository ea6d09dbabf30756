"""DVC stage ``backbone`` (``python -m stages.backbone``): the task :mod:`xurs_pipeline.tasks.backbone`."""

from xurs_pipeline.tasks import backbone
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("backbone", backbone.run)
