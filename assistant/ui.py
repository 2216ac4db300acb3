"""The Gradio page: chat with streamed, cited answers, a sources panel, filters and corpus upload.

    from assistant.ui import build_ui
    blocks = build_ui(pa, settings)      # mounted at "/" by assistant.server.create_app

One `PaperAssistant` serves every browser session; each session keeps its own conversation in a
`gr.State`. The page's style (`CSS`), its marker-click script (`HEAD`: a click on `[n]` brings
source card `src-<turn>-<n>` into view) and theme (`make_theme()`) are handed to
`gr.mount_gradio_app`, which takes them in Gradio 6 (they moved off `gr.Blocks`).

Besides the page's own events, one public Gradio API endpoint is registered, `/chat`
(see `api_chat`), so scripts can use the same server through `gradio_client`.
"""
from __future__ import annotations

import html
import logging
import re
import tempfile
import time
import unicodedata
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import gradio as gr

from .config import Settings
from .types import Answer, Citation, Filters, Hit, Turn

log = logging.getLogger("assistant.ui")

MODES = ["auto", "question", "summary", "compare"]
EXAMPLES = [
    ("Ask", "Which paper studies backdoor attacks in federated learning?"),
    ("Summarize", "Summarize the papers on causal inference."),
    ("Compare", "Compare Top-W with Verbalized Sampling."),
]
CORPUS_TYPES = [".txt", ".md", ".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".bib"]
STREAM_INTERVAL = 0.05  # seconds between two streamed chat updates (tokens are batched between)

# Citation markers as the engine writes them: [1], [2], also tolerated: [1, 3] / [1-2] groups.
MARKER_RE = re.compile(r"\[(\d+(?:\s*[,;–-]\s*\d+)*)\](?!\()")


# ----------------------------------------------------------------------------- rendering

def esc(text: Any) -> str:
    return html.escape(str(text or ""), quote=True)


def author_line(authors: Sequence[str], limit: int = 4) -> str:
    if not authors:
        return "unknown authors"
    more = " et al." if len(authors) > limit else ""
    return ", ".join(authors[:limit]) + more


def _marker_numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group):
        bounds = re.split(r"\s*[–-]\s*", part)
        if len(bounds) == 2 and all(b.isdigit() for b in bounds) and int(bounds[0]) <= int(bounds[1]):
            numbers.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


def link_markers(text: str, turn: int, numbers: Iterable[int]) -> str:
    """`[n]` → an anchor to source card `src-<turn>-<n>` (only for numbers that were cited)."""
    known = set(numbers)

    def repl(m: re.Match) -> str:
        nums = _marker_numbers(m.group(1))
        if not nums or not all(n in known for n in nums):
            return m.group(0)
        return "".join(f'<a href="#src-{turn}-{n}" class="cite" title="Show source {n}">[{n}]</a>'
                       for n in nums)

    return MARKER_RE.sub(repl, text)


def display_title(c: Citation | Any) -> str:
    """HTML for a title; a label derived from the abstract is shown as such, never as a title."""
    if getattr(c, "title_is_derived", False):
        return (f'<span class="derived" title="The corpus has no title for this paper: this label '
                f'was derived from its abstract"><em>{esc(c.title)}</em>'
                f'<span class="label-badge">label</span></span>')
    return esc(c.title)


def _meta_line(authors: Sequence[str], category: Optional[str], year: Optional[int]) -> str:
    parts = [f'<span class="authors">{esc(author_line(authors))}</span>']
    if category:
        parts.append(f'<span class="cat">{esc(category)}</span>')
    if year:
        parts.append(f'<span class="year">{esc(year)}</span>')
    return " · ".join(parts)


def _evidence_html(evidence: str, snippet: str) -> str:
    """The supporting sentence highlighted, with a little of the abstract around it."""
    if not evidence:
        return f'<div class="evidence">{esc(_shorten(snippet, 50))}</div>' if snippet else ""
    before = after = ""
    if snippet and evidence in snippet:
        head, _, tail = snippet.partition(evidence)
        before = _shorten_left(head, 18)
        after = _shorten(tail, 18)
    return (f'<div class="evidence">{esc(before)}<mark>{esc(evidence)}</mark>{esc(after)}</div>')


def _shorten(text: str, words: int) -> str:
    ws = text.split()
    return text if len(ws) <= words else " ".join(ws[:words]) + " …"


def _shorten_left(text: str, words: int) -> str:
    ws = text.split()
    if len(ws) <= words:
        return text
    return "… " + " ".join(ws[-words:]) + " "


