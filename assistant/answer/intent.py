"""What a message asks for, read by meaning: question, summary, compare, similar or table.

A multinomial logistic regression over the message's all-MiniLM-L6-v2 vector and the TF-IDF of
its words and word pairs, fitted on labelled messages by benchmarks/fit_intent.py and shipped as
assistant/data/intent_model.json. It reads what the phrase rules of query.py cannot list ("what
do we know about X here?" asks for a summary; "which paper proves a similarity bound?" is a
question). The words are there because a sentence vector is mostly the message's topic: "work
akin to the Mazur growth number conjecture paper" sits near that paper's questions, and the
fitted weight of "akin" is what says it asks for neighbours. The packaged MiniLM is used
whatever embedding backend the store has: the model was fitted on its vectors.

How its reading and the phrase rules combine is Settings.intent: "rules" (query.detect_intent
alone), "model" (this model alone) or "rules_then_model" (the default: the rules where they name
an intent unless this model is near certain of another, `intent_overrule`; this model where
they do not and its probability reaches `intent_confidence`).
Measured on blind messages in docs/benchmarks.md.

The same kind of model reads what a follow-up asks about the paper in focus (read_asks:
authors_count for "solo work or joint?", authors, date or content), where the phrase rules of
query.py read content; fitted by benchmarks/fit_asks.py, shipped as assistant/data/asks_model.json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np

from ..config import DATA_DIR
from ..embed import OnnxMiniLMEmbedding
from ..text import tokens
from ..types import Intent

MODEL_PATH = DATA_DIR / "intent_model.json"
# What a follow-up asks about its paper (authors_count, authors, date, content): the same kind of
# model over the same vectors, fitted by benchmarks/fit_asks.py.
ASKS_MODEL_PATH = DATA_DIR / "asks_model.json"
# Whether a message that points at no paper asks about the paper in focus ("how big is the training
# data?") or something new: the same kind of model, fitted by benchmarks/fit_focus.py.
FOCUS_MODEL_PATH = DATA_DIR / "focus_model.json"


@dataclass
class WordFeatures:
    """The TF-IDF of a message's words and word pairs over a fitted vocabulary, as
    scikit-learn's TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, tokenizer=text.tokens)
    computes it (1 + log count, times the word's idf, the row scaled to unit length), times
    `weight` (how much the words count beside the 384 vector dimensions)."""

    vocabulary: dict[str, int]
    idf: np.ndarray
    weight: float

    @classmethod
    def from_json(cls, raw: dict) -> "WordFeatures":
        return cls(raw["vocabulary"], np.array(raw["idf"]), raw["weight"])

    def to_json(self) -> dict:
        return {"vocabulary": self.vocabulary, "idf": self.idf.tolist(), "weight": self.weight}

    def of(self, messages: list[str]) -> np.ndarray:
        out = np.zeros((len(messages), len(self.idf)))
        for row, message in enumerate(messages):
            words = tokens(message)
            counts: dict[int, int] = {}
            for gram in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
                if gram in self.vocabulary:
                    counts[self.vocabulary[gram]] = counts.get(self.vocabulary[gram], 0) + 1
            for column, n in counts.items():
                out[row, column] = (1.0 + np.log(n)) * self.idf[column]
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return self.weight * out


@dataclass
class IntentModel:
    """softmax(coef @ features + intercept) over `labels`; the features are the message's
    MiniLM vector, followed by its `words` features when the model has them."""

    labels: list[str]
    coef: np.ndarray  # (labels, 384 [+ vocabulary])
    intercept: np.ndarray  # (labels,)
    provenance: dict
    words: Optional[WordFeatures] = None

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "IntentModel":
        raw = json.loads(Path(path).read_text())
        words = WordFeatures.from_json(raw["words"]) if raw.get("words") else None
        return cls(raw["labels"], np.array(raw["coef"]), np.array(raw["intercept"]),
                   raw.get("provenance", {}), words)

    def to_json(self) -> dict:
        out = {"labels": self.labels, "coef": self.coef.tolist(), "intercept": self.intercept.tolist(),
               "provenance": self.provenance}
        if self.words is not None:
            out["words"] = self.words.to_json()
        return out

    def features(self, vectors: np.ndarray, messages: Optional[list[str]] = None) -> np.ndarray:
        """The rows the model reads: each message's vector, then its word features (the
        messages are needed exactly when the model has word features)."""
        if self.words is None:
            return vectors
        if messages is None or len(messages) != len(vectors):
            raise ValueError("this intent model reads the messages' words too: pass the messages")
        return np.hstack([vectors, self.words.of(messages)])

    def proba(self, vectors: np.ndarray, messages: Optional[list[str]] = None) -> np.ndarray:
        z = self.features(vectors, messages) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


@lru_cache(maxsize=1)
def default_model() -> IntentModel:
    return IntentModel.load(MODEL_PATH)


@lru_cache(maxsize=1)
def asks_model() -> IntentModel:
    return IntentModel.load(ASKS_MODEL_PATH)


@lru_cache(maxsize=1)
def focus_model() -> IntentModel:
    return IntentModel.load(FOCUS_MODEL_PATH)


@lru_cache(maxsize=1)
def _embedder() -> OnnxMiniLMEmbedding:
    return OnnxMiniLMEmbedding()


def message_vectors(messages: list[str], embedder: object = None) -> np.ndarray:
    """The messages' packaged-MiniLM vectors: through `embedder` when it is that model (the
    store's, so one ONNX session serves both), else through one of this module's own."""
    minilm = embedder if isinstance(embedder, OnnxMiniLMEmbedding) else _embedder()
    return minilm.embed_texts(messages)


def read_intent(message: str, model: Optional[IntentModel] = None,
                embedder: object = None) -> tuple[Intent, float]:
    """The intent the model reads in `message`, with its probability."""
    return best(model or default_model(), message_vectors([message], embedder)[0], message)  # type: ignore[return-value]


def read_asks(message: str, embedder: object = None) -> tuple[str, float]:
    """What the model reads a follow-up as asking about its paper, with its probability."""
    return best(asks_model(), message_vectors([message], embedder)[0], message)


def best(model: IntentModel, vector: np.ndarray, message: str) -> tuple[str, float]:
    """The label `model` reads in one message (its vector, and the message itself for a model
    with word features), with its probability (the planner embeds a message once for every model)."""
    p = model.proba(vector[None, :], [message])[0]
    top = int(np.argmax(p))
    return model.labels[top], float(p[top])
