"""The pipeline report's second method (the first of ``evaluation.compare_methods``): each page gets the other
magnitudes of its own question and option beside its own; a question the other run lacks keeps its page."""

from __future__ import annotations

import pandas as pd
from reporting_html_cases import small_view

from xurs_pipeline.reporting.build_report import with_comparison
from xurs_pipeline.reporting.method_findings import finding_label


def test_each_page_gets_the_other_methods_row_of_its_own_question_and_option() -> None:
    one, two = small_view(record_id="q1"), small_view(record_id="q2")
    n = len(one.tokens)
    other = pd.DataFrame(
        {
            "record_id": ["q1", "q1", "q3"],
            "target": [one.explained, (one.explained + 1) % 4, one.explained],  # q1's other option: not shown
            "token_magnitude": [[float(i) for i in range(n)], [9.0] * n, [1.0] * n],
        }
    )
    compared, plain = with_comparison([one, two], "kronrod", "occlusion_token", other)
    assert [m.method for m in compared.methods] == ["kronrod", "occlusion_token"]
    assert compared.methods[0].magnitude == one.magnitude  # the page's own method first, its own scores
    assert compared.methods[1].magnitude == tuple(float(i) for i in range(n))
    assert compared.methods[1].finding == finding_label("occlusion_token")
    assert plain == two  # q2 is not in the other run: no comparison on its page
