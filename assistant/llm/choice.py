"""What a backend reads from one prompt when the assistant asks it to choose (answer/reading.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Choice:
    """The probability of each option as the reply's first word, and, when asked for and the
    backend can tell, the log-probability the model gave the tokens of a span of the prompt
    (the reader's question) given everything before it, with the number of those tokens."""

    probabilities: list[float]
    span_logprob: Optional[float] = None
    span_tokens: int = 0
