"""ARCHITECTURE.md's data-flow chart is the stages' graph as ``contracts.STAGES`` declares it (each stage's
reads joined to the stage that writes them; ``dvc.yaml`` is generated from the same table), drawn as its
transitive reduction: an edge is left out exactly where a longer path joins the same two stages."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import networkx as nx

from xurs_pipeline.contracts import ARTIFACTS, STAGES

ROOT = Path(__file__).resolve().parents[2]
EDGE = re.compile(r"^\s*(\w+)(?:\s*-->\s*\w+)+\s*$")


def chart_edges(text: str) -> set[tuple[str, str]]:
    """The edges of the first ```mermaid block of ``text``: a line ``a --> b --> c`` gives (a, b), (b, c)."""
    block = text.split("```mermaid", 1)[1].split("```", 1)[0]
    edges = set()
    for line in block.splitlines():
        if EDGE.match(line):
            names = [name.strip() for name in line.split("-->")]
            edges.update(itertools.pairwise(names))
    return edges


def stage_graph() -> nx.DiGraph:
    """Writer -> reader for every artifact a stage reads (``Stage.reads``)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(STAGES)
    graph.add_edges_from((ARTIFACTS[r].writer, name) for name, stage in STAGES.items() for r in stage.reads)
    return graph


def chart_faults(edges: set[tuple[str, str]]) -> list[str]:
    """How ``edges`` differ from the transitive reduction of :func:`stage_graph` (empty where they don't)."""
    reduced = set(nx.transitive_reduction(stage_graph()).edges)
    drawn = [f"{a} --> {b} drawn, not in the stages' graph's reduction" for a, b in sorted(edges - reduced)]
    return drawn + [f"{a} --> {b} missing" for a, b in sorted(reduced - edges)]


def test_the_chart_is_the_reduced_stage_graph() -> None:
    edges = chart_edges((ROOT / "ARCHITECTURE.md").read_text())
    assert chart_faults(edges) == []
    assert {name for edge in edges for name in edge} == set(STAGES)


def test_a_false_or_redundant_edge_and_a_missing_one_are_named() -> None:
    edges = chart_edges((ROOT / "ARCHITECTURE.md").read_text())
    assert chart_faults(edges | {("train", "train_swap")}) == [
        "train --> train_swap drawn, not in the stages' graph's reduction"
    ]
    assert chart_faults(edges | {("attribute", "report")}) == [
        "attribute --> report drawn, not in the stages' graph's reduction"
    ]
    assert chart_faults(edges - {("swap", "report")}) == ["swap --> report missing"]
    assert chart_edges("```mermaid\nflowchart LR\n  a --> b --> c\n  c --> a\n```") == {
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
    }
