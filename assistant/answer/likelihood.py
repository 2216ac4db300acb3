"""A second opinion on borderline questions: does the paper make the question likely?

The calibrated gate (relevance.py) measures retrieval evidence: shared words and MiniLM
similarity. A question worded unlike its paper ("why preference tuning makes models agree with
users too much" for an abstract on sycophancy after RLHF) scores low there although the paper
answers it. The local model knows those words mean the same, and query likelihood measures it
without generating anything (as in UPR, Sachan et al. 2022): how much more probable the question
becomes when the model has read the paper,

    pmi = (log P(question | paper) - log P(question)) / tokens of the question.

Two forward passes (paper + question, question alone), ~4-5 s on two cores, so it is asked only when the gate
refused and the best candidate is within reach (RelevancePolicy.second_opinion_floor). A small
logistic model over (the gate's logit, pmi), fitted on labelled pairs by
benchmarks/calibrate_second_opinion.py and shipped as assistant/data/second_opinion.json, turns
the two into a probability with its own threshold.
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
    """p = sigmoid(w_gate * logit(gate p) + w_pmi * pmi + intercept), accepted at `threshold`."""

    w_gate: float
    w_pmi: float
    intercept: float
    threshold: float
    provenance: dict

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "SecondOpinionModel":
        raw = json.loads(Path(path).read_text())
        return cls(raw["w_gate"], raw["w_pmi"], raw["intercept"], raw["threshold"], raw.get("provenance", {}))

    def to_json(self) -> dict:
        return {"w_gate": self.w_gate, "w_pmi": self.w_pmi, "intercept": self.intercept,
                "threshold": self.threshold, "provenance": self.provenance}

    def proba(self, gate_p: float, pmi: float) -> float:
        z = self.w_gate * logit(gate_p) + self.w_pmi * pmi + self.intercept
        return 1.0 / (1.0 + math.exp(-z))


@lru_cache(maxsize=1)
def default_model() -> SecondOpinionModel:
    return SecondOpinionModel.load(MODEL_PATH)


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


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
        """The best few candidates that pass on both opinions, best first, each carrying the
        combined probability and its pmi among its features. Candidates below the floor are
        never scored (judged is best first)."""
        passing = []
        for j in judged[: self.policy.second_opinion_papers]:
            if j.p < self.policy.second_opinion_floor:
                break
            try:
                pmi = self.likelihood.pmi(question, j.paper)
            except BackendError:  # no second opinion after all: the gate's refusal stands
                break
            p = self.model.proba(j.p, pmi)
            if p >= self.model.threshold:
                passing.append(replace(j, p=p, features={**j.features, "pmi": pmi}))
        return sorted(passing, key=lambda j: -j.p)
