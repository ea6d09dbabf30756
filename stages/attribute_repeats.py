"""DVC stage ``attribute_repeats``: the task :mod:`xurs_pipeline.tasks.attribute_repeats`."""

from xurs_pipeline.tasks import attribute_repeats
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("attribute_repeats", attribute_repeats.run)
