"""DVC stage ``train`` (``python -m stages.train``): the task :mod:`xurs_pipeline.tasks.train`."""

from xurs_pipeline.tasks import train
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("train", train.run)
