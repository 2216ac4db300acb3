"""The page's event handlers. Each returns (or, streaming, yields) `{component: new value}`;
a component left out keeps its value.

    handlers = PageHandlers(pa, page, bib_dir)     # page: the components (`Page`)
    handlers.respond(...)   one chat turn, streamed      handlers.reset()    a new conversation
    handlers.upload(file)   add a corpus file            handlers.on_load()  filters and stats
    handlers.restore(kept)  on load: the conversation this browser kept (`gr.BrowserState`)
    handlers.api_chat(...)  the public `/chat` API endpoint (gradio_client)

One `PaperAssistant` serves every browser session; a session's conversation lives in its
`gr.State` (see `new_session`), and a copy of it (a `Transcript`, the same JSON as
`chat --save`) in the browser's localStorage, so a reload brings it back.
"""
from __future__ import annotations

import logging
import os
import secrets
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from .. import conversation
from ..conversation import InputError
from ..corpus import CorpusError
from ..export import bibtex_entries, table_csv
from ..render import answer_markdown, answer_payload, reading_notice, waiting_notice
from ..transcript import (BROWSER_COPY_UNREADABLE, RESTORED, Exchange, Transcript,
                          TranscriptError, check_transcript, transcript_markdown)
from ..types import Answer, Hit
from .render import (category_choices, esc, render_answer, safe_markdown, sources_panel, stats_html,
                     year_hint)

log = logging.getLogger("assistant.ui")

STREAM_INTERVAL = 0.05  # seconds between two streamed chat updates (tokens are batched between)
NO_FACETS = {"categories": [], "authors": [], "author_count": 0, "year_min": None, "year_max": None}
AUTHOR_SUGGESTIONS = 50  # names the author box offers at a time: never the whole author index
# the answers the browser keeps for a reload: localStorage holds about 5 MB per site, and an
# answer with its citations and snippets takes some 10-30 kB
BROWSER_EXCHANGES = 50
BROWSER_KEY = "paper-assistant-conversation"  # its localStorage key
SECRET_FILE = "page-secret"  # in the store's folder: the key the browser's copy is encrypted with


def browser_secret(store_dir: Path) -> Optional[str]:
    """The key the page encrypts the browser's copy of a conversation with, kept (owner-only) in
    the store's folder, so a restarted server still reads what the browsers kept: Gradio's
    default is a new key per process, with which a restart lost every conversation. The key
    lives as long as the folder (a --rebuild keeps it). None when the folder cannot hold it
    (read-only): a key per process, as Gradio does."""
    path = Path(store_dir).expanduser() / SECRET_FILE
    try:
        if path.is_file() and len(kept := path.read_text().strip()) >= 32:
            return kept
        path.parent.mkdir(parents=True, exist_ok=True)
        secret = secrets.token_urlsafe(32)
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(secret)
        return secret
    except OSError as exc:
        log.warning("cannot keep the page's key in %s (%s): a restart forgets the browsers' "
                    "conversations", path, exc)
        return None


def kept_transcript(kept) -> Optional[Transcript]:
    """The conversation the browser kept (`page.kept`), None when it kept none; TranscriptError
    when what it kept is not one (e.g. kept by another version)."""
    if not isinstance(kept, dict) or not kept.get("exchanges"):
        return None
    return check_transcript(kept, "the conversation kept in this browser")


def new_session() -> dict:
    """A conversation's state on the server: the transcript (what follow-ups and the downloads
    read), each answer's sources (`records`, for the panel) and the chat's messages."""
    return {"sid": uuid.uuid4().hex, "transcript": Transcript(), "records": [], "messages": [],
            "bib": None}


def browser_copy(transcript: Transcript) -> dict:
    """What the browser keeps: the latest BROWSER_EXCHANGES exchanges, as JSON. Never empty
    (an empty value is not written, and a cleared conversation must overwrite the old one)."""
    return transcript.last(BROWSER_EXCHANGES).to_json()


def source_record(number: int, exchange: Exchange) -> dict:
    """One answer's entry of the sources panel (ui/render.sources_panel)."""
    return {"turn": number, "question": exchange.question, "answer": exchange.answer,
            "citations": list(exchange.citations), "snippets": dict(exchange.snippets),
            "intent": exchange.intent}


