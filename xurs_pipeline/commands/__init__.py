"""Sub-commands of the ``xurs`` CLI; each module defines ``add_parser(subparsers)`` setting ``run``."""
