"""A conversation kept: saved as JSON to be resumed, rendered as Markdown to be read. One
format for every front: `chat --save/--resume` and the page's copy in the browser.

    Transcript()                         an empty conversation
    transcript.add(question, answer)     the transcript after one more exchange
    transcript.turns()                   the history to ask the next question with
    transcript.cited()                   every paper cited, once each, in order of first citation
    transcript_markdown(transcript)      every exchange, then one numbered list of references
    load_transcript(path)                a saved conversation; TranscriptError when unreadable
    check_transcript(data)               the same from already-parsed JSON (the browser's copy)
    save_transcript(path, transcript)    written whole or not at all (a temporary file, renamed)
    save_markdown(path, transcript)      the Markdown, written the same way

An exchange keeps what resuming needs: the question, the answer's text, the papers it put in
front of the user (`presented`: what "it" and "the first one" refer to next) and its citations
with their metadata, so the Markdown and the references need no store.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field, ValidationError

from .answer.markers import MARKER_RE, parse_markers
from .conversation import InputError, extend
from .render import reference_line
from .types import Answer, Citation, Intent, LiteratureTable, Turn

FORMAT = "paper-assistant conversation"
VERSION = 1

# Users' strings: what a front says about a conversation file or the browser's copy.
NOT_FOUND = "{path}: no such file"
NOT_A_FILE = "{path}: not a file"
NOT_UTF8 = "{path}: not UTF-8 text"
BAD_JSON = "{path}:{line}:{column}: not valid JSON ({reason}); the file is left as it is"
NOT_A_CONVERSATION = ("{path}: not a paper-assistant conversation ({reason}); the file is left "
                      "as it is")
TOO_NEW = "written by a newer paper-assistant (version {version}; this one reads {known})"
SAVE_EXISTS = ("{path} already exists and is not the conversation being resumed: resume it "
               "(--resume {path} --save {path}) or save to a new file")
NO_FOLDER = "{path}: the folder {folder} does not exist"
SAME_FILE = "--markdown {path} would overwrite the conversation file: choose another file"
RESUMED = "resumed {n} exchange{s} from {path}; last question: “{question}”"
NOT_SAVING = "new answers are not saved: add --save {path} to keep them"
NEW_SAVED = "new conversation: {path} will hold it from its first answer"
WRITE_FAILED = "could not write {path}: {reason}; the conversation goes on unsaved"
RESTORED = "Conversation restored from this browser: {n} answer{s}"
BROWSER_COPY_UNREADABLE = ("The conversation this browser kept could not be read (another "
                           "version of the page?); this is a new one.")
MARKDOWN_TITLE = "# Conversation with Paper Assistant"
MARKDOWN_EMPTY = "*No question asked yet.*"


class TranscriptError(InputError):
    """A conversation file that cannot be read; str() says which file, where and why."""


class Exchange(BaseModel):
    """One question and its checked answer."""

    question: str
    answer: str
    intent: Intent = "question"
    abstained: bool = False
    presented: list[str] = Field(default_factory=list)  # paper ids the answer showed, in order
    citations: list[Citation] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    snippets: dict[str, str] = Field(default_factory=dict)  # cited paper id → its best chunk
    table: Optional[LiteratureTable] = None

    @classmethod
    def from_answer(cls, question: str, answer: Answer,
                    snippets: Optional[dict[str, str]] = None) -> "Exchange":
        """`snippets`: the text found around each paper (default: the answer's retrieved
        hits); only the cited papers' are kept."""
        found = snippets if snippets is not None else {h.paper.paper_id: h.snippet
                                                       for h in answer.retrieved}
        cited = {c.paper_id for c in answer.citations}
        return cls(question=question, answer=answer.answer, intent=answer.intent,
                   abstained=answer.abstained, presented=answer.as_turn().paper_ids,
                   citations=list(answer.citations), notices=list(answer.notices),
                   snippets={k: v for k, v in found.items() if k in cited and v},
                   table=answer.table)

    def as_answer(self) -> Answer:
        """The answer as the fronts render one (no retrieved hits, no timings)."""
        return Answer(answer=self.answer, intent=self.intent, citations=self.citations,
                      abstained=self.abstained, notices=self.notices, presented=self.presented,
                      table=self.table)

    def turns(self) -> list[Turn]:
        return extend([], self.question, self.as_answer())


