"""HTML for the page: chat messages with linked markers, source cards, the sources panel and
the collection's statistics. Everything from the corpus is escaped here."""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence
from urllib.parse import quote

from ..answer.markers import MARKER_RE, parse_markers
from ..render import author_line, doi_link, links
from ..types import Answer, Citation, Hit

LABEL_TOOLTIP = ("The corpus has no title for this paper: this label was derived from its "
                 "abstract")
LABEL_LEGEND = ('<div class="label-legend"><span class="label-badge">label</span> The collection '
                'gives no title for these papers (the seed listing has none), so a label derived '
                'from the abstract stands in for it.</div>')
EMPTY_PANEL = ('<div class="sources-empty">Sources of the answers appear here: every cited paper '
               'with its authors, category and the sentence that supports the answer. Click a '
               'marker such as <b>[1]</b> in an answer to jump to its card.</div>')


def esc(text: Any) -> str:
    return html.escape(str(text or ""), quote=True)


def link_markers(text: str, turn: int, numbers: Iterable[int]) -> str:
    """`[n]` → an anchor to source card `src-<turn>-<n>` (only for numbers that were cited;
    a Markdown link `[1](url)` stays as it is)."""
    known = set(numbers)

    def repl(m) -> str:
        nums = parse_markers(m.group(1))
        if not nums or not all(n in known for n in nums) or text[m.end():m.end() + 1] == "(":
            return m.group(0)
        return "".join(f'<a href="#src-{turn}-{n}" class="cite" title="Show source {n}">[{n}]</a>'
                       for n in nums)

    return MARKER_RE.sub(repl, text)


