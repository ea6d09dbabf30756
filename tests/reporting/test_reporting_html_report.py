"""The written report: index links every page, nothing written on failure; views validate; token text."""

from __future__ import annotations

import pytest
from reporting_html_cases import masses_of, measures, parse, small_view
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from xurs_pipeline.reporting import html as report
from xurs_pipeline.reporting.html import (
    CheckRow,
    index_entry,
    page_name,
    render_explanation,
    render_index,
    write_explanation,
    write_report,
)
from xurs_pipeline.reporting.html_tokens import _byte_level_table, detect_scheme, display_texts


def _views():
    """Three questions: widths 0.8 (C, checks pass), 0.6 (A, no checks), 0.7 (B, a failed check)."""
    wide = small_view(record_id="q/1")
    m = masses_of({(0,): 0.4, (0, 3): 0.35})
    bel, pl, betp = measures(m)
    narrow = small_view(record_id="q2", masses=m, bel=bel, pl=pl, betp=betp, explained=0, checks=())
    m = masses_of({(1,): 0.3, (1, 2): 0.6})
    bel, pl, betp = measures(m)
    failed = (CheckRow("completeness_residual", "R", 0.2, 0.01, "<=", False),)
    middle = small_view(record_id="q3", masses=m, bel=bel, pl=pl, betp=betp, explained=1, checks=failed)
    return [wide, narrow, middle]


def test_index_links_every_page_widest_first(tmp_path):
    views = _views()
    paths = write_report(views, tmp_path / "html", subtitle="experiment smoke")
    assert [p.name for p in paths] == [page_name(v.record_id) for v in views] + ["index.html"]
    assert sorted(p.name for p in (tmp_path / "html").iterdir()) == sorted(p.name for p in paths)
    index = parse(paths[-1].read_text())
    rows = index.find("tbody")[0].find("tr")
    hrefs = [row.find("a")[0].attrs["href"] for row in rows]
    assert sorted(hrefs) == sorted(p.name for p in paths[:-1])
    cells = [[td.all_text() for td in row.find("td")] for row in rows]
    assert cells == [
        ["q/1", "C", "0.8000", "0.00400", "-0.0200", "pass: Completeness residual R (Eq. 9)"],
        ["q3", "B", "0.7000", "0.200", "—", "FAIL: R"],  # names the check that failed
        ["q2", "A", "0.6000", "—", "—", "—"],
    ]
    for path in paths[:-1]:  # every page links back to the index
        assert [a.attrs["href"] for a in parse(path.read_text()).find("a")] == ["index.html"]


def test_a_standalone_page_has_no_index_link(tmp_path):
    path = write_explanation(small_view(), tmp_path / "one" / "page.html")
    assert path.read_text() == render_explanation(small_view(), index_href=None)
    assert not parse(path.read_text()).find("a")
    assert [p.name for p in path.parent.iterdir()] == ["page.html"]  # no temporary file left


def test_index_entry_reads_the_checks():
    wide, narrow, middle = _views()
    assert index_entry(wide).verdict == "pass"
    assert index_entry(middle).verdict == "FAIL"
    assert index_entry(narrow).residual is None
    assert index_entry(narrow).width == pytest.approx(0.6)  # m({A,D}) + m(Θ) (Eq. 2)
    assert index_entry(wide).href == page_name("q/1")


def test_index_escapes_record_ids_and_hrefs():
    entry = index_entry(small_view(record_id='x"><script>'))
    page = render_index([entry], title="<b>t</b>", scripted=False)
    tree = parse(page)
    assert not tree.find("script")
    assert not tree.find("b")
    (link,) = tree.find("a")
    assert link.attrs["href"] == entry.href
    assert link.all_text() == 'x"><script>'


def test_nothing_is_written_when_a_page_fails_to_render(tmp_path, monkeypatch):
    real = report.render_explanation

    def fail_on_q3(view, index_href):
        if view.record_id == "q3":
            raise RuntimeError("boom in q3")
        return real(view, index_href=index_href)

    monkeypatch.setattr(report, "render_explanation", fail_on_q3)
    with pytest.raises(RuntimeError, match="boom in q3"):
        write_report(_views(), tmp_path / "html")
    assert not (tmp_path / "html").exists()


