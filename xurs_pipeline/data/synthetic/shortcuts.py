"""Shortcut diagnostics (App. D.2): can simple predictors, fitted on TRAINING records only, find the label
without reading the result? Reported as accuracies per split; no pass/fail threshold (as in the paper).

- ``test_order``: a lookup predictor whose only input is which option the test named FIRST in the case
  points to (among the plausible pair, per the rules as read by ``reader.py``). It predicts the most
  frequent training label for that input. V1 as published scores 1.0 (its answer-order flaw); V2 about
  0.5 (the order is drawn independently of the answer).
- ``hidden_results_text``: a conditional logit over the four options (scipy L-BFGS, L2 penalty) on text
  with every test status replaced by a mask. Names are replaced by role placeholders (the candidate
  option, other options, first/second-named test, the case's symptom) so features transfer across
  families; option k's features are the words sharing a sentence with it, the words next to it, and
  its position. Features seen in fewer than two training records are dropped.
- ``majority``: the most frequent training label, for reference.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.optimize
import scipy.sparse

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.families import STATUS_WORDS
from xurs_pipeline.data.synthetic.reader import Reading

L2_PENALTY = 1e-2


def _option_features(record: QuestionRecord, reading: Reading) -> list[list[str]]:
    """Role-placeholder features of each option k (only those that differ between options)."""
    text = record.question
    for k, name in enumerate(record.options):
        text = text.replace(name, f" opt{k} ")
    for j, test in enumerate(reading.tests):
        text = re.sub(rf"\b{re.escape(test)}\b", f" test{j + 1} ", text)
    text = text.replace(reading.symptom, " symptom ")
    text = re.sub(rf"\b({'|'.join(STATUS_WORDS)})\b", " result ", text)
    sentences = [re.findall(r"[a-z0-9]+", s.lower()) for s in re.split(r"[.;]", text)]
    out = []
    for k in range(4):
        own = f"opt{k}"

        def role(token: str, own: str = own) -> str:
            return token if not token.startswith("opt") or token == own else "other"

        feats = [f"pos:{k}"]
        for words in sentences:
            if own not in words:
                continue
            feats += [f"s:{role(w)}" for w in words if w != own]
            for i, w in enumerate(words):
                if w == own:
                    feats += [
                        f"l:{role(words[i - 1]) if i else '^'}",
                        f"r:{role(words[i + 1]) if i + 1 < len(words) else '$'}",
                    ]
        out.append(feats)
    return out


def _design(feats: Sequence[list[list[str]]], vocab: dict[str, int]) -> scipy.sparse.csr_matrix:
    """(n_records * 4, n_features) counts; row 4i + k is option k of record i."""
    rows, cols = [], []
    for i, per_option in enumerate(feats):
        for k, option_feats in enumerate(per_option):
            for f in option_feats:
                if f in vocab:
                    rows.append(4 * i + k)
                    cols.append(vocab[f])
    data = np.ones(len(rows))
    return scipy.sparse.csr_matrix((data, (rows, cols)), shape=(4 * len(feats), len(vocab)))


def fit_conditional_logit(
    x: scipy.sparse.csr_matrix, labels: np.ndarray, l2: float = L2_PENALTY
) -> np.ndarray:
    """Weights w minimising mean -log softmax_k(x_{i,k} w)[label_i] + l2/2 |w|^2. x (4n, d), labels (n,)."""
    n = len(labels)
    onehot = np.zeros((n, 4))
    onehot[np.arange(n), labels] = 1.0

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = (x @ w).reshape(n, 4)
        scores -= scores.max(axis=1, keepdims=True)
        log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
        grad_scores = (np.exp(log_p) - onehot) / n
        value = -(log_p * onehot).sum() / n + 0.5 * l2 * w @ w
        return value, x.T @ grad_scores.reshape(-1) + l2 * w

    result = scipy.optimize.minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B")
    return result.x


def _accuracy_by_split(records: Sequence[QuestionRecord], predicted: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for split in sorted({r.split for r in records}):
        mask = np.array([r.split == split for r in records])
        truth = np.array([r.answer_idx for r in records])[mask]
        out[split] = float(np.mean(predicted[mask] == truth))
    return out


def shortcut_diagnostics(
    records: Sequence[QuestionRecord], readings: dict[str, Reading]
) -> dict[str, object]:
    """Accuracy per split of the three predictors above, all fitted on the ``train`` records only."""
    records = [r for r in records if r.record_id in readings]
    train = np.array([r.split == "train" for r in records])
    if not train.any():
        raise ValueError("shortcut diagnostics need training records (split 'train'); found none")
    labels = np.array([r.answer_idx for r in records])
    majority = Counter(labels[train].tolist()).most_common(1)[0][0]
    first = np.array([readings[r.record_id].first_test_option for r in records])
    table = {
        v: Counter(labels[train & (first == v)].tolist()).most_common(1)[0][0]
        for v in set(first[train].tolist())
    }
    order_pred = np.array([table.get(v, majority) for v in first.tolist()])
    feats = [_option_features(r, readings[r.record_id]) for r in records]
    counts = Counter(f for i in np.flatnonzero(train) for f in {f for opt in feats[i] for f in opt})
    vocab = {f: j for j, f in enumerate(sorted(f for f, c in counts.items() if c >= 2))}
    x = _design(feats, vocab)
    train_rows = np.repeat(train, 4)
    w = fit_conditional_logit(x[train_rows], labels[train])
    text_pred = np.asarray((x @ w).reshape(len(records), 4).argmax(axis=1))
    return {
        "fitted_on": "train",
        "n_records": {s: int(sum(r.split == s for r in records)) for s in sorted({r.split for r in records})},
        "test_order": _accuracy_by_split(records, order_pred),
        "hidden_results_text": _accuracy_by_split(records, text_pred),
        "majority": _accuracy_by_split(records, np.full(len(records), majority)),
        "n_text_features": len(vocab),
    }
