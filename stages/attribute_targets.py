"""DVC stage ``attribute_targets``: the task :mod:`xurs_pipeline.tasks.attribute_targets`."""

from xurs_pipeline.tasks import attribute_targets
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("attribute_targets", attribute_targets.run)
