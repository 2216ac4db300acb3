"""What the fronts hand the library: messages → turns, mode and filters, shared by the CLI,
the page and `/v1`.

    turns_from_messages(messages, recall)   chat messages (dicts) → history Turns
    history_messages(turns)                 Turns → the messages a client sends back
    extend(history, message, answer)        the history after one more exchange
    parse_mode(mode)                        "auto"/None → None (detected), else the mode
    make_filters(categories, authors, year_min, year_max) → Filters | None
    check_message(text, limit)              the stripped message; InputError if empty or too long
    AnswerMemory                            the papers of recent answers, found by their text

Bad input raises `InputError` (a ValueError); each front reports it its own way.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable, Iterable, Optional, Sequence

from .types import Answer, Filters, Turn

MODES = ("auto", "question", "summary", "compare", "similar", "table")
TEXT_PARTS = (None, "text", "input_text")


class InputError(ValueError):
    """A request the library cannot take as it is; str() is the message to show, `code` a
    machine-readable name for it when a front reports one (`/v1`, `ask --json`)."""

    def __init__(self, message: str, code: Optional[str] = None):
        super().__init__(message)
        self.code = code


LIMIT_SETTING = "max_message_chars"
EMPTY_MESSAGE = "the message is empty: write a question"


def check_message(text: Any, limit: int) -> str:
    """The message a user asks, stripped; InputError when it is empty (or only whitespace) or
    longer than `limit` characters (the `max_message_chars` setting). Every front calls this
    before anything is searched, so each refuses the same messages with the same words."""
    message = str(text or "").strip()
    if not message:
        raise InputError(EMPTY_MESSAGE, code="empty_message")
    if len(message) > limit:
        raise InputError(f"message is {len(message)} characters; the limit is {limit} characters "
                         f"(setting `{LIMIT_SETTING}`, env PAPER_ASSISTANT_{LIMIT_SETTING.upper()})",
                         code="message_too_long")
    return message


def message_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text") or "") for p in content
                   if isinstance(p, dict) and p.get("type") in TEXT_PARTS)


def cited_ids(message: dict) -> list[str]:
    """Papers an assistant message says it cited: its `paper_ids`, else its `citations`."""
    ids = [str(i) for i in message.get("paper_ids") or []]
    if not ids:
        ids = [str(c["paper_id"]) for c in message.get("citations") or []
               if isinstance(c, dict) and c.get("paper_id")]
    return ids


def turns_from_messages(messages: Optional[Iterable[Any]],
                        recall: Optional[Callable[[str], Optional[Turn]]] = None) -> list[Turn]:
    """User and assistant messages → Turns (system messages and the like carry nothing).

    An assistant turn keeps the papers it showed (what "it" refers to next) and whether it was a
    refusal; when the message does not echo them, `recall(text)` may remember them."""
    turns: list[Turn] = []
    for m in messages or []:
        if isinstance(m, Turn):
            turns.append(m)
            continue
        if not isinstance(m, dict):
            raise InputError("history must be a list of {role, content} messages")
        role = m.get("role")
        if role not in ("user", "assistant"):
            continue
        text = message_text(m.get("content"))
        turn = Turn(role=role, content=text)
        if role == "assistant":
            known = recall(text) if recall else None
            ids = cited_ids(m)
            turn = Turn(role=role, content=text, paper_ids=ids or (known.paper_ids if known else []),
                        refused=bool(m.get("refused")) or bool(known and known.refused and not ids))
        turns.append(turn)
    return turns


class AnswerMemory:
    """Which papers this server's recent answers cited, keyed by the answer text.

    Standard OpenAI clients send the conversation back without our `citations` field; when an
    assistant message is one of our own answers (as streamed or as finally checked), its papers
    are recovered here so follow-ups ("who wrote it?") keep their focus. Bounded LRU, in memory.
    """

    def __init__(self, size: int = 4096):
        self.size = size
        self._items: "OrderedDict[str, Turn]" = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()

    def remember(self, text: str, answer: Answer) -> None:
        """Keep what `answer` showed (its papers in order, whether it refused) under `text`."""
        turn = answer.as_turn()
        if not text.strip() or not turn.paper_ids:
            return
        with self._lock:
            key = self._key(text)
            self._items[key] = turn
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def recall(self, text: str) -> Optional[Turn]:
        with self._lock:
            return self._items.get(self._key(text))


def history_messages(turns: Iterable[Turn]) -> list[dict]:
    return [{"role": t.role, "content": t.content, "paper_ids": list(t.paper_ids),
             **({"refused": True} if t.refused else {})} for t in turns]


def extend(history: Sequence[Turn], message: str, answer: Answer) -> list[Turn]:
    """The conversation after `message` was answered with `answer`."""
    return [*history, Turn(role="user", content=message), answer.as_turn()]


def parse_mode(mode: Optional[str]) -> Optional[str]:
    """None for "auto" (the engine detects the intent)."""
    if mode in (None, "", "auto"):
        return None
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}")
    return mode


def _year(value: Any) -> Optional[int]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InputError(f"a year must be a number, not {value!r}") from None
    return n if n > 0 else None  # 0: any year


def _names(value: Any, sep: Optional[str] = None) -> list[str]:
    if isinstance(value, str):
        parts = value.split(sep) if sep else [value]
        return [p.strip() for p in parts if p.strip()]
    return [str(v) for v in value or []]


def make_filters(categories: Any = None, authors: Any = None, year_min: Any = None,
                 year_max: Any = None) -> Optional[Filters]:
    """Filters from what a front collected; None when nothing filters.

    categories: a list or one name; authors: a list or "a; b"; years: numbers or their text
    ("" or 0: any year)."""
    f = Filters(categories=_names(categories), authors=_names(authors, ";"),
                year_min=_year(year_min), year_max=_year(year_max))
    return None if f.is_empty() else f