def test_duplicate_or_missing_views_write_nothing(tmp_path):
    views = _views()
    with pytest.raises(ValueError, match=r"record 'q2'.*'q2.html'.*must be unique"):
        write_report([*views, views[1]], tmp_path)
    with pytest.raises(ValueError, match="no explained questions"):
        write_report([], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_page_names_are_safe_and_distinct():
    names = {page_name(r) for r in ("a/b", "a_b", "a b", "../x", "ok-1.2")}
    assert len(names) == 5
    assert page_name("ok-1.2") == "ok-1.2.html"
    assert all("/" not in n and not n.startswith(".") for n in names)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"signed": (0.0,) * 3}, r"record 'rec-1': signed has 3 entries; expected 11"),
        ({"sections": ("question",) * 10 + ("headline",)}, r"sections\[10\] = 'headline'; allowed"),
        ({"magnitude": (0.0,) * 10 + (-1.0,)}, r"magnitude\[10\] = -1.0"),
        ({"signed": (0.0,) * 10 + (float("nan"),)}, r"signed\[10\] = nan is not finite"),
        ({"bel": (0.0, 0.95, 0.1, 0.0)}, r"option B = 0.95, 0.5, 0.9; need 0 <= Bel <= BetP <= Pl <= 1"),
        ({"explained": 4}, r"explained = 4; must be 0..3"),
        ({"masses": (0.1,) * 14}, r"masses has 14 entries; expected 15"),
        ({"section_shares": (("question", 1.5),)}, r"section_shares has \('question', 1.5\)"),
        ({"token_scheme": "wordpiece"}, r"token_scheme = 'wordpiece'; allowed"),
    ],
)
def test_views_reject_bad_inputs_naming_record_and_field(change, message):
    with pytest.raises(ValueError, match=message):
        small_view(**change)


def test_check_rows_need_threshold_and_direction_together():
    with pytest.raises(ValueError, match="'r': give both threshold and direction"):
        CheckRow("r", "R", 0.1, threshold=0.01)
    with pytest.raises(ValueError, match="direction '<' must be"):
        CheckRow("r", "R", 0.1, threshold=0.01, direction="<")


def test_display_texts_of_byte_level_and_metaspace_pieces():
    assert detect_scheme(["Hello", " world"]) == "plain"
    assert display_texts(["Ġ", "ĠÃ©", "âĢĻ", "Ċ", "<s>"], ["question"] * 4 + ["special"]) == [
        " ", " é", "’", "\n", "<s>"
    ]
    pieces = ["▁fever", "<0x0A>", "<s>"]
    assert display_texts(pieces, ["question", "template", "special"]) == [" fever", "\n", "<s>"]


def test_byte_table_agrees_with_the_tokenizers_byte_level_decoder():
    table = _byte_level_table()
    assert set(table) == set(pre_tokenizers.ByteLevel.alphabet())
    assert sorted(table.values()) == list(range(256))
    decoder = decoders.ByteLevel()
    for ch, byte in table.items():
        if byte < 128:
            assert decoder.decode([ch]) == chr(byte)
    for text in ("é", "°C", "’s", "日本"):  # multi-byte characters, whole pieces
        piece = "".join(ch for b in text.encode() for ch, v in table.items() if v == b)
        assert decoder.decode([piece]) == text
        assert display_texts([piece], ["question"], "byte_level") == [text]
    assert display_texts(["Ã©"], ["question"]) == ["Ã©"]  # alone, it could be plain text: say the scheme


def test_a_character_split_over_pieces_goes_to_the_piece_completing_it():
    pieces = ["Ġ39", "Â", "°", "C", "<s>", "Ã"]  # '°' = C2 B0; a lone lead byte at the very end
    sections = ["question"] * 4 + ["special", "question"]
    assert display_texts(pieces, sections) == [" 39", "", "°", "C", "<s>", "�"]


def test_metaspace_pieces_of_a_trained_tokenizer_read_as_the_text():
    """A SentencePiece-style tokenizer (Metaspace, byte fallback) trained in-process; its pieces, shown
    one by one, spell the text (with the leading space Metaspace adds)."""
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    hex_bytes = [f"<0x{b:02X}>" for b in range(256)]
    tok.train_from_iterator(["fever and cough for 3 days"] * 5, trainers.BpeTrainer(special_tokens=hex_bytes))
    text = "Fever, cough; 39.2°C\nfor days"
    pieces = tok.encode(text).tokens
    assert any(p.startswith("<0x") for p in pieces)  # unseen characters fell back to bytes
    assert "".join(display_texts(pieces, ["question"] * len(pieces))) == " " + text
