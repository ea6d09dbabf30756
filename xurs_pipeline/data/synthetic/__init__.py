"""Controlled synthetic datasets (Sec. 5.4, App. D): V1 (as published, with its known flaws) and V2
(the revision), their rule-based reader, paired-tokenisation check and shortcut diagnostics."""

from xurs_pipeline.data.synthetic.direct import generate_direct, read_direct
from xurs_pipeline.data.synthetic.pairs import PairReport, check_pairs
from xurs_pipeline.data.synthetic.reader import ReaderRejection, ReaderReport, Reading, check, check_all, read
from xurs_pipeline.data.synthetic.shortcuts import shortcut_diagnostics
from xurs_pipeline.data.synthetic.swap import generate_swap, read_swap
from xurs_pipeline.data.synthetic.targets import prescribed_masses
from xurs_pipeline.data.synthetic.v1 import KNOWN_FLAWS, generate_v1
from xurs_pipeline.data.synthetic.v2 import generate_v2

__all__ = [
    "KNOWN_FLAWS",
    "PairReport",
    "ReaderRejection",
    "ReaderReport",
    "Reading",
    "check",
    "check_all",
    "check_pairs",
    "generate_direct",
    "generate_swap",
    "generate_v1",
    "generate_v2",
    "prescribed_masses",
    "read",
    "read_direct",
    "read_swap",
    "shortcut_diagnostics",
]
