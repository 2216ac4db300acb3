"""Literature tables: "Make a table of the papers on X: method, data" on the seed corpus, cell
extraction (answer/table.py), the CSV export and `ask --mode table --json`."""
from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from assistant import Turn
from assistant.answer.table import NONE, aspect_query, phrases, table_cells
from assistant.cli import app
from assistant.export import table_csv
from assistant.text import split_sentences

CAUSALITY = "General Machine Learning · Causality"
CAUSAL_ASK = "Make a table of the papers on causal inference: method, data"


@pytest.fixture()
def pa(seed_assistant):
    """The session's seed assistant (`none` backend), shared: these tests only ask."""
    return seed_assistant


@pytest.fixture(scope="module")
def causal(seed_assistant):
    return seed_assistant.ask(CAUSAL_ASK)


def flat(text: str) -> str:
    return " ".join(text.split())


def cell_is_quoted(cell: str, abstract: str) -> bool:
    """A cell is "—" or a verbatim piece of the abstract (a cut one ends in " …")."""
    return cell == NONE or flat(cell.removesuffix(" …")) in flat(abstract)


def test_causal_table_rows_are_causal_papers_with_quoted_cells(seed_assistant, causal):
    assert causal.intent == "table" and not causal.abstained
    table = causal.table
    assert table.aspects == ["method", "data"] and table.topic == "causal inference"
    assert len(table.rows) >= 2
    for row in table.rows:
        paper = seed_assistant.store.paper(row.paper_id)
        assert paper.category == CAUSALITY
        assert len(row.cells) == 2
        for cell in row.cells:
            assert cell_is_quoted(cell, paper.abstract), cell
            assert len(cell.removesuffix(" …").split()) <= seed_assistant.settings.table_cell_words
    assert any(c != NONE for row in table.rows for c in row.cells)


def test_table_is_markdown_with_a_cited_row_per_paper_and_citations(causal):
    lines = causal.answer.splitlines()
    assert "| Paper | Method | Data |" in lines and "|---|---|---|" in lines
    rows = [line for line in lines if line.startswith("| *")]
    assert len(rows) == len(causal.table.rows) == len(causal.citations)
    for row, tr, c in zip(rows, causal.table.rows, causal.citations):
        assert f"[{tr.number}] |" in row and tr.number == c.number and tr.paper_id == c.paper_id


def test_table_uses_the_summary_relevance_path(pa):
    summary = pa.ask("Summarize the papers on causal inference.")
    table = pa.ask(CAUSAL_ASK)
    assert {c.paper_id for c in table.citations} == {c.paper_id for c in summary.citations}


def test_table_of_the_papers_you_cited(pa):
    first = pa.ask("Which papers are about LLM agents?", mode="summary")
    history = [Turn(role="user", content="Which papers are about LLM agents?"), first.as_turn()]
    table = pa.ask("Make a table of the papers you cited: method, result", history)
    assert table.intent == "table"
    assert [r.paper_id for r in table.table.rows] == [c.paper_id for c in first.citations][:12]


def test_table_of_named_papers(pa):
    answer = pa.ask("Make a table of Top-W and Verbalized Sampling: method, result")
    assert [c.title.split(":")[0] for c in answer.citations] == ["Top-W", "Verbalized Sampling (VS)"]


def test_table_on_a_topic_not_in_the_collection_cites_nothing(pa):
    answer = pa.ask("Make a table of the papers on quantum error correction: method, data")
    assert answer.intent == "table" and answer.abstained
    assert answer.citations == [] and answer.table is None and "[1]" not in answer.answer


