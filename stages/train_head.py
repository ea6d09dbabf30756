"""DVC stage ``train_head``: the task :mod:`xurs_pipeline.tasks.train_head`."""

from xurs_pipeline.tasks import train_head
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("train_head", train_head.run)
