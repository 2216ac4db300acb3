"""The second opinion on borderline questions (answer/likelihood.py): the pmi measure, the
combined model, when it is asked and what it may change; the real local model in test_e2e.py."""
from __future__ import annotations

import math

import pytest

from assistant import PaperAssistant
from assistant.answer.likelihood import (QuestionLikelihood, SecondOpinion, SecondOpinionModel,
                                         any_paper_messages, default_model, leads, paper_messages)
from assistant.answer.relevance import Judged
from assistant.config import RelevancePolicy
from assistant.llm.errors import BackendError
from assistant.types import Hit, Paper

SYCOPHANCY_QUESTION = "Which paper explains why preference tuning makes models agree with users too much?"


def _paper(pid: str, abstract: str) -> Paper:
    return Paper(paper_id=pid, title=abstract.split(".")[0], authors=["A. Author"], abstract=abstract)


def _judged(pid: str, p: float, abstract: str = "Some abstract. More.") -> Judged:
    return Judged(Hit(paper=_paper(pid, abstract), score=p, snippet="", dense_score=p), p)


class FakeScorer:
    """Log-probabilities per token of the reply: -1 each without a paper, -1 + boost with one
    whose abstract contains the reply's first word."""

    def __init__(self, boost: float = 0.8):
        self.boost = boost
        self.calls: list[str] = []

    def __call__(self, messages: list[dict], reply: str) -> list[float]:
        content = messages[-1]["content"]
        self.calls.append("paper" if "Abstract:" in content else "baseline")
        tokens = reply.split()
        boost = self.boost if "Abstract:" in content and tokens[0].lower() in content.lower() else 0.0
        return [-1.0 + boost] * len(tokens)


def test_pmi_is_the_per_token_gain_the_paper_gives_the_question():
    scorer = FakeScorer(boost=0.5)
    likelihood = QuestionLikelihood(scorer)
    paper = _paper("p1", "Sycophancy grows after preference tuning.")
    assert likelihood.pmi("sycophancy why does it grow", paper) == pytest.approx(0.5)
    assert likelihood.pmi("unrelated words here", paper) == pytest.approx(0.0)
    # the paper-free baseline is computed once per question
    likelihood.pmi("sycophancy why does it grow", _paper("p2", "Other text."))
    assert scorer.calls.count("baseline") == 2


def test_prompts_carry_the_paper_and_nothing_else():
    paper = _paper("p1", "Short title. " + "A" * 5000)
    content = paper_messages(paper)[0]["content"]
    assert paper.title in content and len(content) < 1500  # the abstract is bounded
    assert "Abstract" not in any_paper_messages()[0]["content"]


def test_combined_model_rises_with_each_opinion():
    m = SecondOpinionModel(w_gate=1.0, w_pmi=2.0, intercept=-1.0, threshold=0.5, provenance={}, w_lead=0.5)
    assert m.proba(0.2, 1.0) > m.proba(0.2, 0.0)
    assert m.proba(0.3, 0.5) > m.proba(0.1, 0.5)
    assert m.proba(0.2, 0.5, lead=0.4) > m.proba(0.2, 0.5, lead=-0.4)
    assert m.proba(0.5, 0.5, lead=0.2) == pytest.approx(1 / (1 + math.exp(-(0.0 + 1.0 + 0.1 - 1.0))))


def test_lead_is_the_margin_over_the_best_other_candidate():
    assert leads([0.9, 0.5, 0.7]) == pytest.approx([0.2, -0.4, -0.2])
    assert leads([0.6]) == [0.0]  # nothing to contrast with
    assert leads([]) == []


def test_shipped_model_says_where_it_came_from():
    m = default_model()
    assert m.w_pmi > 0 and 0 < m.threshold < 1
    assert m.provenance["fitted_by"] == "benchmarks/calibrate_second_opinion.py"
    assert "held_out" in m.provenance
    # its lead was measured among as many candidates as the engine scores by default
    assert m.provenance["papers_per_question"] == RelevancePolicy().second_opinion_papers