def test_a_table_of_a_category_named_as_such_has_a_row_per_paper_of_it(pa):
    # "in the Large Language Models category": the category is a filter, not a topic to search
    llm = "Deep Learning · Large Language Models"
    members = {pid for pid, p in pa.store.papers().items() if p.category == llm}
    answer = pa.ask("Make a table of the papers in the Large Language Models category: method, data, result")
    assert answer.intent == "table" and not answer.abstained and len(members) == 5
    assert {r.paper_id for r in answer.table.rows} == members
    assert answer.table.aspects == ["method", "data", "result"]
    assert answer.answer.startswith("5 of the 20 papers in this collection are in the Large Language Models category")


def test_a_table_of_a_topic_within_a_category_keeps_both(pa):
    answer = pa.ask("Make a table of the causality papers in the Large Language Models category: method")
    assert answer.abstained and answer.citations == []  # no causal paper is in that category
    assert "Outside your filters" in answer.answer


def test_a_theory_paper_has_no_data_cell(seed_assistant):
    """The KAN paper is theory only: no abstract sentence is about data, so its cell is "—"."""
    kan = next(p for p in seed_assistant.store.papers().values() if p.title.startswith("Kolmogorov"))
    s = seed_assistant.settings
    cells = table_cells(kan, ["dataset"], seed_assistant.engine.embed, s.table_min_score,
                        s.table_cell_words, s.table_cue_bonus)
    assert cells[0].text == NONE


def test_cells_use_each_sentence_once_and_quote_it(seed_assistant):
    top_w = next(p for p in seed_assistant.store.papers().values() if p.title.startswith("Top-W"))
    s = seed_assistant.settings
    cells = table_cells(top_w, ["problem", "method", "data", "result"], seed_assistant.engine.embed,
                        0.0, s.table_cell_words, s.table_cue_bonus)
    sentences = [c.sentence for c in cells]
    assert len(set(sentences)) == 4 and all(c.sentence in split_sentences(top_w.abstract) for c in cells)
    assert all(flat(c.text.removesuffix(" …")) in flat(c.sentence) for c in cells)


def test_phrases_are_verbatim_clauses_within_the_word_limit():
    sentence = ("Experiments on real and synthetic data suggest that this approach works, "
                "bridging kernel-based theory with modern representation learning in a principled "
                "and statistically grounded way that scales to large problems.")
    pieces = phrases(sentence, 12)
    assert pieces and all(p in sentence and len(p.split()) <= 12 for p in pieces)
    assert "Experiments on real and synthetic data suggest that this approach works" in pieces


def test_aspect_words_map_to_descriptions():
    assert aspect_query("main result") == aspect_query("results")
    assert aspect_query("Dataset") == aspect_query("data")
    assert "novelty" in aspect_query("novelty")


def test_table_csv_has_a_header_and_a_line_per_paper(causal):
    rows = list(csv.reader(io.StringIO(table_csv(causal.table))))
    assert rows[0] == ["number", "paper_id", "title", "method", "data"]
    assert [r[1] for r in rows[1:]] == [r.paper_id for r in causal.table.rows]
    assert rows[1][3:] == causal.table.rows[0].cells  # quoting keeps commas inside cells


def test_cli_ask_mode_table_json_has_the_rows(seed_assistant):
    store = str(seed_assistant.settings.store_dir)
    res = CliRunner().invoke(app, ["ask", "causal inference: method, data", "--mode", "table",
                                   "--json", "--backend", "none", "--store", store])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["intent"] == "table"
    rows = payload["table"]["rows"]
    assert rows and {"number", "paper_id", "title", "cells"} <= set(rows[0])
    assert [r["paper_id"] for r in rows] == [c["paper_id"] for c in payload["citations"]]


def test_page_writes_the_latest_table_as_csv(tmp_path, causal):
    from assistant.ui.handlers import Page, PageHandlers

    handlers = PageHandlers(None, Page(), tmp_path)
    path = handlers._write_table({"sid": "s1"}, causal)
    assert path and open(path, encoding="utf-8").read() == table_csv(causal.table)
    question = causal.model_copy(update={"table": None})
    assert handlers._write_table({"sid": "s1"}, question) is None
