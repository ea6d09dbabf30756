"""credal package of xurs_pipeline (see ARCHITECTURE.md)."""
