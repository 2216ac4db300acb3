"""A second opinion on borderline questions: does the paper make the question likely?

The calibrated gate (relevance.py) measures retrieval evidence: shared words and MiniLM
similarity. A question worded unlike its paper ("why preference tuning makes models agree with
users too much" for an abstract on sycophancy after RLHF) scores low there although the paper
answers it. The local model knows those words mean the same, and query likelihood measures it
without generating anything (as in UPR, Sachan et al. 2022): how much more probable the question
becomes when the model has read the paper,

    pmi = (log P(question | paper) - log P(question)) / tokens of the question.

A paper near the question's topic raises it somewhat even when it does not answer it; the paper
that answers it raises it more than its neighbours do. So the best few candidates can be scored
(RelevancePolicy.second_opinion_papers) and each one's lead, its pmi minus the best other
candidate's, is a further measure. The shipped model scores one: with two, the lead model was
better on held-out questions but refused a paper whose neighbour raises the question as much
(README, 'A second opinion for borderline questions').

A forward pass per paper plus a short one for the question alone, ~4 s a paper on two cores, so
it is asked only when the gate refused and the best candidate is within reach
(RelevancePolicy.second_opinion_floor). A small logistic model over (the gate's logit, pmi,
lead), fitted on labelled pairs by benchmarks/calibrate_second_opinion.py and shipped as
assistant/data/second_opinion.json, turns them into a probability with its own threshold.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..config import DATA_DIR, RelevancePolicy
from ..llm.errors import BackendError
from ..prompts import render
from .relevance import Judged

MODEL_PATH = DATA_DIR / "second_opinion.json"
ABSTRACT_CHARS = 1200  # ~250 tokens: the abstract's gist at a bounded cost

# (messages, reply) -> log-probability of each token of the reply; LocalLlamaCPP.reply_logprobs
ReplyScorer = Callable[[list[dict], str], list[float]]


@dataclass
class SecondOpinionModel:
    """p = sigmoid(w_gate * logit(gate p) + w_pmi * pmi + w_lead * lead + intercept), accepted at
    `threshold`. lead: pmi minus the best other scored candidate's (0 when one is scored)."""

    w_gate: float
    w_pmi: float
    intercept: float
    threshold: float
    provenance: dict
    w_lead: float = 0.0

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "SecondOpinionModel":
        raw = json.loads(Path(path).read_text())
        return cls(raw["w_gate"], raw["w_pmi"], raw["intercept"], raw["threshold"],
                   raw.get("provenance", {}), raw.get("w_lead", 0.0))

    def to_json(self) -> dict:
        return {"w_gate": self.w_gate, "w_pmi": self.w_pmi, "w_lead": self.w_lead,
                "intercept": self.intercept, "threshold": self.threshold, "provenance": self.provenance}

    def proba(self, gate_p: float, pmi: float, lead: float = 0.0) -> float:
        z = self.w_gate * logit(gate_p) + self.w_pmi * pmi + self.w_lead * lead + self.intercept
        return 1.0 / (1.0 + math.exp(-z))


@lru_cache(maxsize=1)
def default_model() -> SecondOpinionModel:
    return SecondOpinionModel.load(MODEL_PATH)


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def leads(pmis: Sequence[float]) -> list[float]:
    """Each pmi minus the best of the others (0 when alone): does this paper raise the question
    more than the other candidates do?"""
    return [pmi - max(pmis[:i] + pmis[i + 1:]) if len(pmis) > 1 else 0.0
            for i, pmi in enumerate(pmis)]


def paper_messages(paper) -> list[dict]:
    return [{"role": "user", "content": render("paper_question", title=paper.title,
                                               abstract=paper.abstract[:ABSTRACT_CHARS])}]


def any_paper_messages() -> list[dict]:
    return [{"role": "user", "content": render("any_question")}]


class QuestionLikelihood:
    """pmi of a question given a paper, with the paper-free baseline computed once per question."""

    def __init__(self, scorer: ReplyScorer):
        self.scorer = scorer
        self._baseline: dict[str, float] = {}

    def pmi(self, question: str, paper) -> float:
        with_paper = self.scorer(paper_messages(paper), question)
        return (sum(with_paper) - self.baseline(question)) / len(with_paper)

    def baseline(self, question: str) -> float:
        value = self._baseline.get(question)
        if value is None:
            value = sum(self.scorer(any_paper_messages(), question))
            if len(self._baseline) > 256:  # a bound for a long-running server
                self._baseline.clear()
            self._baseline[question] = value
        return value


class SecondOpinion:
    """Reconsiders the candidates of a question the gate refused."""

    def __init__(self, likelihood: QuestionLikelihood, policy: RelevancePolicy,
                 model: Optional[SecondOpinionModel] = None):
        self.likelihood = likelihood
        self.policy = policy
        self.model = model or default_model()

    def reconsider(self, question: str, judged: Sequence[Judged]) -> list[Judged]:
        """The candidates that pass on both opinions, best first, each carrying the combined
        probability and its pmi and lead among its features. Nothing is scored unless the best
        candidate reaches the floor (judged is best first); then the `second_opinion_papers`
        best are, the others serving as contrast."""
        if not judged or judged[0].p < self.policy.second_opinion_floor:
            return []
        scored = list(judged[: self.policy.second_opinion_papers])
        try:
            pmis = [self.likelihood.pmi(question, j.paper) for j in scored]
        except BackendError:  # no second opinion after all: the gate's refusal stands
            return []
        passing = []
        for j, pmi, lead in zip(scored, pmis, leads(pmis)):
            p = self.model.proba(j.p, pmi, lead)
            if p >= self.model.threshold:
                passing.append(replace(j, p=p, features={**j.features, "pmi": pmi, "pmi_lead": lead}))
        return sorted(passing, key=lambda j: -j.p)
