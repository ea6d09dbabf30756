"""DVC stage ``predict`` (``python -m stages.predict``): the task :mod:`xurs_pipeline.tasks.predict`."""

from xurs_pipeline.tasks import predict
from xurs_pipeline.tasks.runner import run_stage

if __name__ == "__main__":
    run_stage("predict", predict.run)
