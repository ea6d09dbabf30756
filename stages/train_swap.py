"""DVC stage ``train_swap``: the task :mod:`xurs_pipeline.tasks.train_swap`."""

from xurs_pipeline.tasks import train_swap
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("train_swap", train_swap.run)