# A Markdown link or image: "[text](" / "![alt](". Answers never need one (sources are linked
# from their cards), and an image would make every reader's browser fetch a URL from the corpus.
_MARKDOWN_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(")


def safe_markdown(text: str) -> str:
    """Answer text (the model's words, extracts of abstracts, titles) as Markdown that is shown,
    never run: HTML is escaped and Markdown links and images are shown as written."""
    escaped = html.escape(str(text or ""), quote=False)
    return _MARKDOWN_LINK.sub(lambda m: f"{m.group(1)}\\[{m.group(2)}\\](", escaped)


def render_answer(answer: Answer, turn: int) -> str:
    """The final chat message: the checked answer with clickable markers, then any notices."""
    text = link_markers(safe_markdown(answer.answer), turn, [c.number for c in answer.citations])
    return text + "".join(f"\n\n> **Note:** {safe_markdown(n)}" for n in answer.notices)


def display_title(c: Citation | Any) -> str:
    """HTML for a title; a label derived from the abstract is shown as such, never as a title."""
    if getattr(c, "title_is_derived", False):
        return (f'<span class="derived" title="{LABEL_TOOLTIP}"><em>{esc(c.title)}</em>'
                f'<span class="label-badge" title="{LABEL_TOOLTIP}">label</span></span>')
    return esc(c.title)


def _meta_line(authors: Sequence[str], category: Optional[str], year: Optional[int]) -> str:
    parts = [f'<span class="authors">{esc(author_line(authors) or "unknown authors")}</span>']
    if category:
        parts.append(f'<span class="cat">{esc(category)}</span>')
    if year:
        parts.append(f'<span class="year">{esc(year)}</span>')
    return " · ".join(parts)


def shorten(text: str, words: int) -> str:
    ws = text.split()
    return text if len(ws) <= words else " ".join(ws[:words]) + " …"


def _shorten_left(text: str, words: int) -> str:
    ws = text.split()
    return text if len(ws) <= words else "… " + " ".join(ws[-words:]) + " "


def _evidence_html(evidence: str, snippet: str) -> str:
    """The supporting sentence highlighted, with a little of the abstract around it."""
    if not evidence:
        return f'<div class="evidence">{esc(shorten(snippet, 50))}</div>' if snippet else ""
    before = after = ""
    if snippet and evidence in snippet:
        head, _, tail = snippet.partition(evidence)
        before, after = _shorten_left(head, 18), shorten(tail, 18)
    return f'<div class="evidence">{esc(before)}<mark>{esc(evidence)}</mark>{esc(after)}</div>'


def _quotes_html(quotes) -> str:
    """Each sentence of the answer that cites the paper, with the abstract sentence it was
    checked against (what it restates), folded under the card."""
    if not quotes:
        return ""
    items = "".join(f'<li><span class="claim">{esc(q.claim)}</span>'
                    f'<q class="quote">{esc(q.evidence)}</q></li>' for q in quotes)
    return (f'<details class="quotes"><summary>What the answer says from it ({len(quotes)})</summary>'
            f'<ul>{items}</ul></details>')


def _anchor(href: str, text: str, cls: str) -> str:
    return (f' · <a class="{cls}" href="{esc(href)}" target="_blank" '
            f'rel="noopener noreferrer">{esc(text)}</a>')


def links_html(c: Citation) -> str:
    """The paper's link and its DOI (as "doi:10.…", to the resolver); a link that is just the
    DOI's resolver link is shown once, as the DOI."""
    out = ""
    for href in links(c):
        if c.doi and href == doi_link(c.doi):
            out += _anchor(f"https://doi.org/{quote(c.doi, safe='/')}", f"doi:{c.doi}", "doi")
        elif href.lower().startswith(("http://", "https://")):  # never javascript: etc.
            out += _anchor(href, "link", "url")
    return out


def source_card(turn: int, c: Citation, snippet: str = "") -> str:
    extra = links_html(c)
    return (
        f'<div class="src-card" id="src-{turn}-{c.number}" data-paper-id="{esc(c.paper_id)}">'
        f'<div class="src-head"><span class="src-num">{c.number}</span>'
        f'<span class="src-title">{display_title(c)}</span></div>'
        f'<div class="src-meta">{_meta_line(c.authors, c.category, c.year)}{extra}</div>'
        f'{_evidence_html(c.evidence, snippet)}'
        f'{_quotes_html(c.quotes)}'
        f'<div class="src-id">{esc(c.paper_id)}</div>'
        f'{more_button(c.paper_id)}'
        f'</div>'
    )


def more_like_message(paper_id: str) -> str:
    """What the card's "More like this" button asks: by id, so it means this card's paper
    whichever answer the card belongs to (a number would count through the latest answer)."""
    return f"More like this: id {paper_id}"


def more_button(paper_id: str) -> str:
    """Sends `more_like_message` as the next chat message (static/markers.js)."""
    return (f'<button type="button" class="src-more" data-more="{esc(more_like_message(paper_id))}" '
            f'title="Papers closest in meaning to this one">More like this</button>')


def found_list(hits: Sequence[Hit]) -> str:
    items = []
    for h in hits:
        p = h.paper
        meta = " · ".join(esc(x) for x in (p.category, p.year) if x)
        items.append(f'<li><span class="found-title">{display_title(p)}</span>'
                     f'<span class="found-meta">{meta}</span></li>')
    return "".join(items)


def _pending(found: Optional[Sequence[Hit]], pending: str) -> str:
    listing = f'<ol class="found-list">{found_list(found)}</ol>' if found else ""
    return (f'<div class="found"><div class="found-head"><span class="spinner"></span>'
            f'{esc(pending)}</div>{listing}</div>')


def _turn_sources(rec: dict, latest: bool) -> str:
    """One answer's source cards: open for the latest answer, folded for earlier ones."""
    cites: list[Citation] = rec["citations"]
    snippets: dict[str, str] = rec.get("snippets", {})
    cards = "".join(source_card(rec["turn"], c, snippets.get(c.paper_id, "")) for c in cites)
    if not cites:
        cards = '<div class="sources-empty">No paper cited in this answer.</div>'
    if any(c.title_is_derived for c in cites):
        cards += LABEL_LEGEND
    question = esc(shorten(rec["question"], 14))
    if latest:
        return (f'<div class="turn-sources latest"><div class="turn-q">Sources for “{question}”'
                f'</div>{cards}</div>')
    return (f'<details class="turn-sources"><summary>Sources for “{question}” ({len(cites)})'
            f'</summary>{cards}</details>')


def sources_panel(records: Sequence[dict], found: Optional[Sequence[Hit]] = None,
                  pending: Optional[str] = None) -> str:
    """The sources panel: the papers found for the turn in progress, then the cited sources of
    every answer, newest first (earlier answers folded)."""
    parts: list[str] = ['<div class="sources" id="sources-panel">']
    if pending is not None:
        parts.append(_pending(found, pending))
    elif not records:
        parts.append(EMPTY_PANEL)
    for i, rec in enumerate(reversed(records)):
        parts.append(_turn_sources(rec, latest=i == 0 and pending is None))
    parts.append("</div>")
    return "".join(parts)


def formats_markdown(formats: Sequence[tuple[str, Sequence[str]]]) -> str:
    """"seed listing (`.txt`, `.md`), …, RIS (`.ris`) or CSL-JSON (`.json`)" from (label,
    extensions) pairs (assistant.corpus.accepted_files)."""
    named = [f"{label} ({', '.join(f'`{e}`' for e in exts)})" for label, exts in formats]
    return ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else "".join(named)


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
        tiles.append(("Authors", facets.get("author_count", len(facets.get("authors", [])))))
        if facets.get("year_min"):
            tiles.append(("Years", f"{facets['year_min']}–{facets['year_max']}"))
    tiles_html = "".join(f'<div class="tile"><div class="tile-v" data-stat="{esc(k.lower())}">'
                         f'{esc(v)}</div><div class="tile-k">{esc(k)}</div></div>' for k, v in tiles)
    embed = esc(stats.get("embed_model") or "—")
    store = esc(Path(str(stats.get("store", ""))).name or stats.get("store", ""))
    return (f'<div class="stats"><div class="tiles">{tiles_html}</div>'
            f'<div class="stats-foot">Embeddings: <code>{embed}</code> · store: <code>{store}</code>'
            f' ({esc(stats.get("chroma", ""))} Chroma)</div></div>')
