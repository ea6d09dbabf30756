"""Attribution of credal width (Sec. 3.3, 3.4; App. A.3, B.2): EG (Eq. 3), IG, both routes (Eq. 4).

Modules, in the order data flows through them:

- ``config``: the ``attribution`` config section.
- ``model``: the ``WidthModel`` protocol the engine needs, the differentiated functions (``Objective``).
- ``references``: reference preparation (pad/truncate, zero baseline, aligned paired prompt).
- ``plan``: seeded EG sampling plans (Captum's draw order) and IG quadrature rules.
- ``gradients``: the batched gradient loop shared by EG and IG; ``prefix``: the prompt prefix shared
  by every reference, which it runs once.
- ``endpoints``: widths without gradients (input, prepared and natural references; Eq. 9, 10).
- ``estimators``: EG and IG (per-reference residuals, adaptive refinement).
- ``question``: one question end to end; ``records``: its output rows.
- ``inputs``: question selection and input checks; ``store`` / ``runner``: sharding, resume, merge.
- ``explain`` / ``html``: the library side of ``xurs explain``.
"""
