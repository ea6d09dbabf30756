"""DVC stage ``attribute_swap``: the task :mod:`xurs_pipeline.tasks.attribute_swap`."""

from xurs_pipeline.tasks import attribute_swap
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("attribute_swap", attribute_swap.run)
