"""The Gradio page: chat with streamed, cited answers, a sources panel, filters, the map of the
collection (the Map tab, `map_tab.py`) and corpus upload.

    from assistant.ui import build_ui
    blocks = build_ui(pa, settings)      # mounted at "/" by assistant.server.create_app

This module lays the page out and wires its events; what the events do is in `handlers.py`
(each handler returns `{component: value}`), the HTML in `render.py`, the style and the
marker-click script in `static/`. The page's style (`CSS`), its script (`HEAD`: a click on
`[n]` brings source card `src-<turn>-<n>` into view) and theme (`make_theme()`) are handed to
`gr.mount_gradio_app`, which takes them in Gradio 6 (they moved off `gr.Blocks`).

The conversation is kept in the browser too (`page.kept`, a `gr.BrowserState`, encrypted in
localStorage with a key kept in the store's folder, `handlers.browser_secret`): a reload
restores it (`PageHandlers.restore` on load), also after the server restarted; "New
conversation" clears it.

Besides the page's own events, one public Gradio API endpoint is registered, `/chat`
(`PageHandlers.api_chat`), so scripts can use the same server through `gradio_client`.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional

import gradio as gr

from ..config import Settings
from ..conversation import MODES
from ..corpus import accepted_files
from .handlers import BROWSER_KEY, Page, PageHandlers, browser_secret, new_session
from .map_tab import MapTab
from .render import category_choices, esc, formats_markdown, sources_panel, stats_html, year_hint

__all__ = ["build_ui", "export_folder", "make_theme", "CSS", "HEAD"]

EXAMPLES = [
    ("Ask", "Which paper studies backdoor attacks in federated learning?"),
    ("Summarize", "Summarize the papers on causal inference."),
    ("Compare", "Compare Top-W with Verbalized Sampling."),
]
# what the upload accepts, from the corpus readers' registry (a new reader is offered at once)
CORPUS_TYPES = list(dict.fromkeys(ext for _, exts in accepted_files() for ext in exts))


def _static(name: str) -> str:
    return resources.files(__name__).joinpath("static", name).read_text(encoding="utf-8")


CSS = _static("style.css")
HEAD = f"<script>\n{_static('markers.js')}</script>\n<script>\n{_static('map.js')}</script>\n"


def make_theme():
    return gr.themes.Soft(
        primary_hue="indigo", secondary_hue="slate", neutral_hue="slate",
        font=["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    )


def export_folder() -> Path:
    """A new temporary folder for the page's .bib/.csv downloads, removed at interpreter exit.
    Exit is only a backstop: a SIGTERM'd uvicorn ends by re-raising the signal, which skips
    atexit, so `create_app` also removes the folder when the server shuts down."""
    folder = Path(tempfile.mkdtemp(prefix="paper-assistant-bib-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def build_ui(pa, settings: Optional[Settings] = None, exports: Optional[Path] = None) -> gr.Blocks:
    """The page. `pa` is the process-wide PaperAssistant (shared by every session); `exports`
    the folder its .bib/.csv downloads are written to (None: a new `export_folder()`).

    Mount it with `gr.mount_gradio_app(app, blocks, "/", css=CSS, head=HEAD, theme=make_theme())`
    after `blocks.queue(...)` (assistant.server does both)."""
    settings = settings or pa.settings
    page = Page()
    handlers = PageHandlers(pa, page, exports or export_folder())
    facets = handlers.facets()
    # delete_cache: uploaded corpora and exported .bib files older than a day are removed hourly
    with gr.Blocks(title="Paper Assistant", analytics_enabled=False,
                   delete_cache=(3600, 86400)) as demo:
        page.session = gr.State(new_session)  # called per page load: each session its own
        page.kept = gr.BrowserState(None, storage_key=BROWSER_KEY,  # restored on load
                                    secret=browser_secret(settings.store_dir))
        _header(pa)
        with gr.Tabs():
            with gr.Tab("Chat", id="chat"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=7, min_width=420):
                        _chat_column(page)
                    with gr.Column(scale=5, min_width=340):
                        _sources_column(page, facets, int(settings.k))
            with gr.Tab("Map", id="map") as map_tab:
                map_view = MapTab(pa)
                map_view.layout()
            with gr.Tab("Corpus", id="corpus"):
                _corpus_tab(page, stats_html(handlers.stats(), facets))
        _wire(demo, page, handlers)
        map_view.wire(map_tab, page.session)
    return demo


def _header(pa) -> None:
    gr.HTML(
        f'<div id="pa-header"><div><h1>Paper Assistant</h1>'
        f'<div class="sub">Ask about the papers in the collection, get a summary of a topic, or '
        f'compare two papers. Every claim cites its paper <b>[n]</b>; click a marker to see '
        f'the supporting sentence.</div></div>'
        f'<div class="backend" id="pa-backend" title="The language model writing the answers">'
        f'Answer engine: <b>{esc(pa.backend_label())}</b></div></div>',
        js_on_load=None)


def _chat_column(page: Page) -> None:
    page.chatbot = gr.Chatbot(
        elem_id="pa-chat", label="Conversation", height=560, show_label=False, layout="bubble",
        buttons=[], feedback_options=None, sanitize_html=True,
        latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                          {"left": "$", "right": "$", "display": False}],
        placeholder="**Ask about the papers in the collection.**<br>"
                    "Try one of the examples below.")
    page.status = gr.Markdown("", elem_id="pa-status")
    with gr.Row():
        page.msg = gr.Textbox(placeholder="Ask about the papers, ask for a summary or a "
                                          "comparison… (Enter to send)",
                              show_label=False, scale=8, autofocus=True, elem_id="pa-input",
                              container=False, lines=1, max_lines=6)
        page.send = gr.Button("Send", variant="primary", scale=1, min_width=90, elem_id="pa-send")
    with gr.Row(elem_classes="example-row"):
        page.examples = [(gr.Button(f"{label}: {text}", size="sm", variant="secondary",
                                    elem_classes="example-btn"), text) for label, text in EXAMPLES]
    with gr.Row():
        page.new = gr.Button("New conversation", size="sm", elem_id="pa-new")
        page.bib = gr.DownloadButton("Export cited papers (BibTeX)", size="sm", interactive=False,
                                     elem_id="pa-bib")
        # the latest answer's literature table ("Make a table of the papers on X: method, data")
        page.table_csv = gr.DownloadButton("Download table (CSV)", size="sm", interactive=False,
                                           elem_id="pa-table-csv")
        # every question and answer, then the references (transcript_markdown, as the CLI's)
        page.conversation_md = gr.DownloadButton("Download conversation (Markdown)", size="sm",
                                                 interactive=False, elem_id="pa-conversation-md")
    with gr.Accordion("Copy the last answer as Markdown (with references)", open=False):
        page.copy_md = gr.Textbox("", lines=8, max_lines=18, buttons=["copy"], show_label=False,
                                  interactive=False, placeholder="Ask something first.",
                                  elem_id="pa-markdown")


def _sources_column(page: Page, facets: dict, default_k: int) -> None:
    gr.Markdown("#### Sources")
    page.sources = gr.HTML(sources_panel([]), elem_id="pa-sources", js_on_load=None)
    with gr.Accordion("Answer settings & filters", open=True):
        page.mode = gr.Radio(list(MODES), value="auto", elem_id="pa-mode",
                             label="Mode (auto detects question, summary, compare, similar or table)")
        page.k = gr.Slider(1, 20, value=default_k, step=1, label="Papers to use (k)",
                           elem_id="pa-k")
        with gr.Row():
            page.categories = gr.Dropdown(
                category_choices(facets["categories"]), value=[], multiselect=True,
                label="Categories", info="An area includes its sub-categories",
                elem_id="pa-categories", min_width=200)
            # a searchable box: it ships the most prolific names and asks the server for
            # others as the user types (PageHandlers.author_choices), never the whole index
            page.authors = gr.Dropdown(
                facets["authors"], value=[], multiselect=True, allow_custom_value=True,
                filterable=True, label="Authors", info="Type any part of a name",
                elem_id="pa-authors", min_width=200)
        with gr.Row():
            page.year_min = gr.Textbox("", label="From year", elem_id="pa-year-min",
                                       placeholder=year_hint(facets, "year_min"), min_width=120)
            page.year_max = gr.Textbox("", label="To year", elem_id="pa-year-max",
                                       placeholder=year_hint(facets, "year_max"), min_width=120)


def _corpus_tab(page: Page, stats: str) -> None:
    gr.Markdown(f"Add papers to the collection from a file in one of these formats: "
                f"{formats_markdown(accepted_files())}. A file is checked completely before "
                f"anything of it is stored, so a bad file changes nothing; re-adding a file "
                f"updates its papers in place.", elem_id="pa-formats")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            page.upload_file = gr.File(label="Corpus file", file_types=CORPUS_TYPES,
                                       type="filepath", elem_id="pa-upload")
            page.upload_button = gr.Button("Add to the collection", variant="primary",
                                           elem_id="pa-upload-btn")
            page.upload_status = gr.HTML("", elem_id="pa-upload-status", js_on_load=None)
        with gr.Column(scale=1):
            gr.Markdown("#### Collection")
            page.stats = gr.HTML(stats, elem_id="pa-stats", js_on_load=None)


def _wire(demo: gr.Blocks, page: Page, h: PageHandlers) -> None:
    # Every way of asking shares one concurrency group: at most the queue's
    # default_concurrency_limit answers are produced at once, whatever triggered them.
    chat = dict(fn=h.respond, inputs=page.chat_inputs, outputs=page.chat_outputs,
                api_visibility="private", show_progress="hidden", concurrency_id="chat")
    for trigger in (page.msg.submit, page.send.click):
        trigger(**chat)
    for button, text in page.examples:
        button.click(lambda t=text: t, None, page.msg, api_visibility="private",
                     queue=False).then(**chat)
    for clear in (page.new.click, page.chatbot.clear):  # the chat's own bin icon starts afresh
        clear(h.reset, None, page.conversation_outputs, api_visibility="private", queue=False)
    page.upload_button.click(h.upload, [page.upload_file],
                             [page.stats, page.upload_status, *page.filters],
                             api_visibility="private", concurrency_limit=1,
                             concurrency_id="corpus")
    demo.load(h.on_load, None, [f for f in (*page.filters, page.stats) if f is not page.authors],
              api_visibility="private")
    demo.load(h.restore, [page.kept], page.conversation_outputs, api_visibility="private",
              show_progress="hidden")
    # Every keystroke is sent with its own text, one at a time in the order typed, so the last
    # answer is for the last text. Gradio's "always_last" re-sends the first deferred keystroke's
    # text instead (6.31), and a fast typist was offered names for "n" when they had typed "natara".
    page.authors.key_up(h.author_choices, [page.authors], page.authors, api_visibility="private",
                        show_progress="hidden", trigger_mode="multiple", concurrency_limit=1,
                        concurrency_id="author-box")
    demo.load(h.authors_on_load, [page.authors], page.authors, api_visibility="private",
              show_progress="hidden", concurrency_limit=1, concurrency_id="author-box")
    gr.api(h.api_chat, api_name="chat", concurrency_id="chat")
