from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from rs_fixtures import labelled_prompts, tiny_backbone_dir

__all__ = ["labelled_prompts", "tiny_backbone_dir"]
