"""What a message asks for, read by meaning: question, summary, compare, similar or table.

A multinomial logistic regression over the message's all-MiniLM-L6-v2 vector, fitted on
labelled messages by benchmarks/fit_intent.py and shipped as assistant/data/intent_model.json.
It reads what the phrase rules of query.py cannot list ("what do we know about X here?" asks
for a summary; "which paper proves a similarity bound?" is a question). The packaged MiniLM is
used whatever embedding backend the store has: the model was fitted on its vectors.

How its reading and the phrase rules combine is Settings.intent: "rules" (query.detect_intent
alone), "model" (this model alone) or "rules_then_model" (the default: the rules where they name
an intent, this model where they do not and its probability reaches `intent_confidence`).
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
from ..types import Intent

MODEL_PATH = DATA_DIR / "intent_model.json"
# What a follow-up asks about its paper (authors_count, authors, date, content): the same kind of
# model over the same vectors, fitted by benchmarks/fit_asks.py.
ASKS_MODEL_PATH = DATA_DIR / "asks_model.json"
# Whether a message that points at no paper asks about the paper in focus ("how big is the training
# data?") or something new: the same kind of model, fitted by benchmarks/fit_focus.py.
FOCUS_MODEL_PATH = DATA_DIR / "focus_model.json"


@dataclass
class IntentModel:
    """softmax(coef @ vector + intercept) over `labels`."""

    labels: list[str]
    coef: np.ndarray  # (labels, 384)
    intercept: np.ndarray  # (labels,)
    provenance: dict

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "IntentModel":
        raw = json.loads(Path(path).read_text())
        return cls(raw["labels"], np.array(raw["coef"]), np.array(raw["intercept"]), raw.get("provenance", {}))

    def to_json(self) -> dict:
        return {"labels": self.labels, "coef": self.coef.tolist(), "intercept": self.intercept.tolist(),
                "provenance": self.provenance}

    def proba(self, vectors: np.ndarray) -> np.ndarray:
        z = vectors @ self.coef.T + self.intercept
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
    return best(model or default_model(), message_vectors([message], embedder)[0])  # type: ignore[return-value]


def read_asks(message: str, embedder: object = None) -> tuple[str, float]:
    """What the model reads a follow-up as asking about its paper, with its probability."""
    return best(asks_model(), message_vectors([message], embedder)[0])


def best(model: IntentModel, vector: np.ndarray) -> tuple[str, float]:
    """The label `model` reads in one message's vector, with its probability (the planner embeds
    a message once for both models)."""
    p = model.proba(vector[None, :])[0]
    top = int(np.argmax(p))
    return model.labels[top], float(p[top])
