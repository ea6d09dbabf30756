from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
sys.path.insert(0, str(Path(__file__).parents[2]))  # the project root, for `stages`

from rs_fixtures import labelled_prompts, tiny_backbone_dir

__all__ = ["labelled_prompts", "tiny_backbone_dir"]
