"""The page's Map tab: every paper as a point (assistant/map.py), coloured by labelled theme.

    mt = MapTab(pa)
    mt.layout()                   inside `with gr.Tab("Map")`: the plot, the card, a hidden picker
    mt.wire(tab, session)         the tab's select event and the picker

The points travel once per store revision and browser session, as JSON in a data attribute of
`#pa-map` (`map_data`); the papers cited by the latest answer travel separately, as a few
points in `#pa-map-marks` (`marks_html`), refreshed each time the tab is opened. While the map
of the current revision is being built (after an upload, or a store whose cached map is
stale), the tab shows the build's progress until it is ready. The drawing (canvas), zoom and
pan, the hover tooltip (title and authors) and the click are `static/map.js`. A click
puts the paper id in a hidden textbox and presses a hidden button: `MapTab.card` answers with
the paper's card, whose "Ask about this" and "More like this" buttons send a chat message on
the Chat tab (the chat's own handler answers it).
"""
from __future__ import annotations

import json
import logging
from typing import Iterator, Optional

import gradio as gr

from ..render import author_line
from .render import display_title, esc, more_like_message, shorten

log = logging.getLogger("assistant.ui")

# 12 distinguishable colours (Tableau 10 + two), one per theme (map_max_clusters ≤ 12 by default;
# beyond, colours repeat)
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#17becf", "#8c564b"]
SCALE = 10000  # coordinates travel as integers 0..SCALE
POLL_SECONDS = 0.5  # how often the tab reports a map build's progress
TITLE_CHARS = 140
EMPTY_CARD = ('<div class="map-card-empty">Hover over a point for its title and authors; click '
              'it for its card. Papers cited by the latest answer are ringed and numbered.</div>')


def colour(cluster: int) -> str:
    return PALETTE[cluster % len(PALETTE)]


def ask_message(title: str) -> str:
    """What "Ask about this" sends: a question naming the paper by its title, which the
    relevance gate ties to that paper even when the title is a label derived from the abstract."""
    return f"What is the paper “{title}” about?"


def _short(text: str, chars: int = TITLE_CHARS) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "…"


def map_data(view) -> dict:
    """The points and themes of a MapView as compact JSON (columns, integer coordinates)."""
    pts = view.points
    return {
        "revision": view.revision, "total": view.total, "shown": len(pts),
        "sampled": view.sampled, "method": view.method,
        "clusters": [{**c.to_json(), "color": colour(c.id)} for c in view.clusters],
        "x": [int(round(p.x * SCALE)) for p in pts], "y": [int(round(p.y * SCALE)) for p in pts],
        "c": [p.cluster for p in pts], "id": [p.paper_id for p in pts],
        "t": [_short(p.title) for p in pts],
        "a": [" · ".join(x for x in (author_line(p.authors, 3) or "unknown authors",
                                      str(p.year or "")) if x) for p in pts],
    }


def map_html(view, max_points: int) -> str:
    """The plot: a canvas (drawn by static/map.js from data-map), the caption, the legend."""
    if view is None or not view.points:
        return '<div id="pa-map" class="pa-map empty">The collection is empty: add papers first.</div>'
    data = map_data(view)
    shown = len(view.points)
    caption = (f"{view.total:,} papers" if not view.sampled else
               f"Showing {shown:,} of {view.total:,} papers: a sample of the same share of every "
               f"theme (the page draws at most {max_points:,}; themes and layout use every paper)")
    zoom = ('<div class="map-zoom"><button type="button" data-zoom="in" title="Zoom in">+</button>'
            '<button type="button" data-zoom="out" title="Zoom out">−</button>'
            '<button type="button" data-zoom="reset" title="Show the whole map">Reset</button></div>')
    legend = "".join(
        f'<li data-cluster="{c.id}"><span class="swatch" style="background:{colour(c.id)}"></span>'
        f'{esc(c.label)} <span class="n">{c.size:,}</span></li>' for c in view.clusters)
    return (f'<div id="pa-map" class="pa-map" data-revision="{esc(view.revision)}" '
            f'data-map="{esc(json.dumps(data, ensure_ascii=False, separators=(",", ":")))}">'
            f'<div class="map-caption">{esc(caption)} · {esc(placement(view.method))}; colours are '
            f'themes, named by the phrases that set them apart · scroll to zoom, drag to pan, '
            f'double-click to see it whole</div>'
            f'<div class="map-stage"><canvas class="map-canvas" aria-label="Map of the collection">'
            f'</canvas><div class="map-tip" hidden></div>{zoom}</div>'
            f'<ul class="map-legend">{legend}</ul></div>')


def placement(method: str) -> str:
    """How the points are placed, for the caption."""
    if method == "tsne":
        return ("each point is a paper, placed by t-SNE next to the papers closest to it in "
                "meaning (distances between far-apart groups mean little)")
    return "each point is a paper, placed by the two principal components of its embedding (PCA)"


def progress_html(build) -> str:
    """The tab while the map is being built: what is being done and how far."""
    share = 0.0 if build.error else build.share
    return (f'<div id="pa-map" class="pa-map loading" data-progress="{share:.3f}">'
            f'<div class="map-progress"><progress max="1" value="{share:.3f}"></progress>'
            f'<span>{esc(build.describe())}</span></div></div>')


def marks_html(view, cited: list) -> str:
    """The latest answer's cited papers that are on the map: number, id, coordinates, title."""
    where = {p.paper_id: p for p in view.points} if view is not None else {}
    marks = []
    for c in cited:
        p = where.get(c.paper_id)
        if p is not None:
            marks.append({"n": c.number, "id": p.paper_id, "x": int(round(p.x * SCALE)),
                          "y": int(round(p.y * SCALE)), "c": p.cluster, "t": _short(p.title),
                          "a": author_line(p.authors, 3)})
    note = (f"{len(marks)} paper{'s' * (len(marks) != 1)} cited by the latest answer, ringed"
            if marks else "")
    return (f'<div id="pa-map-marks-data" data-marks="{esc(json.dumps(marks, ensure_ascii=False))}">'
            f'{esc(note)}</div>')


