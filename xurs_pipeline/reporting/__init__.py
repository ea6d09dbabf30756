"""reporting package of xurs_pipeline (see ARCHITECTURE.md)."""
