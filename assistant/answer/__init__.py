"""The answer stage: what a message asks (query), which papers answer it (relevance), the
structure of the answer (plan, compose, themes), the model's prose and its check (ground)."""


def __getattr__(name: str):
    """The engine and the plan imported on first use: a module that needs one part of this
    stage (the citation markers of a saved transcript) does not load every stage below it."""
    if name in ("AnswerEngine", "Event"):
        from . import engine
        return getattr(engine, name)
    if name == "TurnPlan":
        from .plan import TurnPlan
        return TurnPlan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
