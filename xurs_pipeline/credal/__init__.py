"""Pure random-set maths (torch, no I/O): the ONLY place masses, width and BetP are defined.

Four options 0..3 (A..D); 15 focal sets in ``FOCAL_SETS`` order (``focal_sets.py``).

- ``conversion.py``: belief head outputs (..., 14) -> intermediate values (App. A recursion, positive
  part or exact Moebius); set logits (..., 15) -> masses by softmax.
- ``correction.py``: Eq. 5 correction -> masses (..., 15); correction statistics (Sec. 5.3); the closed
  form width of Eq. 6.
- ``measures.py``: Bel, Pl, width, BetP (Eq. 1, 2) of masses.
- ``validation.py``: input checks (ValueError naming the shape, or the first bad index and value).
- ``precision.py``: dtype policy. float16/bfloat16 inputs are computed in float32, float32/float64 as
  they are; results come back in the input dtype.

All functions are differentiable and accept any leading batch shape. ``validate=False`` skips the
value scan (one reduction and device sync) in hot loops; shape and dtype are always checked.
"""

from xurs_pipeline.credal.conversion import (
    CONVERSIONS,
    intermediate_values,
    masses_from_set_logits,
    resolve_conversion,
)
from xurs_pipeline.credal.correction import (
    RESCALE_THRESHOLD,
    CorrectionStats,
    beliefs_to_masses,
    closed_form_width,
    correction_stats,
)
from xurs_pipeline.credal.focal_sets import (
    FOCAL_INDEX,
    FOCAL_SETS,
    FULL_SET_INDEX,
    N_BELIEFS,
    N_MASSES,
    N_OPTIONS,
    SET_SIZES,
    FocalTensors,
    focal_tensors,
)
from xurs_pipeline.credal.measures import (
    belief,
    belief_of,
    credal_width,
    pignistic,
    plausibility,
    plausibility_of,
)
from xurs_pipeline.credal.precision import SUPPORTED_DTYPES, coarsest, compute_dtype, mass_sum_tolerance
from xurs_pipeline.credal.validation import check_beliefs, check_event, check_masses

__all__ = [
    "CONVERSIONS",
    "FOCAL_INDEX",
    "FOCAL_SETS",
    "FULL_SET_INDEX",
    "N_BELIEFS",
    "N_MASSES",
    "N_OPTIONS",
    "RESCALE_THRESHOLD",
    "SET_SIZES",
    "SUPPORTED_DTYPES",
    "CorrectionStats",
    "FocalTensors",
    "belief",
    "belief_of",
    "beliefs_to_masses",
    "check_beliefs",
    "check_event",
    "check_masses",
    "closed_form_width",
    "coarsest",
    "compute_dtype",
    "correction_stats",
    "credal_width",
    "focal_tensors",
    "intermediate_values",
    "mass_sum_tolerance",
    "masses_from_set_logits",
    "pignistic",
    "plausibility",
    "plausibility_of",
    "resolve_conversion",
]