def source_card(turn: int, c: Citation, snippet: str = "") -> str:
    extra = ""
    if c.url and c.url.lower().startswith(("http://", "https://")):  # never javascript: etc.
        extra = f' · <a href="{esc(c.url)}" target="_blank" rel="noopener noreferrer">link</a>'
    return (
        f'<div class="src-card" id="src-{turn}-{c.number}" data-paper-id="{esc(c.paper_id)}">'
        f'<div class="src-head"><span class="src-num">{c.number}</span>'
        f'<span class="src-title">{display_title(c)}</span></div>'
        f'<div class="src-meta">{_meta_line(c.authors, c.category, c.year)}{extra}</div>'
        f'{_evidence_html(c.evidence, snippet)}'
        f'<div class="src-id">{esc(c.paper_id)}</div>'
        f'</div>'
    )


def found_list(hits: Sequence[Hit]) -> str:
    items = []
    for h in hits:
        p = h.paper
        title = display_title(p)
        meta = " · ".join(esc(x) for x in (p.category, p.year) if x)
        items.append(f'<li><span class="found-title">{title}</span>'
                     f'<span class="found-meta">{meta}</span></li>')
    return "".join(items)


def sources_panel(records: Sequence[dict], found: Optional[Sequence[Hit]] = None,
                  pending: Optional[str] = None) -> str:
    """The sources panel: the papers found for the turn in progress, then the cited sources of
    every answer, newest first (earlier answers folded)."""
    parts: list[str] = ['<div class="sources" id="sources-panel">']
    if pending is not None:
        parts.append(f'<div class="found"><div class="found-head"><span class="spinner"></span>'
                     f'{esc(pending)}</div>')
        if found:
            parts.append(f'<ol class="found-list">{found_list(found)}</ol>')
        parts.append("</div>")
    if not records and pending is None:
        parts.append('<div class="sources-empty">Sources of the answers appear here: every cited '
                     'paper with its authors, category and the sentence that supports the answer.'
                     ' Click a marker such as <b>[1]</b> in an answer to jump to its card.</div>')
    for i, rec in enumerate(reversed(records)):
        turn = rec["turn"]
        cites: list[Citation] = rec["citations"]
        snippets: dict[str, str] = rec.get("snippets", {})
        cards = "".join(source_card(turn, c, snippets.get(c.paper_id, "")) for c in cites)
        if not cites:
            cards = '<div class="sources-empty">No paper cited in this answer.</div>'
        question = esc(_shorten(rec["question"], 14))
        if i == 0 and pending is None:
            parts.append(f'<div class="turn-sources latest"><div class="turn-q">Sources for '
                         f'“{question}”</div>{cards}</div>')
        else:
            parts.append(f'<details class="turn-sources"><summary>Sources for “{question}”'
                         f' ({len(cites)})</summary>{cards}</details>')
    parts.append("</div>")
    return "".join(parts)


def render_answer(answer: Answer, turn: int) -> str:
    """The final chat message: the checked answer with clickable markers, then any notices."""
    text = link_markers(answer.answer, turn, [c.number for c in answer.citations])
    notes = "".join(f"\n\n> **Note:** {n}" for n in answer.notices)
    return text + notes


def reference_line(c: Citation) -> str:
    title = (f"*{c.title}* (label derived from the abstract; the corpus gives no title)"
             if c.title_is_derived else f"*{c.title}*")
    bits = [f"[{c.number}] {author_line(c.authors, 6)}"]
    if c.year:
        bits[0] += f" ({c.year})"
    bits.append(title)
    if c.category:
        bits.append(c.category)
    if c.url:
        bits.append(c.url)
    return ". ".join(bits) + f". id: {c.paper_id}"


def answer_markdown(question: str, answer: Answer | dict) -> str:
    """An answer as Markdown with its numbered reference list (what the copy box holds)."""
    text = answer.answer if isinstance(answer, Answer) else answer["answer"]
    cites = answer.citations if isinstance(answer, Answer) else answer["citations"]
    out = [f"**Q:** {question}", "", text]
    if cites:
        out += ["", "**References**", ""]
        out += [reference_line(c) + "  " for c in cites]
    return "\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------- BibTeX

def _ascii_word(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]", "", text).lower()


_STOP = {"a", "an", "the", "on", "of", "for", "and", "in", "to", "with", "towards", "toward"}


