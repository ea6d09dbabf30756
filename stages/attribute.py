"""DVC stage ``attribute`` (``python -m stages.attribute``): the task :mod:`xurs_pipeline.tasks.attribute`."""

from xurs_pipeline.tasks import attribute
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("attribute", attribute.run)
