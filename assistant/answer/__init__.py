"""The answer stage: what a message asks (query), which papers answer it (relevance), the
structure of the answer (plan, compose, themes), the model's prose and its check (ground)."""
from .engine import AnswerEngine, Event  # noqa: F401
from .plan import TurnPlan  # noqa: F401