def card_html(paper, theme: str = "") -> str:
    """A paper's card on the Map tab, with "Ask about this" and "More like this"."""
    if paper is None:
        return '<div class="map-card-empty">That paper is no longer in the collection.</div>'
    meta = " · ".join(esc(x) for x in (author_line(paper.authors) or "unknown authors",
                                       paper.category, paper.year) if x)
    theme_line = f'<div class="map-theme">Theme: {esc(theme)}</div>' if theme else ""
    return (f'<div class="src-card map-card" data-paper-id="{esc(paper.paper_id)}">'
            f'<div class="src-head"><span class="src-title">{display_title(paper)}</span></div>'
            f'<div class="src-meta">{meta}</div>{theme_line}'
            f'<div class="evidence">{esc(shorten(paper.abstract, 90))}</div>'
            f'<div class="src-id">{esc(paper.paper_id)}</div>'
            f'<div class="map-actions">'
            f'<button type="button" class="map-send map-ask" data-send="{esc(ask_message(paper.title))}" '
            f'title="Ask about this paper in the chat">Ask about this</button>'
            f'<button type="button" class="map-send map-more" '
            f'data-send="{esc(more_like_message(paper.paper_id))}" '
            f'title="Papers closest in meaning to this one, in the chat">More like this</button>'
            f'</div></div>')


def latest_citations(session: Optional[dict]) -> list:
    records = (session or {}).get("records") or []
    return list(records[-1]["citations"]) if records else []


class MapTab:
    """The Map tab's components and handlers (one per page; state per browser session)."""

    def __init__(self, pa):
        self.pa = pa
        self.plot = self.marks = self.card = self.pick = self.pick_button = self.sent = None

    def layout(self) -> None:
        with gr.Row(equal_height=False):
            with gr.Column(scale=8, min_width=480):
                self.plot = gr.HTML('<div id="pa-map" class="pa-map loading">Open this tab to '
                                    'draw the map…</div>', elem_id="pa-map-plot", js_on_load=None)
            with gr.Column(scale=4, min_width=300):
                self.marks = gr.HTML(marks_html(None, []), elem_id="pa-map-marks", js_on_load=None)
                self.card = gr.HTML(EMPTY_CARD, elem_id="pa-map-card", js_on_load=None)
        # the canvas's click, as an event the server can answer (static/map.js fills and presses them)
        self.pick = gr.Textbox("", visible="hidden", elem_id="pa-map-pick")
        self.pick_button = gr.Button("show", visible="hidden", elem_id="pa-map-pick-btn")
        self.sent = gr.State(None)  # the store revision whose points this session already has

    def wire(self, tab, session) -> None:
        tab.select(self.open, [session, self.sent], [self.plot, self.marks, self.sent],
                   api_visibility="private", show_progress="minimal", concurrency_id="map",
                   concurrency_limit=2)
        self.pick_button.click(self.show_card, [self.pick], [self.card], api_visibility="private",
                               queue=False, show_progress="hidden")

    # ------------------------------------------------------------------ handlers
    def view(self, highlight=()):
        cmap = self.pa.collection_map()
        return cmap.view(self.pa.store.papers(), self.pa.settings.map_max_points, highlight)

    def open(self, session, sent) -> Iterator[dict]:
        """The map (unless this session already has this revision's) and the latest answer's
        cited papers on it; while the map is being built, the build's progress first."""
        cited = latest_citations(session)
        try:
            build = self.pa.map_progress()
            while build is not None and not build.done.wait(POLL_SECONDS):
                yield {self.plot: progress_html(build), self.marks: marks_html(None, []),
                       self.sent: None}
            view = self.view([c.paper_id for c in cited])
        except Exception as exc:  # a store problem: say so on the tab, keep the page alive
            log.exception("could not build the map")
            yield {self.plot: f'<div id="pa-map" class="pa-map empty">⚠ The map could not be '
                              f'built: {esc(type(exc).__name__)}: {esc(exc)}</div>',
                   self.marks: marks_html(None, []), self.sent: None}
            return
        plot = gr.skip() if sent == view.revision else map_html(view, self.pa.settings.map_max_points)
        yield {self.plot: plot, self.marks: marks_html(view, cited), self.sent: view.revision}

    def show_card(self, paper_id):
        paper_id = (paper_id or "").strip()
        if not paper_id:
            return {self.card: EMPTY_CARD}
        paper = self.pa.store.paper(paper_id)
        theme = ""
        try:
            cmap = self.pa.collection_map()
            row = cmap.index().get(paper_id)
            if row is not None:
                theme = cmap.clusters[int(cmap.cluster[row])].label
        except Exception:
            log.exception("could not read the map for a card")
        return {self.card: card_html(paper, theme)}


def standalone_html(view, max_points: int) -> str:
    """The map as a page of its own (`paper-assistant map --out map.html`): the same markup,
    style and script as the Map tab, without the server (a click shows nothing more)."""
    from importlib import resources

    static = resources.files(__package__).joinpath("static")
    css = static.joinpath("style.css").read_text(encoding="utf-8")
    js = static.joinpath("map.js").read_text(encoding="utf-8")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Map of the collection</title>"
            f"<style>body{{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}}{css}</style>"
            f"</head><body><h2>Map of the collection</h2>{map_html(view, max_points)}"
            f"{marks_html(view, [])}<script>{js}</script></body></html>")