def bibtex_key(c: Citation) -> str:
    surname = ""
    if c.authors:
        first = c.authors[0].strip()
        surname = first.split(",")[0] if "," in first else (first.split() or [""])[-1]
    word = next((w for w in (_ascii_word(t) for t in c.title.split())
                 if w and w not in _STOP), "")
    key = f"{_ascii_word(surname) or 'anon'}{c.year or ''}{word}"
    return key or c.paper_id


def bib_escape(text: str) -> str:
    """Escape what would break a braced BibTeX value: backslashes and braces."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append(r"\textbackslash{}")
        elif ch in "{}":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def bibtex_entries(citations: Iterable[Citation]) -> str:
    """@misc entries for the cited papers (deduplicated by paper id, keys made unique)."""
    seen: set[str] = set()
    keys: set[str] = set()
    entries = []
    for c in citations:
        if c.paper_id in seen:
            continue
        seen.add(c.paper_id)
        key = base = bibtex_key(c)
        suffix = ord("a")
        while key in keys:
            key = f"{base}{chr(suffix)}"
            suffix += 1
        keys.add(key)
        fields = [("title", bib_escape(c.title))]
        if c.authors:
            fields.append(("author", " and ".join(bib_escape(a) for a in c.authors)))
        if c.year:
            fields.append(("year", str(c.year)))
        if c.venue:
            fields.append(("howpublished", bib_escape(c.venue)))
        if c.url:
            fields.append(("url", bib_escape(c.url)))
        if c.category:
            fields.append(("keywords", bib_escape(c.category)))
        notes = []
        if c.category:
            notes.append(f"Category: {bib_escape(c.category)}")
        if c.title_is_derived:
            notes.append("Title is a label derived from the abstract")
        notes.append(f"paper-assistant id: {bib_escape(c.paper_id)}")
        fields.append(("note", "; ".join(notes)))
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
        entries.append(f"@misc{{{key},\n{body}\n}}\n")
    return "\n".join(entries)


# ----------------------------------------------------------------------------- helpers

def make_filters(categories: Optional[Sequence[str]] = None, authors: Any = None,
                 year_min: Any = None, year_max: Any = None) -> Optional[Filters]:
    if isinstance(authors, str):
        authors = [a.strip() for a in authors.split(";") if a.strip()]
    if isinstance(categories, str):
        categories = [categories] if categories else []

    def year(v):
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        try:
            n = int(str(v).strip())
        except ValueError:
            raise gr.Error(f"a year must be a number, not {v!r}") from None
        return n if n > 0 else None  # 0: any year

    f = Filters(categories=list(categories or []), authors=list(authors or []),
                year_min=year(year_min), year_max=year(year_max))
    return None if f.is_empty() else f


def year_hint(facets: dict, key: str) -> str:
    return f"any (corpus: {facets[key]})" if facets.get(key) else "any"


def category_choices(categories: Sequence[str]) -> list[str]:
    """Areas ("Deep Learning") then the categories themselves ("Deep Learning · Theory")."""
    areas = sorted({c.split(" · ")[0] for c in categories if " · " in c} - set(categories))
    return areas + list(categories)


def stats_html(stats: dict, facets: Optional[dict] = None) -> str:
    tiles = [("Papers", stats.get("papers", 0)), ("Chunks", stats.get("chunks", 0))]
    if facets is not None:
        tiles.append(("Categories", len(facets.get("categories", []))))
        tiles.append(("Authors", len(facets.get("authors", []))))
        if facets.get("year_min"):
            tiles.append(("Years", f"{facets['year_min']}–{facets['year_max']}"))
    tiles_html = "".join(f'<div class="tile"><div class="tile-v" data-stat="{esc(k.lower())}">'
                         f'{esc(v)}</div><div class="tile-k">{esc(k)}</div></div>' for k, v in tiles)
    embed = esc(stats.get("embed_model") or "—")
    store = esc(Path(str(stats.get("store", ""))).name or stats.get("store", ""))
    return (f'<div class="stats"><div class="tiles">{tiles_html}</div>'
            f'<div class="stats-foot">Embeddings: <code>{embed}</code> · store: <code>{store}</code>'
            f' ({esc(stats.get("chroma", ""))} Chroma)</div></div>')


def _turns_from_messages(history: Optional[Sequence[Any]]) -> list[Turn]:
    turns = []
    for m in history or []:
        if isinstance(m, Turn):
            turns.append(m)
            continue
        if not isinstance(m, dict):
            raise gr.Error("history must be a list of {role, content} messages")
        role = m.get("role")
        if role not in ("user", "assistant"):
            continue  # system messages and the like carry nothing for the engine
        content = m.get("content") or ""
        if not isinstance(content, str):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        ids = list(m.get("paper_ids") or [c.get("paper_id") for c in m.get("citations") or []
                                          if isinstance(c, dict) and c.get("paper_id")])
        turns.append(Turn(role=role, content=content, paper_ids=ids))
    return turns


def citation_json(c: Citation) -> dict:
    return {**c.to_json(), "evidence": c.evidence, "title_is_derived": c.title_is_derived}


def new_session() -> dict:
    return {"sid": uuid.uuid4().hex, "turns": [], "records": [], "messages": [], "bib": None}


# ----------------------------------------------------------------------------- the page

CSS = """
.gradio-container { max-width: 1400px !important; }
#pa-header { display: flex; align-items: center; justify-content: space-between; flex-wrap: wrap;
  gap: 6px 18px; padding: 4px 2px 0 2px; }