@dataclass
class Page:
    """The page's components, as `assistant.ui.build_ui` lays them out."""

    session: Any = None
    kept: Any = None  # gr.BrowserState: the conversation's copy in the browser
    chatbot: Any = None
    status: Any = None
    msg: Any = None
    send: Any = None
    examples: list = field(default_factory=list)  # (button, question)
    new: Any = None
    bib: Any = None
    table_csv: Any = None
    conversation_md: Any = None
    copy_md: Any = None
    sources: Any = None
    mode: Any = None
    k: Any = None
    categories: Any = None
    authors: Any = None
    year_min: Any = None
    year_max: Any = None
    upload_file: Any = None
    upload_button: Any = None
    upload_status: Any = None
    stats: Any = None

    @property
    def chat_inputs(self) -> list:
        return [self.msg, self.session, self.mode, self.categories, self.authors, self.year_min,
                self.year_max, self.k, self.kept]

    @property
    def chat_outputs(self) -> list:
        return [self.msg, self.chatbot, self.sources, self.status, self.session, self.copy_md,
                self.bib, self.table_csv, self.conversation_md, self.kept]

    @property
    def conversation_outputs(self) -> list:
        """What a new or restored conversation sets (`reset`, `restore`)."""
        return [self.chatbot, self.sources, self.status, self.session, self.copy_md, self.bib,
                self.table_csv, self.conversation_md, self.kept, self.msg]

    @property
    def filters(self) -> list:
        return [self.categories, self.authors, self.year_min, self.year_max]


@dataclass
class TurnProgress:
    """One answer being streamed: what was found and when, and the text so far."""

    t0: float = field(default_factory=time.perf_counter)
    found: list[Hit] = field(default_factory=list)
    found_at: Optional[float] = None
    first_token: Optional[float] = None
    streamed: str = ""
    last_push: float = 0.0
    final: Optional[Answer] = None

    def status(self) -> str:
        final = self.final
        assert final is not None
        timing = [f"{len(final.citations)} cited of {len(self.found)} found"]
        if self.found_at is not None:
            timing.append(f"sources in {self.found_at:.2f} s")
        if self.first_token is not None:
            timing.append(f"first words in {self.first_token:.2f} s")
        timing.append(f"done in {time.perf_counter() - self.t0:.2f} s")
        if final.abstained:
            return "Not in this collection · " + " · ".join(timing)
        return f"✓ {final.intent} · " + " · ".join(timing) + f" · {final.backend}"


def _found_head(found: list[Hit]) -> str:
    if not found:
        return "No matching paper found — writing the answer…"
    return f"Found {len(found)} paper{'s' * (len(found) != 1)} — writing the answer…"


