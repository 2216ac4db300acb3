"""`paper-assistant eval`: queries built from the corpus, metrics, per-mode search, --tune."""
from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from assistant.cli import app
from assistant.evaluate import EvalQuery, best_alpha, build_queries, paper_query, score
from assistant.library import PaperAssistant
from assistant.retrieve import Retriever
from assistant.text import split_sentences
from assistant.tuning import load_tuned_alpha, save_tuned_alpha, tuned_path
from assistant.types import Paper
from conftest import make_settings, write_jsonl

LONG = ("First sentence names the topic of this paper. A second sentence has enough words to "
        "identify the paper well. Short one.")


def paper(pid: str, title: str = "", derived: bool = True, abstract: str = LONG) -> Paper:
    return Paper(paper_id=pid, title=title or "label", title_is_derived=derived, abstract=abstract)


# -- queries

def test_real_title_is_the_query():
    q = paper_query(paper("a", "Graph networks for molecules", derived=False), random.Random(0), 8)
    assert q == EvalQuery("a", "Graph networks for molecules", "title")


def test_derived_title_uses_a_long_later_sentence_never_the_first():
    q = paper_query(paper("a"), random.Random(0), 8)
    assert q.kind == "sentence" and q.text.startswith("A second sentence")


def test_paper_without_a_usable_sentence_is_skipped():
    queries, skipped = build_queries({"a": paper("a", abstract="Only one sentence here, long enough to count.")},
                                     5, 0, 8)
    assert (queries, skipped) == ([], 1)


def test_seed_queries_are_seeded_and_held_out_from_the_title(seed_assistant):
    papers = seed_assistant.store.papers()
    first, skipped = build_queries(papers, 10, 0, 8)
    again, _ = build_queries(papers, 10, 0, 8)
    other, _ = build_queries(papers, 10, 1, 8)
    assert first == again and first != other and len(first) + skipped == 10
    for q in first:
        sentences = split_sentences(papers[q.paper_id].abstract)
        assert q.kind == "sentence" and q.text in sentences[1:]


# -- metrics

def test_recall_and_mrr_from_ranks():
    queries = [EvalQuery(pid, pid, "title") for pid in ("a", "b", "c", "d")]
    ranking = {"a": ["a"], "b": ["x", "b"], "c": ["x"] * 5 + ["c"], "d": ["x"]}  # ranks 1, 2, 6, none
    s = score(queries, lambda text, depth: ranking[text][:depth], [1, 5, 10])
    assert s.recall == {1: 0.25, 5: 0.5, 10: 0.75}
    assert s.mrr == pytest.approx((1 + 1 / 2 + 1 / 6) / 4)


def test_best_alpha_prefers_mrr_then_stays_near_the_current_weight():
    s = lambda mrr: score([EvalQuery("a", "a", "t")], lambda t, d: ["a"] if mrr else [], [1])  # noqa: E731
    assert best_alpha({0.3: s(0), 0.8: s(1)}, 0.6) == 0.8
    assert best_alpha({0.2: s(1), 0.5: s(1), 0.9: s(1)}, 0.6) == 0.5


# -- per-mode search and the fusion weight

def test_alpha_override_reproduces_the_single_modes(seed_assistant):
    # α weighs the chunk sides; the paper side (a third, blended after) is off here
    from assistant.retrieve import Retriever

    settings = seed_assistant.settings.model_copy(update={"paper_weight": 0.0})
    retriever = Retriever(seed_assistant.store, settings)
    query = "causal effect estimation with hidden confounders"
    ids = lambda hits: [h.paper.paper_id for h in hits]  # noqa: E731
    assert ids(retriever.search(query, k=5, alpha=1.0)) == ids(retriever.search(query, k=5, mode="dense"))
    assert ids(retriever.search(query, k=5, alpha=0.0)) == ids(retriever.search(query, k=5, mode="bm25"))


def test_eval_on_the_seed_corpus(seed_assistant):
    report = seed_assistant.evaluate(n=6, seed=0)
    assert (report.queries, report.titles, report.skipped) == (6, 0, 0)
    assert set(report.modes) == {"bm25", "dense", "hybrid"}
    for s in report.modes.values():
        assert set(s.recall) == {1, 5, 10} and s.recall[1] <= s.recall[5] <= s.recall[10]
        assert 0 <= s.mrr <= 1
    assert report.modes["hybrid"].recall[10] >= 0.8 and report.modes["dense"].recall[10] >= 0.8
    assert report.tuning == {} and report.saved_to is None
    assert not tuned_path(seed_assistant.settings.store_dir).exists()  # eval alone writes nothing


def test_cli_eval_json_and_table(seed_assistant):
    store = str(seed_assistant.settings.store_dir)
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "--n", "4", "--json", "--store", store])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["queries"] == 4 and set(payload["modes"]) == {"bm25", "dense", "hybrid"}
    assert set(payload["modes"]["dense"]["recall"]) == {"1", "5", "10"}
    table = runner.invoke(app, ["eval", "--n", "4", "--store", store])
    assert table.exit_code == 0 and "R@10" in table.stdout and "hybrid" in table.stdout


# -- --tune on a private store (the seed store is shared and read-only)

TINY = [
    {"id": "fl", "title": "Backdoors in federated learning",
     "abstract": "Federated learning is vulnerable to backdoor attacks by malicious clients."},
    {"id": "mol", "title": "Graph networks for molecules",
     "abstract": "Graph neural networks predict molecular properties for chemistry."},
    {"id": "robot", "title": "Tactile robot grasping",
     "abstract": "Robots learn to grasp objects from tactile sensing."},
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_eval")
    pa = PaperAssistant(make_settings(folder / "store", tune_alphas=[0.3, 0.7]))
    pa.ingest([write_jsonl(folder / "tiny.jsonl", TINY)])
    return pa


def test_tune_stores_the_best_weight_and_search_uses_it(tiny):
    report = tiny.evaluate(n=3, tune=True)
    assert report.titles == 3 and set(report.tuning) == {0.3, 0.7}
    assert report.best_alpha in (0.3, 0.7)
    stored = json.loads(tuned_path(tiny.settings.store_dir).read_text())
    assert stored["hybrid_alpha"] == report.best_alpha and stored["queries"] == 3
    assert tiny.retriever.hybrid_alpha() == report.best_alpha


def test_stored_weight_is_read_when_present_and_valid(tmp_path):
    settings = make_settings(tmp_path)
    retriever = Retriever(store=None, settings=settings)  # hybrid_alpha never touches the store
    assert retriever.hybrid_alpha() == settings.hybrid_alpha
    save_tuned_alpha(tmp_path, 0.85, {})
    assert retriever.hybrid_alpha() == 0.85
    assert Retriever(None, make_settings(tmp_path, tuned_fusion=False)).hybrid_alpha() == settings.hybrid_alpha
    tuned_path(tmp_path).write_text("{not json")
    assert load_tuned_alpha(tmp_path) is None and retriever.hybrid_alpha() == settings.hybrid_alpha


def test_cli_tune_prints_the_choice(tiny):
    res = CliRunner().invoke(app, ["eval", "--n", "3", "--tune", "--store", str(tiny.settings.store_dir)])
    assert res.exit_code == 0, res.output
    assert "best α" in res.stdout and "fusion.json" in res.stdout