def _opinion(scorer, w_lead: float = 0.0, **policy) -> SecondOpinion:
    model = SecondOpinionModel(w_gate=1.0, w_pmi=4.0, intercept=0.0, threshold=0.5, provenance={}, w_lead=w_lead)
    return SecondOpinion(QuestionLikelihood(scorer), RelevancePolicy(**policy), model)


def test_nothing_is_scored_unless_the_best_candidate_is_within_reach():
    scorer = FakeScorer()
    opinion = _opinion(scorer, second_opinion_floor=0.05, second_opinion_papers=2)
    judged = [_judged("a", 0.04, "sycophancy after tuning."), _judged("b", 0.03, "sycophancy too.")]
    assert opinion.reconsider("sycophancy in models", judged) == [] and scorer.calls == []
    assert opinion.reconsider("sycophancy in models", []) == []


def test_the_best_candidates_are_scored_and_contrasted():
    scorer = FakeScorer()
    opinion = _opinion(scorer, w_lead=2.0, second_opinion_floor=0.05, second_opinion_papers=2)
    judged = [_judged("a", 0.2, "sycophancy after tuning."), _judged("b", 0.04, "calibration drift."),
              _judged("c", 0.03, "sycophancy again.")]
    passing = opinion.reconsider("sycophancy in models", judged)
    assert [j.paper.paper_id for j in passing] == ["a"]  # b is below the floor but scored as contrast
    assert passing[0].p > 0.5 and passing[0].features["pmi"] == pytest.approx(0.8)
    assert passing[0].features["pmi_lead"] == pytest.approx(0.8)
    assert scorer.calls.count("paper") == 2  # c, beyond second_opinion_papers, never


def test_a_candidate_its_neighbour_explains_as_well_loses_its_lead():
    opinion = _opinion(FakeScorer(), w_lead=3.0, second_opinion_papers=2)
    question = "sycophancy in models"
    best = _judged("a", 0.1, "sycophancy after tuning.")
    standing_out = opinion.reconsider(question, [best, _judged("b", 0.05, "calibration drift.")])
    matched = opinion.reconsider(question, [best, _judged("b", 0.05, "sycophancy too.")])
    assert standing_out[0].paper.paper_id == "a" and standing_out[0].features["pmi_lead"] == pytest.approx(0.8)
    assert all(j.features["pmi_lead"] == 0.0 for j in matched)
    p_matched = max(j.p for j in matched if j.paper.paper_id == "a")
    assert standing_out[0].p > p_matched


def test_a_paper_that_does_not_raise_the_question_stays_refused():
    opinion = _opinion(FakeScorer())
    assert opinion.reconsider("quantum error correction", [_judged("a", 0.2, "sycophancy.")]) == []


def test_a_failing_model_leaves_the_refusal_standing():
    def broken(messages, reply):
        raise BackendError("model busy")

    assert _opinion(broken).reconsider("anything", [_judged("a", 0.3)]) == []


def test_planner_answers_a_refused_question_the_second_opinion_accepts(seed_assistant: PaperAssistant):
    engine = seed_assistant.engine
    judged = engine.judge.judge(SYCOPHANCY_QUESTION, seed_assistant.search(SYCOPHANCY_QUESTION, k=20))
    assert not engine.judge.choose(judged, singular=True, plural=False)  # the gate alone refuses
    assert judged[0].paper.authors[0] == "Itai Shapira"

    class Accepting:
        def reconsider(self, question, judged):
            return [judged[0]]

    planner = engine.planner
    try:
        planner.second_opinion = lambda: Accepting()
        plan = planner.plan(SYCOPHANCY_QUESTION, [], None, None, None)
    finally:
        planner.second_opinion = engine._second_opinion
    assert not plan.abstain and plan.sources[0].paper.authors[0] == "Itai Shapira"
    # without a model (backend none, second_opinion auto) the refusal stands
    assert engine._second_opinion() is None
    assert planner.plan(SYCOPHANCY_QUESTION, [], None, None, None).abstain