class PageHandlers:
    def __init__(self, pa, page: Page, bib_dir: Path):
        self.pa, self.page, self.bib_dir = pa, page, bib_dir

    def facets(self, authors: int = AUTHOR_SUGGESTIONS) -> dict:
        try:
            return self.pa.facets(authors)
        except Exception:  # a store problem shows in the chat; the page still loads
            log.exception("could not read facets")
            return dict(NO_FACETS)

    def author_choices(self, selected, key: gr.KeyUpData) -> dict:
        """As the user types in the author box: the names containing what was typed (the
        page holds AUTHOR_SUGGESTIONS names at a time, not every author of the corpus)."""
        return self._author_update(selected, key.input_value or "")

    def _author_update(self, selected, typed: str) -> dict:
        """The author box's choices: the names chosen, then those containing `typed`."""
        selected = [s for s in (selected or []) if isinstance(s, str)]
        try:
            found = self.pa.author_suggestions(typed, AUTHOR_SUGGESTIONS)
        except Exception:
            log.exception("could not read author suggestions")
            found = []
        return gr.update(choices=list(dict.fromkeys(selected + found)))

    def stats(self) -> dict:
        try:
            return self.pa.stats()
        except Exception:
            log.exception("could not read stats")
            return {"papers": 0, "chunks": 0}

    # ------------------------------------------------------------------ chat
    def respond(self, message, session, mode, categories, authors, year_min, year_max, k,
                kept=None):
        """Stream one turn: papers found first, then the answer as it is written, then the
        checked answer with clickable markers and its source cards. `kept`: the browser's copy
        of the conversation, which the session continues when it holds nothing yet (a page
        left open while the server restarted: its session state is gone, its copy is not)."""
        p = self.page
        session = self._continued(session or new_session(), kept)
        try:
            message = conversation.check_message(message, self.pa.settings.max_message_chars)
        except InputError as exc:  # a notice says why; what was typed stays in the box to fix
            gr.Warning(str(exc))
            yield gr.skip()
            return
        try:
            filters = conversation.make_filters(categories, authors, year_min, year_max)
            mode = conversation.parse_mode(mode)
        except InputError as exc:
            raise gr.Error(str(exc)) from None
        records = session["records"]
        messages = session["messages"] + [{"role": "user", "content": message},
                                          {"role": "assistant", "content": "*Searching the papers…*"}]
        yield {p.msg: "", p.chatbot: messages, p.status: "Searching…", p.session: session,
               p.sources: sources_panel(records, pending="Searching the papers…")}
        turn = TurnProgress()
        try:
            for kind, payload in self.pa.ask_stream(message, session["transcript"].turns(), mode=mode,
                                                    filters=filters, k=int(k) if k else None):
                update = self._on_event(turn, kind, payload, messages, records)
                if update:
                    yield update
        except Exception as exc:  # the engine's own failures; the session stays usable
            log.exception("answering failed")
            messages[-1] = {"role": "assistant",
                            "content": f"⚠ Sorry, the question could not be answered: "
                                       f"{type(exc).__name__}: {str(exc)[:300]}"}
            yield {p.chatbot: messages, p.sources: sources_panel(records), p.status: "⚠ Error",
                   p.session: {**session, "messages": messages}}
            return
        if turn.final is not None:
            yield self._finish(turn, message, messages, session)

    def _on_event(self, turn: TurnProgress, kind: str, payload, messages: list,
                  records: list) -> Optional[dict]:
        p = self.page
        now = time.perf_counter()
        if kind == "reading":  # the model reads the closest papers before anything is said
            turn.found, turn.found_at = list(payload), now - turn.t0
            head = reading_notice(len(turn.found))
            titles = "\n".join(f"- {safe_markdown(h.paper.title)}" for h in turn.found)
            messages[-1] = {"role": "assistant", "content": f"*{head[0].upper() + head[1:]}…*\n\n{titles}"}
            return {p.chatbot: messages, p.sources: sources_panel(records, turn.found, pending=head),
                    p.status: f"Searched in {turn.found_at:.2f} s · {head}…"}
        if kind == "retrieved":
            turn.found, turn.found_at = list(payload), now - turn.t0
            head = _found_head(turn.found)
            messages[-1] = {"role": "assistant", "content": f"*{head}*"}
            return {p.chatbot: messages, p.sources: sources_panel(records, turn.found, pending=head),
                    p.status: f"Found {len(turn.found)} papers in {turn.found_at:.2f} s · writing…"}
        if kind == "waiting":  # the model is busy with other requests: say so, with the queue
            note = waiting_notice(int(payload))
            head = (f"Found {len(turn.found)} paper{'s' * (len(turn.found) != 1)}"
                    if turn.found_at is not None else "Searching done")
            shown = (safe_markdown(turn.streamed) + f"\n\n*⏳ {note}…*") if turn.streamed \
                else f"*{head} — ⏳ {note}…*"
            messages[-1] = {"role": "assistant", "content": shown}
            return {p.chatbot: messages, p.status: f"{head} · {note}…"}
        if kind == "token":
            if turn.first_token is None:
                turn.first_token = now - turn.t0
            turn.streamed += str(payload)
            if now - turn.last_push >= STREAM_INTERVAL:
                turn.last_push = now
                messages[-1] = {"role": "assistant", "content": safe_markdown(turn.streamed) + " ▍"}
                return {p.chatbot: messages}
        elif kind == "final":
            turn.final = payload
        return None

    def _finish(self, turn: TurnProgress, message: str, messages: list, session: dict) -> dict:
        """The checked answer, its source cards, the Markdown copy, the downloads and the
        browser's copy of the conversation."""
        p, final = self.page, turn.final
        snippets = {h.paper.paper_id: h.snippet for h in final.retrieved}
        for h in turn.found:
            snippets.setdefault(h.paper.paper_id, h.snippet)
        transcript = session["transcript"].add(message, final, snippets)
        number = len(transcript.exchanges)
        records = session["records"] + [source_record(number, transcript.exchanges[-1])]
        messages[-1] = {"role": "assistant", "content": render_answer(final, number)}
        session = {**session, "transcript": transcript, "records": records, "messages": messages}
        session["bib"] = self._write_bib(session, records)
        return {p.chatbot: messages, p.sources: sources_panel(records), p.status: turn.status(),
                p.session: session, p.copy_md: answer_markdown(message, final),
                **self._downloads(session, final), p.kept: browser_copy(transcript)}

    def _downloads(self, session: dict, final: Optional[Answer]) -> dict:
        """The BibTeX of every cited paper, the conversation as Markdown and the latest
        answer's table as CSV; a button is off while it has nothing to download."""
        p, bib = self.page, session["bib"]
        conversation_md = self._write_conversation(session)
        table = self._write_table(session, final) if final is not None else None
        return {p.bib: gr.update(value=bib, interactive=bool(bib)),
                p.conversation_md: gr.update(value=conversation_md,
                                             interactive=bool(conversation_md)),
                p.table_csv: gr.update(value=table, interactive=bool(table))}

    def _session_file(self, session: dict, name: str) -> Path:
        path = self.bib_dir / session.get("sid", uuid.uuid4().hex) / name
        path.parent.mkdir(parents=True, exist_ok=True)  # the folder is removed at shutdown
        return path

    def _write_conversation(self, session: dict) -> Optional[str]:
        """The conversation as Markdown (transcript_markdown, as `chat --markdown` writes it)."""
        transcript = session["transcript"]
        if not transcript.exchanges:
            return None
        path = self._session_file(session, "conversation.md")
        path.write_text(transcript_markdown(transcript), encoding="utf-8")
        return str(path)

    def _write_table(self, session: dict, final: Answer) -> Optional[str]:
        """The CSV of the latest answer's table; None when the latest answer has none."""
        if final.table is None or not final.table.rows:
            return None
        path = self._session_file(session, "table.csv")
        path.write_text(table_csv(final.table), encoding="utf-8")
        return str(path)

    def _write_bib(self, session: dict, records: list[dict]) -> Optional[str]:
        """Every paper cited in the conversation, as one .bib file per session (rewritten)."""
        cites = [c for r in records for c in r["citations"]]
        if not cites:
            return None
        path = self._session_file(session, "references.bib")
        path.write_text(bibtex_entries(cites), encoding="utf-8")
        return str(path)

    def _continued(self, session: dict, kept) -> dict:
        if session["transcript"].exchanges:
            return session
        try:
            transcript = kept_transcript(kept)
        except TranscriptError as exc:
            log.warning("%s", exc)
            return session
        return self.session_from(transcript) if transcript is not None else session

    def reset(self) -> dict:
        """A new conversation, here and in the browser's copy."""
        p, session = self.page, new_session()
        return {p.chatbot: [], p.sources: sources_panel([]), p.status: "", p.session: session,
                p.copy_md: "", **self._downloads(session, None),
                p.kept: browser_copy(session["transcript"]), p.msg: ""}

    def restore(self, kept) -> dict:
        """On load: the conversation this browser kept comes back into the chat, the sources
        panel, the downloads and the history that follow-ups ("who wrote it?") read."""
        try:
            transcript = kept_transcript(kept)
        except TranscriptError as exc:  # e.g. kept by another version: start afresh, say so
            log.warning("%s", exc)
            gr.Warning(BROWSER_COPY_UNREADABLE)
            return gr.skip()
        if transcript is None:
            return gr.skip()  # nothing kept: the page as it loads
        p, session = self.page, self.session_from(transcript)
        n, last = len(transcript.exchanges), transcript.exchanges[-1]
        return {p.chatbot: session["messages"], p.sources: sources_panel(session["records"]),
                p.status: RESTORED.format(n=n, s="s" * (n != 1)), p.session: session,
                p.copy_md: answer_markdown(last.question, last.as_answer()),
                **self._downloads(session, last.as_answer())}

    def session_from(self, transcript: Transcript) -> dict:
        """A session holding `transcript`: its sources, its chat messages and its BibTeX."""
        session = new_session()
        session["transcript"] = transcript
        for number, exchange in enumerate(transcript.exchanges, 1):
            session["records"].append(source_record(number, exchange))
            session["messages"] += [
                {"role": "user", "content": exchange.question},
                {"role": "assistant", "content": render_answer(exchange.as_answer(), number)}]
        session["bib"] = self._write_bib(session, session["records"])
        return session

    # ------------------------------------------------------------------ corpus
    def _facet_updates(self, f: dict, authors: bool = True) -> dict:
        """The filters' updates for facets `f`; the author box's too when `authors`."""
        p = self.page
        updates = {p.categories: gr.update(choices=category_choices(f["categories"])),
                   p.year_min: gr.update(placeholder=year_hint(f, "year_min")),
                   p.year_max: gr.update(placeholder=year_hint(f, "year_max"))}
        return {**updates, p.authors: gr.update(choices=f["authors"])} if authors else updates

    def on_load(self) -> dict:
        """The filters (all but the author box: `authors_on_load`) and the stats, as the
        collection is now, not as it was when the page was built."""
        f = self.facets(authors=0)
        return {**self._facet_updates(f, authors=False), self.page.stats: stats_html(self.stats(), f)}

    def authors_on_load(self, selected) -> dict:
        """The author box's names as the collection is now. Queued with the box's keystrokes
        (`author_choices`), after none of them: a page that loads slowly cannot replace the names
        offered for what the user has typed since."""
        return self._author_update(selected, "")

    def upload(self, file, progress=gr.Progress()) -> dict:
        p = self.page
        if not file:
            return {p.upload_status: '<span class="err">Choose a corpus file first.</span>'}
        path = Path(file if isinstance(file, str) else getattr(file, "name", file))
        before = self.stats().get("papers", 0)
        try:
            reports = self.pa.ingest([path], progress_factory=_progress_factory(progress, path.name),
                                     background_map=True)
        except CorpusError as e:
            return {p.stats: stats_html(self.stats(), self.facets()),
                    p.upload_status: self._refused(path.name, e)}
        except Exception as e:  # store problems: report, keep the page alive
            log.exception("ingest failed")
            return {p.upload_status: f'<span class="err">✗ {esc(type(e).__name__)}: {esc(e)}</span>'}
        s, f = self.stats(), self.facets()
        u = reports[0].upsert if reports else None
        detail = (f" ({u.papers_new} new, {u.papers_updated} updated, {u.papers_unchanged} unchanged)"
                  if u else "")
        n = reports[0].papers if reports else 0
        msg = (f'<span class="ok">✓ Added <code>{esc(path.name)}</code>: {n} papers{detail}.'
               f'{_left_out(reports)}</span>'
               f'<br>The corpus now has <b data-papers="{s.get("papers", 0)}">{s.get("papers", 0)}'
               f'</b> papers (was {before}). Filters updated.{_map_note(self.pa)}')
        return {p.stats: stats_html(s, f), p.upload_status: msg, **self._facet_updates(f)}

    def _refused(self, name: str, e) -> str:
        where = f"{name}:{e.line}" if e.line is not None else name
        now = self.stats().get("papers", 0)
        return (f'<span class="err">✗ <code>{esc(where)}: {esc(e.reason)}</code></span><br>'
                f'Nothing from this file was added; the corpus still has '
                f'<b data-papers="{now}">{now}</b> papers.')

    # ------------------------------------------------------------------ API endpoint
    def api_chat(self, message: str, history: Optional[list[dict]] = None, mode: str = "auto",
                 categories: Optional[list[str]] = None, authors: Optional[list[str]] = None,
                 year_min: Optional[int] = None, year_max: Optional[int] = None,
                 k: Optional[int] = None) -> dict:
        """Answer one message of a conversation, with citations.

        Call with gradio_client:
            Client(url).predict("Which paper studies backdoor attacks in FL?", api_name="/chat")
            Client(url).predict("Who wrote it?", history=previous["history"], api_name="/chat")

        history: earlier messages, [{"role": "user"|"assistant", "content": str,
            "paper_ids": [...]}]; pass back the `history` of the previous result for follow-ups.
        mode: "auto", "question", "summary" or "compare". categories/authors/year_min/year_max:
            filters. k: number of papers.
        Returns what `ask --json` prints ({"answer", "citations": [{number, paper_id, title,
            authors, category, year, evidence, title_is_derived}], "intent", "abstained",
            "notices", "backend", "retrieved", ...}) and the conversation's "history".
        """
        try:
            message = conversation.check_message(message if isinstance(message, str) else "",
                                                 self.pa.settings.max_message_chars)
            mode = conversation.parse_mode(mode)
            turns = conversation.turns_from_messages(history)
            filters = conversation.make_filters(categories, authors, year_min, year_max)
        except InputError as exc:
            raise gr.Error(str(exc)) from None
        answer = self.pa.ask(message, turns, mode=mode, filters=filters, k=int(k) if k else None)
        history = conversation.history_messages(conversation.extend(turns, message, answer))
        return {**answer_payload(answer), "history": history}


def _map_note(pa) -> str:
    """A sentence saying the map is being redrawn, while the upload's background build runs."""
    build = pa.map_build
    if build is None or build.done.is_set():
        return ""
    return " The map is being redrawn in the background (Map tab)."


def _left_out(reports) -> str:
    """The note on a Zotero library's items without an abstract ("12 items without an abstract
    were left out."): its reader is the one that leaves records out on purpose."""
    n = len(reports[0].skipped) if reports else 0
    if not n:
        return ""
    return f" {n} item{'s' * (n != 1)} without an abstract {'were' if n != 1 else 'was'} left out."


def _progress_factory(progress, name: str):
    """Ingest progress for Gradio's progress bar."""

    @contextmanager
    def factory(path):
        progress(0, desc=f"Reading {name}…")

        def update(done: int, total: int) -> None:
            progress((done, total or None), desc=f"Embedding {name}", unit="papers")

        yield update

    return factory