#pa-header > div:first-child { flex: 1 1 560px; }
#pa-header h1 { font-size: 1.55rem; margin: 0; font-weight: 700; letter-spacing: -0.01em; }
#pa-header .sub { color: var(--body-text-color-subdued); font-size: 0.95rem; margin-top: 2px; }
#pa-header .backend { font-size: 0.85rem; padding: 3px 10px; border-radius: 999px;
  background: var(--color-accent-soft); border: 1px solid var(--border-color-accent);
  white-space: nowrap; }
#pa-status { min-height: 1.6em; font-size: 0.88rem; color: var(--body-text-color-subdued); }
#pa-status p { margin: 0; }
#pa-chat a.cite, #pa-chat a[href^="#src-"] { text-decoration: none; font-weight: 600;
  color: var(--color-accent); padding: 0 1px; border-radius: 4px; cursor: pointer; }
#pa-chat a.cite:hover, #pa-chat a[href^="#src-"]:hover { background: var(--color-accent-soft); }
#pa-chat table { font-size: 0.88rem; }
#pa-chat table td:first-child, #pa-chat table th:first-child { white-space: nowrap; }
#pa-chat blockquote { font-size: 0.88rem; }
.example-row button { font-size: 0.85rem !important; }
.sources { display: flex; flex-direction: column; gap: 10px; max-height: 640px; overflow-y: auto;
  padding-right: 4px; scroll-behavior: smooth; }
.sources-empty { color: var(--body-text-color-subdued); font-size: 0.9rem; padding: 10px;
  border: 1px dashed var(--border-color-primary); border-radius: 10px; }
.turn-q, .turn-sources summary { font-size: 0.82rem; text-transform: uppercase;
  letter-spacing: 0.04em; color: var(--body-text-color-subdued); margin: 2px 0 6px 0; cursor: default; }
.turn-sources summary { cursor: pointer; text-transform: none; letter-spacing: 0; }
.turn-sources { display: flex; flex-direction: column; gap: 8px; }
.src-card { border: 1px solid var(--border-color-primary); border-left: 4px solid var(--color-accent);
  border-radius: 10px; padding: 10px 12px; background: var(--background-fill-primary);
  box-shadow: 0 1px 2px rgba(0,0,0,0.04); transition: box-shadow .3s, background .3s;
  scroll-margin: 12px; margin-bottom: 8px; }
.src-card.src-flash { box-shadow: 0 0 0 3px var(--color-accent); background: var(--color-accent-soft); }
.src-head { display: flex; gap: 8px; align-items: flex-start; }
.src-num { flex: none; min-width: 1.6em; height: 1.6em; border-radius: 999px; background: var(--color-accent);
  color: white; font-weight: 700; font-size: 0.8rem; display: inline-flex; align-items: center;
  justify-content: center; margin-top: 1px; }
.src-title { font-weight: 600; line-height: 1.3; }
.src-title .derived em { font-weight: 600; }
.label-badge { font-size: 0.68rem; font-style: normal; font-weight: 600; text-transform: uppercase;
  letter-spacing: 0.04em; margin-left: 6px; padding: 1px 6px; border-radius: 6px; vertical-align: 1px;
  border: 1px solid var(--border-color-primary); color: var(--body-text-color-subdued); }
.src-meta { font-size: 0.84rem; color: var(--body-text-color-subdued); margin: 4px 0 6px 0; }
.src-meta .cat { font-weight: 500; }
.evidence { font-size: 0.87rem; line-height: 1.45; color: var(--body-text-color); }
.evidence mark { background: rgba(255, 214, 10, 0.45); color: inherit; padding: 0 2px; border-radius: 3px; }
.src-id { font-size: 0.72rem; color: var(--body-text-color-subdued); margin-top: 6px; font-family: var(--font-mono); }
.found { border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 8px 12px;
  background: var(--background-fill-secondary); }
