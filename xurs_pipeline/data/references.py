"""Reproducible orders of record ids and the reference collections cut from them (Sec. 3.3, App. B.2).

Hash ranking: each id gets the key ``sha256(f"{seed}:{record_id}")`` (hex digest); ids are sorted by
key, ascending. The order depends only on the ids and the seed (not on their input order, the Python
version or numpy), so the same training ids always give the same collections. The paper's seed is
20260804: the first 3,072 ids of that order form three consecutive, non-overlapping collections of
1,024 references for Llama-2; SmolLM3 uses the first 256 training prompts in file order.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

PAPER_REFERENCE_SEED = 20260804
ORDERS = ("first", "hash")


def hash_key(record_id: str, seed: int) -> str:
    """The ranking key of one id: hex SHA-256 of ``"{seed}:{record_id}"`` (UTF-8)."""
    return hashlib.sha256(f"{seed}:{record_id}".encode()).hexdigest()


def hash_order(record_ids: Sequence[str], seed: int = PAPER_REFERENCE_SEED) -> list[str]:
    """``record_ids`` sorted by :func:`hash_key` (a seeded, input-order-independent shuffle)."""
    _check_unique(record_ids)
    return sorted(record_ids, key=lambda record_id: hash_key(record_id, seed))


def reference_collections(
    train_ids: Sequence[str],
    per_collection: int,
    n_collections: int = 1,
    order: str = "first",
    seed: int = PAPER_REFERENCE_SEED,
) -> list[list[str]]:
    """``n_collections`` consecutive, non-overlapping collections of ``per_collection`` training ids.

    order ``first``: the ids as given (the training split in file order); ``hash``: :func:`hash_order`
    with ``seed``. Raises ``ValueError`` when fewer than ``per_collection * n_collections`` ids exist.
    """
    if order not in ORDERS:
        raise ValueError(f"reference order {order!r}: must be one of {ORDERS}")
    if per_collection < 1 or n_collections < 1:
        raise ValueError(
            f"reference collections: per_collection={per_collection} and n_collections={n_collections} "
            "must both be >= 1"
        )
    needed = per_collection * n_collections
    if len(train_ids) < needed:
        raise ValueError(
            f"reference collections: {n_collections} x {per_collection} = {needed} training prompts needed, "
            f"but the training split has only {len(train_ids)}. Lower the collection size or count."
        )
    _check_unique(train_ids)
    ordered = hash_order(train_ids, seed) if order == "hash" else list(train_ids)
    return [ordered[k * per_collection : (k + 1) * per_collection] for k in range(n_collections)]


def _check_unique(record_ids: Sequence[str]) -> None:
    dupes = sorted(r for r, n in Counter(record_ids).items() if n > 1)
    if dupes:
        raise ValueError(f"duplicate record ids {dupes[:5]}: reference ids must be unique")
