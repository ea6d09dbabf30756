"""DVC stage ``check``: validate params.yaml first (:mod:`xurs_pipeline.tasks.check`)."""

import sys

from xurs_pipeline.tasks.check import main

if __name__ == "__main__":
    sys.exit(main())
