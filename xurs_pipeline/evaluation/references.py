"""Reference endpoint checks (Eq. 10, Table 3, App. E steps 1-3).

``Delta_natural = w_with - w_without`` uses both paired prompts processed normally;
``Delta_aligned = w_with - w_aligned`` uses the prepared (aligned) reference evaluated under the original
prompt's mask and positions. Their absolute difference is the shift caused by preparing the reference;
above a configured amount the check warns, because the attribution then explains another difference.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

log = logging.getLogger("xurs.evaluation")


@dataclass(frozen=True)
class EndpointCheck:
    case: str
    delta_natural: float
    delta_aligned: float
    shift: float
    residual: float
    warn_above: float

    @property
    def warning(self) -> bool:
        """True when preparation moved the width difference by more than ``warn_above``."""
        return self.shift > self.warn_above

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "warning": self.warning}


def endpoint_check(
    case: str,
    w_with: float,
    w_without: float,
    w_aligned: float,
    residual: float = math.nan,
    warn_above: float = 0.01,
) -> EndpointCheck:
    """Eq. 10 for one paired case; logs a warning when ``|Delta_natural - Delta_aligned| > warn_above``.

    residual: the completeness residual (Eq. 9) of the attribution made with the aligned reference.
    """
    values = {"w_with": w_with, "w_without": w_without, "w_aligned": w_aligned}
    bad = [k for k, v in values.items() if not math.isfinite(v)]
    if bad:
        raise ValueError(f"case {case!r}: widths {bad} are not finite ({values})")
    delta_natural = w_with - w_without
    delta_aligned = w_with - w_aligned
    check = EndpointCheck(
        case, delta_natural, delta_aligned, abs(delta_natural - delta_aligned), residual, warn_above
    )
    if check.warning:
        log.warning(
            "case %s: reference preparation shifts the width difference by %.6f (natural %+.6f, aligned "
            "%+.6f), more than evaluation.reference_shift_warning=%g; the attribution explains the aligned "
            "difference, not the natural one",
            case,
            check.shift,
            delta_natural,
            delta_aligned,
            warn_above,
        )
    return check
