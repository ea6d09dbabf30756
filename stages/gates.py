"""DVC stage ``gates`` (``python -m stages.gates``): the task :mod:`xurs_pipeline.tasks.gates`."""

from xurs_pipeline.tasks import gates
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("gates", gates.run)
