"""Read, then judge: the model reads each candidate paper against the question.

The calibrated gate (relevance.py) measures retrieval evidence only: shared words and MiniLM
similarity. A question worded unlike its paper ("models that agree with users too much after
RLHF" for an abstract on sycophancy after preference-based post-training) scores low there
although the paper answers it. So the gate is the floor (it refuses only what is plainly
unrelated), and for the questions it is unsure of, the model reads the best few candidates one
at a time and the probability it gives "yes" is the reading. The model sees the paper's title
and the abstract's sentences closest to the question (the excerpt), then the question: a short
prompt (~2 s on two cores) with the question last, where a small model weighs it most.

One paper at a time, not a numbered list: asked which of several abstracts answer, the small
model picks the first one whatever the question (position bias). The reading is a signal, not a
verdict to take raw (it says "yes" fairly often to a paper near the topic), so a small logistic
model over (the gate's logit, the reading's logit, and the reading's lead over the best other
candidate) turns it into a probability with its own threshold. It is fitted on labelled
questions by benchmarks/calibrate_reading.py and ships as assistant/data/reading_model.json.

The gate enters that model only down to a floor (`gate_floor`): below it, how unlike the
paper's words a question is says nothing more. Without the floor the fit learnt "the gate is
almost sure it is unrelated" from far paraphrases (gate p 0.004 for "models that agree with
users too much after RLHF") and let that outweigh a reading of 0.87 for the right paper; the
gate is the floor of the judgement, the reading its verdict.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..config import DATA_DIR, RelevancePolicy
from ..llm.choice import Choice
from ..llm.errors import BackendError
from ..prompts import render
from .evidence import SentenceEmbeddings, evidence_for
from .relevance import Judged

MODEL_PATH = DATA_DIR / "reading_model.json"
ANSWERS = ("yes", "no")

# (messages, options) -> the probability of each option as the reply's first word
ChoiceReader = Callable[[list[dict], Sequence[str]], list[float]]
# (messages, options, span) -> the same, with the log-probability of the span (llm/choice.py)
SpanChoiceReader = Callable[[list[dict], Sequence[str], str], Choice]


@dataclass
class ReadingModel:
    """p = sigmoid(w_gate * logit(max(gate p, gate_floor)) + w_yes * logit(yes) + w_lead * lead
    + w_gain * gain + w_gain_lead * gain lead + intercept), accepted at `threshold`. lead: this
    paper's yes minus the best other read candidate's; gain: the question's likelihood gain
    (Reader.reading), its lead likewise. gate_floor: see the module (0: the gate's p as it is)."""

    w_gate: float
    w_yes: float
    w_lead: float
    intercept: float
    threshold: float
    provenance: dict
    gate_floor: float = 0.0
    w_gain: float = 0.0
    w_gain_lead: float = 0.0
    # the weights for readings with likelihood gains (a backend that reports the question's
    # log-probability); this model then judges readings without them
    likelihood: Optional["ReadingModel"] = None

    @classmethod
    def from_json(cls, raw: dict) -> "ReadingModel":
        return cls(raw["w_gate"], raw["w_yes"], raw["w_lead"], raw["intercept"], raw["threshold"],
                   raw.get("provenance", {}), raw.get("gate_floor", 0.0), raw.get("w_gain", 0.0),
                   raw.get("w_gain_lead", 0.0),
                   cls.from_json(raw["likelihood"]) if raw.get("likelihood") else None)

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "ReadingModel":
        return cls.from_json(json.loads(Path(path).read_text()))

    def to_json(self) -> dict:
        out = {"w_gate": self.w_gate, "w_yes": self.w_yes, "w_lead": self.w_lead,
               "intercept": self.intercept, "threshold": self.threshold,
               "gate_floor": self.gate_floor, "provenance": self.provenance}
        if self.w_gain or self.w_gain_lead:
            out.update(w_gain=self.w_gain, w_gain_lead=self.w_gain_lead)
        if self.likelihood:
            out["likelihood"] = self.likelihood.to_json()
        return out

    def gate_logit(self, gate_p: float) -> float:
        return logit(max(gate_p, self.gate_floor))

    def proba(self, gate_p: float, yes: float, lead: float, gain: Optional[float] = None,
              gain_lead: Optional[float] = None) -> float:
        z = (self.w_gate * self.gate_logit(gate_p) + self.w_yes * logit(yes) + self.w_lead * lead
             + self.w_gain * (gain or 0.0) + self.w_gain_lead * (gain_lead or 0.0) + self.intercept)
        return 1.0 / (1.0 + math.exp(-z))


@lru_cache(maxsize=1)
def default_model() -> ReadingModel:
    return ReadingModel.load(MODEL_PATH)


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def leads(values: Sequence[float]) -> list[float]:
    """Each value minus the best of the others (0 when alone): does this paper stand out?"""
    return [v - max(values[:i] + values[i + 1:]) if len(values) > 1 else 0.0
            for i, v in enumerate(values)]


def verdict_messages(question: str, paper, excerpt: Sequence[str]) -> list[dict]:
    return [{"role": "user", "content": render("verdict", question=question, title=paper.title,
                                               excerpt=" ".join(excerpt))}]


@dataclass
class Read:
    """What reading decided for one question: the candidates read, each with its combined
    probability and its reading among its features (best first), and those accepted (their
    combined probability reached `threshold`)."""

    read: list[Judged]
    accepted: list[Judged]
    threshold: float


MAY_ANSWER = 0.5  # a paper read "yes" at least this much may answer (a refusal says so of it)


class Reader:
    """Reads a question's best candidates with the model and judges them (see the module)."""

    def __init__(self, choose: ChoiceReader, embed: SentenceEmbeddings, policy: RelevancePolicy,
                 model: Optional[ReadingModel] = None, read_choice: Optional[SpanChoiceReader] = None):
        self.choose = choose
        self.read_choice = read_choice
        self.embed = embed
        self.policy = policy
        self.model = model or default_model()
        self._unconditioned: dict[str, Choice] = {}

    def _verdict(self, question: str, paper) -> list[dict]:
        """The verdict prompt for `paper`, with the abstract's sentences closest to the question."""
        excerpt = evidence_for(paper, [question], self.embed, self.policy.reading_sentences)
        return verdict_messages(question, paper, excerpt)

    def yes(self, question: str, paper) -> float:
        """The model's probability that `paper` answers `question`."""
        return self.choose(self._verdict(question, paper), ANSWERS)[0]

    def reading(self, question: str, paper) -> tuple[float, Optional[float]]:
        """The model's probability that `paper` answers `question`, and how much likelier the
        paper makes the question's words: the log-probability per token of the question after
        the paper minus after no paper (None when the backend cannot tell)."""
        if self.read_choice is None:
            return self.yes(question, paper), None
        got = self.read_choice(self._verdict(question, paper), ANSWERS, question)
        base = self._question_alone(question)
        if (got.span_logprob is None or base.span_logprob is None or not got.span_tokens
                or got.span_tokens != base.span_tokens):
            return got.probabilities[0], None
        return got.probabilities[0], (got.span_logprob - base.span_logprob) / got.span_tokens

    def _question_alone(self, question: str) -> Choice:
        """The question read after the verdict prompt with no paper in it."""
        if question not in self._unconditioned:
            assert self.read_choice is not None
            got = self.read_choice([{"role": "user", "content": render("verdict", question=question, title="",
                                                                       excerpt="")}], ANSWERS, question)
            if len(self._unconditioned) > 64:
                self._unconditioned.clear()
            self._unconditioned[question] = got
        return self._unconditioned[question]

    def may_answer(self, question: str, paper, at: float = MAY_ANSWER) -> bool:
        """Whether the model reads `paper` as answering `question` with a yes-probability of at
        least `at` (False when it fails)."""
        try:
            return self.yes(question, paper) >= at
        except BackendError:
            return False

    def worth_reading(self, judged: Sequence[Judged]) -> bool:
        """Only what the gate finds near enough (judged is best first): the floor."""
        return bool(judged) and judged[0].p >= self.policy.reading_floor

    def _yes_each(self, text: str, judged: Sequence[Judged],
                  candidates: list[Judged]) -> Optional[list[float]]:
        """Each candidate's yes against `text`; None when the floor refuses or the model fails."""
        if not self.worth_reading(judged):
            return None
        try:
            return [self.yes(text, j.paper) for j in candidates]
        except BackendError:
            return None

    def _readings(self, question: str, candidates: Sequence[Judged]) -> Optional[list[tuple]]:
        """Each candidate's (yes, likelihood gain) against the question; None when the model fails."""
        try:
            return [self.reading(question, j.paper) for j in candidates]
        except BackendError:
            return None

    def read(self, question: str, judged: Sequence[Judged]) -> Optional[Read]:
        """The `reading_papers` best candidates read and judged; None when the floor refuses
        or the model fails (nothing was read, so nothing may be said of what the papers say)."""
        candidates = list(judged[: self.policy.reading_papers])
        readings = self._readings(question, candidates) if self.worth_reading(judged) else None
        if readings is None:
            return None
        return self._judged(candidates, readings)

    def read_more(self, question: str, reading: Read, more: Sequence[Judged]) -> Optional[Read]:
        """`reading` with `more` candidates read against the same question. Each paper's leads are
        taken again over all the papers read, so adding papers never makes one read before more
        likely to be accepted. None when the model fails."""
        readings = self._readings(question, more)
        if readings is None:
            return None
        before = [replace(j, p=j.features["gate_p"]) for j in reading.read]
        return self._judged(before + list(more),
                            [(j.features["yes"], j.features.get("gain")) for j in reading.read] + readings)

    def _judged(self, candidates: list[Judged], readings: list[tuple]) -> Read:
        """The candidates (each with the gate's p) judged by the reading model on their
        readings: with the likelihood gains when every candidate has one and the model has
        weights for them (ReadingModel.likelihood)."""
        yes = [y for y, _ in readings]
        gains = [g for _, g in readings]
        has_gains = None not in gains
        model = self.model.likelihood if self.model.likelihood and has_gains else self.model
        features = [{**j.features, "gate_p": j.p, "yes": y, "yes_lead": lead}
                    for j, y, lead in zip(candidates, yes, leads(yes))]
        if has_gains:
            for f, gain, lead in zip(features, gains, leads(gains)):
                f.update(gain=gain, gain_lead=lead)
        read = [replace(j, p=model.proba(j.p, f["yes"], f["yes_lead"], f.get("gain"), f.get("gain_lead")),
                        features=f) for j, f in zip(candidates, features)]
        read.sort(key=lambda j: -j.p)
        return Read(read, [j for j in read if j.p >= model.threshold], model.threshold)

    def read_topic(self, topic: str, judged: Sequence[Judged], papers: int, threshold: float,
                   gate_weight: float, member: Optional[float] = None) -> Optional[Read]:
        """A summary's `papers` best candidates read against its topic, each judged by
        topic_proba(its gate p, its own yes): none is a member unless one reaches `threshold`
        (is the topic in the collection at all?); then each at `member` or more is (which papers
        belong to it?; `threshold` when None). No lead: a topic has many papers, and one standing
        out from the rest says nothing of whether the others belong. None as for read()."""
        candidates = list(judged[:papers])
        yes = self._yes_each(topic, judged, candidates)
        if yes is None:
            return None
        return topic_read(candidates, yes, threshold, gate_weight, member)


def topic_read(candidates: Sequence[Judged], yes: Sequence[float], threshold: float,
               gate_weight: float, member: Optional[float] = None) -> Read:
    """`Reader.read_topic`'s judgement of read candidates given their readings (`yes`, in the
    candidates' order); apart from the model so that benchmarks/calibrate_summary_reading.py
    sweeps the same rule over readings it keeps."""
    read = [replace(j, p=topic_proba(j.p, y, gate_weight), features={**j.features, "gate_p": j.p, "yes": y})
            for j, y in zip(candidates, yes)]
    read.sort(key=lambda j: -j.p)
    if not read or read[0].p < threshold:
        return Read(read, [], threshold)
    bar = threshold if member is None else min(member, threshold)
    return Read(read, [j for j in read if j.p >= bar], threshold)


def topic_proba(gate_p: float, yes: float, gate_weight: float) -> float:
    """A read paper's membership of a summary topic: the reading, leaned on by the gate's p
    (floored at 0.001, below which unlike wording says nothing more)."""
    z = logit(yes) + gate_weight * logit(max(gate_p, 1e-3))
    return 1.0 / (1.0 + math.exp(-z))
