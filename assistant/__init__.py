"""paper-assistant: answers questions about a collection of paper abstracts, with checked citations."""
__version__ = "0.1.0"  # first, so modules imported below (the API's /v1/info) can read it

from .gradio_stubs import install as _skip_gradio_stub_rewrite

_skip_gradio_stub_rewrite()  # before anything imports Gradio (gradio_stubs.py says why)

from .config import PRESETS, Settings, load_settings
from .types import Answer, Chunk, Citation, Filters, Hit, Paper, Turn


def __getattr__(name: str):
    """`PaperAssistant` imported on first use: it brings the index, the embedder and llama-index
    (about a second), which a command that only talks to a running server never needs."""
    if name == "PaperAssistant":
        from .library import PaperAssistant
        return PaperAssistant
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PaperAssistant", "Settings", "load_settings", "PRESETS",
           "Answer", "Chunk", "Citation", "Filters", "Hit", "Paper", "Turn"]
