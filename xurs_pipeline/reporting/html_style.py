"""The inline stylesheet shared by the explanation pages and the index (no external assets)."""

from __future__ import annotations

from markupsafe import Markup

CSS = Markup(
    """
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #dadce0; --panel: #f8f9fa; --accent: #1c3d8c; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #ffffff;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 40px; }
a { color: var(--accent); }
h1 { font-size: 22px; margin: 4px 0 6px; }
h2 { font-size: 16px; margin: 0 0 8px; }
section { margin: 18px 0; padding: 14px 16px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--panel); }
.crumbs { margin: 0; font-size: 13px; }
.muted, .note { color: var(--muted); font-size: 13px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 8px 0 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
table { border-collapse: collapse; width: 100%; background: #ffffff; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: middle; }
th { font-size: 13px; color: var(--muted); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.explained td { background: #e8eefb; font-weight: 600; }
.letter { font-weight: 700; width: 1.6em; }
.badge { display: inline-block; padding: 0 6px; margin-left: 6px; border-radius: 9px; font-size: 11px;
  font-weight: 600; color: #ffffff; background: var(--accent); vertical-align: 1px; }
.badge.gold { background: #2e7d32; }
.interval-cell { width: 330px; padding-top: 2px; padding-bottom: 0; }
.interval-svg, .axis-svg { display: block; }
.key { display: flex; flex-wrap: wrap; gap: 4px 18px; align-items: center; margin: 6px 0 0;
  font-size: 13px; color: var(--muted); }
.swatch { display: inline-block; width: 22px; height: 10px; border-radius: 2px; vertical-align: -1px; }
.tick { display: inline-block; width: 2px; height: 14px; background: #d9480f; vertical-align: -3px; }
.heatmap { padding: 10px 12px; background: #ffffff; border: 1px solid var(--line); border-radius: 4px;
  font: 14px/1.9 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.tok { white-space: pre-wrap; border-radius: 2px; padding: 1px 0; }
.tok:empty { display: inline-block; min-width: 3px; height: 1.2em; vertical-align: text-bottom; }
.tok.ineligible { text-decoration: underline dotted #9a9a9a; text-underline-offset: 3px; }
.tok.special { font-size: 11px; border: 1px dashed #c4c4c4; padding: 0 2px; margin-right: 2px; }
.legend { display: flex; align-items: center; gap: 8px; margin: 6px 0 8px; font-size: 13px;
  color: var(--muted); }
.legend .bar { width: 260px; height: 12px; border-radius: 2px; border: 1px solid var(--line); }
.cards { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.cards > section { margin: 0; }
.hbar { height: 10px; background: #6f88c8; border-radius: 2px; min-width: 1px; }
.hbar.width { background: var(--accent); }
.bar-cell { width: 45%; }
.pass { color: #2e7d32; font-weight: 700; }
.fail { color: #c62828; font-weight: 700; }
.none { color: var(--muted); }
.prov { font-size: 13px; }
.tok.mark { outline-offset: -1px; }
.mark-0 { outline: 2px solid #2e7d32; }
.mark-1 { outline: 2px dashed #8e24aa; }
.mark-2 { outline: 2px dotted #ef6c00; }
.mark-swatch { display: inline-block; width: 22px; height: 12px; margin-right: 4px; vertical-align: -2px; }
section, .md-table { overflow-x: auto; }
.cards > section { min-width: 0; }
@media (max-width: 960px) { .cards { grid-template-columns: 1fr; } main { padding: 12px 10px 30px; } }
.verdicts { display: flex; flex-wrap: wrap; gap: 6px 26px; margin: 4px 0 6px; font-size: 16px; }
#verdicts ul { margin: 0; padding-left: 18px; }
.expected { color: #8a5a00; font-weight: 700; }
th.sortable { cursor: pointer; }
th.sortable::after { content: " ⇅"; color: #b0b0b0; }
th.sorted-desc::after { content: " ▼"; color: var(--ink); }
th.sorted-asc::after { content: " ▲"; color: var(--ink); }
"""
)
