"""The path from a reference to the input (``attribution.path``): straight, or one token block at a time.

``straight`` is the paper's path, Z(α) = B + α (X - B) (Eq. 3, 5): every position moves at once, so between
a question and an unrelated training prompt the midpoints mix two prompts in every position, embeddings the
model never saw, and the width swings along the way (BENCHMARKS.md section 8: total variation ~10x the net
change).

``blocks`` is a piecewise-linear path through real token sequences: from the prepared reference
W_0 = B, block k of ``path_block`` positions (left to right) switches from the reference's tokens to the
question's, W_k = W_{k-1} with X's ids on block k, until W_K = X. Each piece W_{k-1} -> W_k is a straight
path on which only block k moves, so every point of the path is a real prompt outside one block. The
attribution is the sum over pieces; completeness holds piece by piece (∫ over piece k = F(W_k) - F(W_{k-1}))
and telescopes to F(X) - F(B) (Eq. 9), so the same residual and error checks apply. Blocks where the
reference already equals X are skipped. The path depends on the block order (left to right, the order in
which a causal model reads), as every path method does on its path. Positions before block k are X's on
both ends of piece k, so a piece reuses that prefix (``attribution.prefix``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.references import PreparedReferences


@dataclass(frozen=True)
class Pieces:
    """The pieces of M references' block paths.

    refs: J pieces as references: ``prepared_ids`` (J, L) the starts W_{k-1}, ``end_ids`` (J, L) the ends W_k,
      ``changed_positions`` the positions each piece moves.
    owner: (J,) the reference (0..M-1) each piece belongs to, in path order.
    """

    refs: PreparedReferences
    owner: np.ndarray

    def ends(self) -> PreparedReferences:
        """The pieces' ends W_k as references (for their widths under the original mask and positions)."""
        r = self.refs
        return PreparedReferences(r.record_ids, None, r.end_ids, r.changed_positions)


def block_pieces(refs: PreparedReferences, input_ids: Sequence[int], block: int) -> Pieces:
    """Split each reference's path to ``input_ids`` (L,) into pieces that move ``block`` positions each."""
    if refs.prepared_ids is None:
        raise ValueError("attribution.path='blocks' needs token references (train or aligned), not 'zero'")
    if block < 1:
        raise ValueError(f"attribution.path_block={block}: must be >= 1")
    x = torch.as_tensor(list(input_ids), dtype=torch.long, device=refs.prepared_ids.device)
    length = int(x.numel())
    starts, ends, owner, changed, ids = [], [], [], [], []
    for r in range(len(refs)):
        current = refs.prepared_ids[r]
        for lo in range(0, length, block):
            differs = (current[lo : lo + block] != x[lo : lo + block]).nonzero().flatten()
            if not differs.numel():
                continue
            following = current.clone()
            following[lo : lo + block] = x[lo : lo + block]
            starts.append(current)
            ends.append(following)
            owner.append(r)
            changed.append(tuple(int(lo + i) for i in differs.tolist()))
            ids.append(refs.record_ids[r])
            current = following
    if not starts:  # every reference equals the input: one empty piece keeps the shapes (contributes 0)
        starts, ends, owner, changed, ids = [x], [x], [0], [()], [refs.record_ids[0]]
    pieces = PreparedReferences(tuple(ids), None, torch.stack(starts), changed, torch.stack(ends))
    return Pieces(pieces, np.asarray(owner, dtype=np.int64))
