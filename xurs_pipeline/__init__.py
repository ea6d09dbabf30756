"""XU-RS: attribution of credal width in random-set language-model classifiers.

Sub-packages follow the pipeline's data flow (see ARCHITECTURE.md):
``credal`` (pure maths), ``data``, ``models``, ``train``, ``attribution``,
``evaluation``, ``reporting``.
"""

__version__ = "0.1.0"
