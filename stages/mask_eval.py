"""DVC stage ``mask_eval`` (``python -m stages.mask_eval``): the task :mod:`xurs_pipeline.tasks.mask_eval`."""

from xurs_pipeline.tasks import mask_eval
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("mask_eval", mask_eval.run)