.found-head { font-weight: 600; font-size: 0.9rem; display: flex; gap: 8px; align-items: center; }
.found-list { margin: 6px 0 0 0; padding-left: 1.3em; font-size: 0.86rem; }
.found-list li { margin: 3px 0; }
.found-meta { color: var(--body-text-color-subdued); margin-left: 6px; font-size: 0.8rem; }
.spinner { width: 12px; height: 12px; border-radius: 50%; border: 2px solid var(--color-accent-soft);
  border-top-color: var(--color-accent); animation: pa-spin 0.8s linear infinite; display: inline-block; }
@keyframes pa-spin { to { transform: rotate(360deg); } }
.stats .tiles { display: flex; flex-wrap: wrap; gap: 10px; }
.stats .tile { border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 10px 16px;
  min-width: 110px; background: var(--background-fill-primary); }
.stats .tile-v { font-size: 1.5rem; font-weight: 700; }
.stats .tile-k { font-size: 0.8rem; color: var(--body-text-color-subdued); text-transform: uppercase;
  letter-spacing: 0.04em; }
.stats-foot { font-size: 0.82rem; color: var(--body-text-color-subdued); margin-top: 8px; }
#pa-upload-status .err { color: var(--error-text-color, #b91c1c); font-weight: 600; }
#pa-upload-status .ok { color: var(--color-green-600, #15803d); font-weight: 600; }
#pa-upload-status code { font-size: 0.9rem; }
"""

# Marker clicks: bring the source card into view (opening a folded earlier answer) and flash it.
# Runs in the capture phase so neither the browser's fragment navigation nor Gradio's link
# handling (which opens links in a new tab) gets the click.
HEAD = """
<script>
(function () {
  function show(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    var d = el.closest('details'); if (d) d.open = true;
    el.scrollIntoView({behavior: 'smooth', block: 'nearest'});
    el.classList.remove('src-flash'); void el.offsetWidth; el.classList.add('src-flash');
    setTimeout(function () { el.classList.remove('src-flash'); }, 1600);
    return true;
  }
  document.addEventListener('click', function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest('a[href*="#src-"]') : null;
    if (!a) return;
    var href = a.getAttribute('href') || '';
    ev.preventDefault(); ev.stopPropagation();
    show(href.slice(href.indexOf('#') + 1));
  }, true);
})();
</script>
"""


def make_theme():
    return gr.themes.Soft(
        primary_hue="indigo", secondary_hue="slate", neutral_hue="slate",
        font=["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    )


def build_ui(pa, settings: Optional[Settings] = None) -> gr.Blocks:
    """The page. `pa` is the process-wide PaperAssistant (shared by every session).

    Mount it with `gr.mount_gradio_app(app, blocks, "/", css=CSS, head=HEAD, theme=make_theme())`
    after `blocks.queue(...)` (assistant.server does both)."""
    settings = settings or pa.settings
    default_k = int(settings.k)
    bib_dir = Path(tempfile.mkdtemp(prefix="paper-assistant-bib-"))

    def facets() -> dict:
        try:
            return pa.facets()
        except Exception:  # a store problem shows in the chat; the page still loads
            log.exception("could not read facets")
            return {"categories": [], "authors": [], "year_min": None, "year_max": None}

    def stats() -> dict:
        try:
            return pa.stats()
        except Exception:
            log.exception("could not read stats")
            return {"papers": 0, "chunks": 0}

    f0 = facets()

    # ------------------------------------------------------------------ chat
    def respond(message, session, mode, categories, authors, year_min, year_max, k):
        """Stream one turn: papers found first, then the answer as it is written, then the
        checked answer with clickable markers and its source cards."""
        message = (message or "").strip()
        session = session or new_session()
        if not message:
            yield (gr.skip(),) * 7
            return
        filters = make_filters(categories, authors, year_min, year_max)  # gr.Error on bad input
        t0 = time.perf_counter()
        turn = len(session["records"]) + 1
        records = session["records"]
        messages = session["messages"] + [{"role": "user", "content": message},
                                          {"role": "assistant", "content": "*Searching the papers…*"}]
        yield ("", messages, sources_panel(records, pending="Searching the papers…"),
               "Searching…", session, gr.skip(), gr.skip())

        found: list[Hit] = []
        streamed = ""
        final: Optional[Answer] = None
        first_token = found_at = None
        last_push = 0.0
        try:
            for kind, payload in pa.ask_stream(message, session["turns"],
                                               mode=None if mode in (None, "auto") else mode,
                                               filters=filters, k=int(k) if k else None):
                if kind == "retrieved":
                    found = list(payload)
                    found_at = time.perf_counter() - t0
                    head = (f"Found {len(found)} paper{'s' * (len(found) != 1)} — writing the answer…"
                            if found else "No matching paper found — writing the answer…")
                    messages[-1] = {"role": "assistant", "content": f"*{head}*"}
                    yield (gr.skip(), messages, sources_panel(records, found, pending=head),
                           f"Found {len(found)} papers in {found_at:.2f} s · writing…",
                           gr.skip(), gr.skip(), gr.skip())
                elif kind == "token":
                    if first_token is None:
                        first_token = time.perf_counter() - t0
                    streamed += str(payload)
                    now = time.perf_counter()
                    if now - last_push >= STREAM_INTERVAL:
                        last_push = now
                        messages[-1] = {"role": "assistant", "content": streamed + " ▍"}
                        yield (gr.skip(), messages, gr.skip(), gr.skip(), gr.skip(), gr.skip(),
                               gr.skip())
                elif kind == "final":
                    final = payload
        except Exception as exc:  # the engine's own failures; the session stays usable
            log.exception("answering failed")
            messages[-1] = {"role": "assistant",
                            "content": f"⚠ Sorry, the question could not be answered: "
                                       f"{type(exc).__name__}: {str(exc)[:300]}"}
            session = {**session, "messages": messages}
            yield (gr.skip(), messages, sources_panel(records), "⚠ Error", session,
                   gr.skip(), gr.skip())
            return
        if final is None:
            return
        total = time.perf_counter() - t0
        snippets = {h.paper.paper_id: h.snippet for h in final.retrieved}
        for h in found:
            snippets.setdefault(h.paper.paper_id, h.snippet)
        record = {"turn": turn, "question": message, "answer": final.answer,
                  "citations": list(final.citations), "snippets": snippets,
                  "intent": final.intent}
        messages[-1] = {"role": "assistant", "content": render_answer(final, turn)}
        records = records + [record]
        turns = session["turns"] + [Turn(role="user", content=message), final.as_turn()]
        all_cites = [c for r in records for c in r["citations"]]
        bib_path = None
        if all_cites:  # one file per session, rewritten after each answer
            bib_path = bib_dir / session.get("sid", uuid.uuid4().hex) / "references.bib"
            bib_path.parent.mkdir(exist_ok=True)
            bib_path.write_text(bibtex_entries(all_cites), encoding="utf-8")
        session = {**session, "turns": turns, "records": records, "messages": messages,
                   "bib": str(bib_path) if bib_path else None}
        timing = [f"{len(final.citations)} cited of {len(found)} found"]
        if found_at is not None:
            timing.append(f"sources in {found_at:.2f} s")
        if first_token is not None:
            timing.append(f"first words in {first_token:.2f} s")
        timing.append(f"done in {total:.2f} s")
        status = f"✓ {final.intent} · " + " · ".join(timing) + f" · {final.backend}"
        if final.abstained:
            status = "Not in this collection · " + " · ".join(timing)
        yield (gr.skip(), messages, sources_panel(records), status, session,
               answer_markdown(message, final),
               gr.update(value=str(bib_path) if bib_path else None, interactive=bool(bib_path)))

    def reset():
        return ([], sources_panel([]), "", new_session(), "",
                gr.update(value=None, interactive=False), "")

    # ------------------------------------------------------------------ corpus
    def facet_updates(f: dict):
        return (gr.update(choices=category_choices(f["categories"])),
                gr.update(choices=f["authors"]),
                gr.update(placeholder=year_hint(f, "year_min")),
                gr.update(placeholder=year_hint(f, "year_max")))

    def on_load():
        f = facets()
        return (*facet_updates(f), stats_html(stats(), f))

    def upload(file, progress=gr.Progress()):
        if not file:
            return (gr.skip(), '<span class="err">Choose a corpus file first.</span>',
                    *(gr.skip(),) * 4)
        path = Path(file if isinstance(file, str) else getattr(file, "name", file))
        name = path.name
        before = stats().get("papers", 0)

        @contextmanager
        def progress_factory(p):
            progress(0, desc=f"Reading {name}…")

            def update(done: int, total: int) -> None:
                progress((done, total or None), desc=f"Embedding {name}", unit="papers")

            yield update

        from .corpus import CorpusError

        try:
            reports = pa.ingest([path], progress_factory=progress_factory)
        except CorpusError as e:
            where = f"{name}:{e.line}" if e.line is not None else name
            now = stats().get("papers", 0)
            msg = (f'<span class="err">✗ <code>{esc(where)}: {esc(e.reason)}</code></span><br>'
                   f'Nothing from this file was added; the corpus still has '
                   f'<b data-papers="{now}">{now}</b> papers.')
            f = facets()
            return (stats_html(stats(), f), msg, *(gr.skip(),) * 4)
        except Exception as e:  # store problems: report, keep the page alive
            log.exception("ingest failed")
            return (gr.skip(), f'<span class="err">✗ {esc(type(e).__name__)}: {esc(e)}</span>',
                    *(gr.skip(),) * 4)
        s, f = stats(), facets()
        u = reports[0].upsert if reports else None
        detail = (f" ({u.papers_new} new, {u.papers_updated} updated, {u.papers_unchanged} unchanged)"
                  if u else "")
        n = reports[0].papers if reports else 0
        msg = (f'<span class="ok">✓ Added <code>{esc(name)}</code>: {n} papers{detail}.</span><br>'
               f'The corpus now has <b data-papers="{s.get("papers", 0)}">{s.get("papers", 0)}</b> '
               f'papers (was {before}). Filters updated.')
        return (stats_html(s, f), msg, *facet_updates(f))

    # ------------------------------------------------------------------ API endpoint
    def api_chat(message: str, history: Optional[list[dict]] = None, mode: str = "auto",
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
        Returns {"answer", "citations": [{number, paper_id, title, authors, category, year,
            evidence, title_is_derived}], "intent", "abstained", "notices", "backend", "history"}.
        """
        if not isinstance(message, str) or not message.strip():
            raise gr.Error("message must be a non-empty string")
        if mode not in (None, *MODES):
            raise gr.Error(f"mode must be one of {', '.join(MODES)}")
        turns = _turns_from_messages(history)
        answer = pa.ask(message.strip(), turns, mode=None if mode in (None, "auto") else mode,
                        filters=make_filters(categories, authors, year_min, year_max),
                        k=int(k) if k else None)
        new_history = [{"role": t.role, "content": t.content, "paper_ids": t.paper_ids}
                       for t in turns]
        new_history.append({"role": "user", "content": message.strip(), "paper_ids": []})
        t = answer.as_turn()
        new_history.append({"role": "assistant", "content": t.content, "paper_ids": t.paper_ids})
        return {"answer": answer.answer, "citations": [citation_json(c) for c in answer.citations],
                "intent": answer.intent, "abstained": answer.abstained,
                "notices": answer.notices, "backend": answer.backend, "history": new_history}

    # ------------------------------------------------------------------ layout
    # delete_cache: uploaded corpora and exported .bib files older than a day are removed hourly
    with gr.Blocks(title="Paper Assistant", analytics_enabled=False,
                   delete_cache=(3600, 86400)) as demo:
        session = gr.State(new_session)  # called per page load: each session its own
        gr.HTML(
            f'<div id="pa-header"><div><h1>Paper Assistant</h1>'
            f'<div class="sub">Ask about the papers in the collection, get a summary of a topic, or '
            f'compare two papers. Every claim cites its paper <b>[n]</b>; click a marker to see '
            f'the supporting sentence.</div></div>'
            f'<div class="backend" id="pa-backend" title="The language model writing the answers">'
            f'Answer engine: <b>{esc(pa.backend_label())}</b></div></div>',
            js_on_load=None)
        with gr.Tabs():
            with gr.Tab("Chat", id="chat"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=7, min_width=420):
                        chatbot = gr.Chatbot(
                            elem_id="pa-chat", label="Conversation", height=560,
                            show_label=False, layout="bubble", buttons=[],
                            feedback_options=None, sanitize_html=True,
                            latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                              {"left": "$", "right": "$", "display": False}],
                            placeholder="**Ask about the papers in the collection.**<br>"
                                        "Try one of the examples below.")
                        status = gr.Markdown("", elem_id="pa-status")
                        with gr.Row():
                            msg = gr.Textbox(placeholder="Ask about the papers, ask for a summary "
                                                         "or a comparison… (Enter to send)",
                                             show_label=False, scale=8, autofocus=True,
                                             elem_id="pa-input", container=False, lines=1,
                                             max_lines=6)
                            send = gr.Button("Send", variant="primary", scale=1, min_width=90,
                                             elem_id="pa-send")
                        with gr.Row(elem_classes="example-row"):
                            example_buttons = [
                                (gr.Button(f"{label}: {text}", size="sm", variant="secondary",
                                           elem_classes="example-btn"), text)
                                for label, text in EXAMPLES]
                        with gr.Row():
                            new_btn = gr.Button("New conversation", size="sm", elem_id="pa-new")
                            bib_btn = gr.DownloadButton("Export cited papers (BibTeX)", size="sm",
                                                        interactive=False, elem_id="pa-bib")
                        with gr.Accordion("Copy the last answer as Markdown (with references)",
                                          open=False):
                            copy_md = gr.Textbox("", lines=8, max_lines=18, buttons=["copy"],
                                                 show_label=False, interactive=False,
                                                 placeholder="Ask something first.",
                                                 elem_id="pa-markdown")
                    with gr.Column(scale=5, min_width=340):
                        gr.Markdown("#### Sources")
                        sources = gr.HTML(sources_panel([]), elem_id="pa-sources", js_on_load=None)
                        with gr.Accordion("Answer settings & filters", open=True):
                            mode = gr.Radio(MODES, value="auto", label="Mode (auto detects "
                                            "question, summary or compare)", elem_id="pa-mode")
                            k = gr.Slider(1, 20, value=default_k, step=1, label="Papers to use (k)",
                                          elem_id="pa-k")
                            with gr.Row():
                                cat = gr.Dropdown(category_choices(f0["categories"]), value=[],
                                                  multiselect=True, label="Categories",
                                                  info="An area includes its sub-categories",
                                                  elem_id="pa-categories", min_width=200)
                                auth = gr.Dropdown(f0["authors"], value=[], multiselect=True,
                                                   allow_custom_value=True, label="Authors",
                                                   info="Any part of a name", elem_id="pa-authors",
                                                   min_width=200)
                            with gr.Row():
                                y_min = gr.Textbox("", label="From year",
                                                   placeholder=year_hint(f0, "year_min"),
                                                   elem_id="pa-year-min", min_width=120)
                                y_max = gr.Textbox("", label="To year",
                                                   placeholder=year_hint(f0, "year_max"),
                                                   elem_id="pa-year-max", min_width=120)
            with gr.Tab("Corpus", id="corpus"):
                gr.Markdown("Add papers to the collection: a seed listing (`.txt`), JSON Lines, "
                            "JSON, CSV/TSV or BibTeX. A file is checked completely before anything "
                            "of it is stored, so a bad file changes nothing; re-adding a file "
                            "updates its papers in place.")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=1):
                        up_file = gr.File(label="Corpus file", file_types=CORPUS_TYPES,
                                          type="filepath", elem_id="pa-upload")
                        up_btn = gr.Button("Add to the collection", variant="primary",
                                           elem_id="pa-upload-btn")
                        up_status = gr.HTML("", elem_id="pa-upload-status", js_on_load=None)
                    with gr.Column(scale=1):
                        gr.Markdown("#### Collection")
                        stats_box = gr.HTML(stats_html(stats(), f0), elem_id="pa-stats",
                                            js_on_load=None)

        chat_inputs = [msg, session, mode, cat, auth, y_min, y_max, k]
        chat_outputs = [msg, chatbot, sources, status, session, copy_md, bib_btn]
        # Every way of asking shares one concurrency group: at most the queue's
        # default_concurrency_limit answers are produced at once, whatever triggered them.
        for trigger in (msg.submit, send.click):
            trigger(respond, chat_inputs, chat_outputs, api_visibility="private",
                    show_progress="hidden", concurrency_id="chat")
        for button, text in example_buttons:
            button.click(lambda t=text: t, None, msg, api_visibility="private", queue=False).then(
                respond, chat_inputs, chat_outputs, api_visibility="private",
                show_progress="hidden", concurrency_id="chat")
        for clear in (new_btn.click, chatbot.clear):  # the chat's own bin icon starts afresh too
            clear(reset, None, [chatbot, sources, status, session, copy_md, bib_btn, msg],
                  api_visibility="private", queue=False)
        up_btn.click(upload, [up_file], [stats_box, up_status, cat, auth, y_min, y_max],
                     api_visibility="private", concurrency_limit=1, concurrency_id="corpus")
        demo.load(on_load, None, [cat, auth, y_min, y_max, stats_box], api_visibility="private")
        gr.api(api_chat, api_name="chat", concurrency_id="chat")
    return demo