class Transcript(BaseModel):
    format: str = FORMAT
    version: int = VERSION
    exchanges: list[Exchange] = Field(default_factory=list)

    def add(self, question: str, answer: Answer,
            snippets: Optional[dict[str, str]] = None) -> "Transcript":
        return self.model_copy(update={"exchanges": [
            *self.exchanges, Exchange.from_answer(question, answer, snippets)]})

    def turns(self) -> list[Turn]:
        return [t for e in self.exchanges for t in e.turns()]

    def cited(self) -> list[Citation]:
        """Every cited paper once, numbered in order of first citation across the exchanges."""
        seen: dict[str, Citation] = {}
        for e in self.exchanges:
            for c in sorted(e.citations, key=lambda c: c.number):
                if c.paper_id not in seen:
                    seen[c.paper_id] = c.model_copy(update={"number": len(seen) + 1})
        return list(seen.values())

    def last(self, n: int) -> "Transcript":
        """Only the last `n` exchanges (the browser keeps a bounded copy)."""
        return self.model_copy(update={"exchanges": self.exchanges[-n:] if n > 0 else []})

    def to_json(self) -> dict:
        return self.model_dump(mode="json", exclude_none=True)


# ----------------------------------------------------------------------------- Markdown

def _renumbered(exchange: Exchange, numbers: dict[str, int]) -> str:
    """The answer's text with its markers changed to the conversation's reference numbers (an
    answer's [1] is its own first paper; the references count across the conversation)."""
    local = {c.number: numbers[c.paper_id] for c in exchange.citations}

    def repl(m) -> str:
        nums = parse_markers(m.group(1))
        if not nums or not all(n in local for n in nums):
            return m.group(0)  # not one of this answer's markers: as written
        return "".join(f"[{local[n]}]" for n in nums)

    return MARKER_RE.sub(repl, exchange.answer)


def _exchange_markdown(exchange: Exchange, numbers: dict[str, int]) -> list[str]:
    out = ["### Question", "", exchange.question.strip(), "", "### Answer", "",
           _renumbered(exchange, numbers).strip()]
    out += [f"\n> **Note:** {n}" for n in exchange.notices]
    return out + [""]


def transcript_markdown(transcript: Transcript) -> str:
    """The conversation as Markdown: each question and answer (markers numbered across the
    conversation), then "References": every cited paper once, with authors, year, link and
    DOI where the corpus gives them."""
    cited = transcript.cited()
    numbers = {c.paper_id: c.number for c in cited}
    out = [MARKDOWN_TITLE, ""]
    for i, exchange in enumerate(transcript.exchanges):
        if i:
            out += ["---", ""]
        out += _exchange_markdown(exchange, numbers)
    if not transcript.exchanges:
        out += [MARKDOWN_EMPTY, ""]
    if cited:
        out += ["## References", "", *(reference_line(c) + "  " for c in cited)]
    return "\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------- files

def check_transcript(data: Any, where: str = "conversation") -> Transcript:
    """Parsed JSON → Transcript; TranscriptError naming `where` when it is not one."""
    def refuse(reason: str) -> TranscriptError:
        return TranscriptError(NOT_A_CONVERSATION.format(path=where, reason=reason),
                               "invalid_conversation")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise refuse(f'no "format": "{FORMAT}"')
    if isinstance(data.get("version"), int) and data["version"] > VERSION:
        raise refuse(TOO_NEW.format(version=data["version"], known=VERSION))
    try:
        return Transcript.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise refuse(f"{place}: {first['msg']}") from None


def load_transcript(path: Path) -> Transcript:
    """A saved conversation. TranscriptError with the file (and for bad JSON its line and
    column) when it is missing, unreadable or not a conversation; the file is never changed."""
    path = Path(path)
    if not path.exists():
        raise TranscriptError(NOT_FOUND.format(path=path), "not_found")
    if not path.is_file():
        raise TranscriptError(NOT_A_FILE.format(path=path), "not_a_file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TranscriptError(NOT_UTF8.format(path=path), "invalid_conversation") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(BAD_JSON.format(path=path, line=exc.lineno, column=exc.colno,
                                              reason=exc.msg), "invalid_json") from None
    return check_transcript(data, str(path))


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`: a reader
    (or a crash) never sees half a file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_transcript(path: Path, transcript: Transcript) -> None:
    write_atomically(path, json.dumps(transcript.to_json(), ensure_ascii=False, indent=2) + "\n")


def save_markdown(path: Path, transcript: Transcript) -> None:
    write_atomically(path, transcript_markdown(transcript))
