"""The Gradio page: its `/chat` API through gradio_client, and the real page in headless Chromium.

The server is the real one (assistant.server.create_app under uvicorn) over a temporary store
with the bundled corpus, answering with the `none` backend (extracts, no model), so the page's
behaviour is tested, not the model's prose. Browser tests need Debian's /usr/bin/chromium
(`make browser`); Playwright never downloads a browser.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import httpx
import pytest

from assistant.corpus.reader import EXTENSIONS, accepted_files
from assistant.server import create_app
from conftest import seeded_assistant
from servers import BOT_MESSAGES, CHROMIUM, CHROMIUM_ARGS, GRADIO_WARNINGS, open_page, running_app

pytestmark = [pytest.mark.filterwarnings(w) for w in GRADIO_WARNINGS]

# `make screenshot` sets this to docs/screenshot.png to refresh the README's picture on purpose;
# otherwise the screenshot goes to the test's own temporary folder.
SCREENSHOT_ENV = "PAPER_ASSISTANT_SCREENSHOT"
CAUSALITY = "General Machine Learning · Causality"

GOOD_JSONL = [
    {"id": "ui-test-1", "title": "Gradient Surgery for Sparse Mixture-of-Experts Routing",
     "authors": ["Ada Lovelace", "Alan Turing"], "category": "Optimization · Testing", "year": 2024,
     "abstract": "We study routing collapse in sparse mixture-of-experts models and propose gradient "
                 "surgery, a projection of conflicting expert gradients that keeps routing balanced."},
    {"id": "ui-test-2", "title": "Tidal Forecasting with Graph Neural Operators",
     "authors": ["Grace Hopper"], "category": "Optimization · Testing", "year": 2023,
     "abstract": "Graph neural operators forecast coastal tides from sparse gauge stations, "
                 "outperforming harmonic analysis on a decade of tide-gauge records."},
]


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def pa(tmp_path_factory):
    return seeded_assistant(tmp_path_factory.mktemp("ui-store"))


@pytest.fixture(scope="module")
def server(pa):
    """URL of the live app's page: its base URL with a trailing slash."""
    with running_app(create_app(pa)) as url:
        yield url + "/"


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`make browser`) "
                    f"for the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1050})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    outside = []
    pg.on("request", lambda r: outside.append(r.url)
          if not r.url.startswith((server, "data:", "blob:")) else None)
    open_page(pg, server)
    yield pg
    context.close()
    assert not outside, f"the page fetched from outside the server: {outside}"


def ask(page, question: str) -> dict:
    """Type a question, press Enter; return timings and wait for the final source cards."""
    n_before = page.locator("#pa-chat .message-wrap [data-testid='bot']").count()
    page.fill("#pa-input textarea", question)
    t0 = time.perf_counter()
    page.press("#pa-input textarea", "Enter")
    page.wait_for_selector("#pa-sources .found, #pa-sources .latest .src-card")
    t_sources = time.perf_counter() - t0
    page.wait_for_function(
        "n => document.querySelectorAll('#pa-chat [data-testid=\"bot\"]').length > n", arg=n_before)
    t_text = time.perf_counter() - t0
    page.wait_for_selector("#pa-status:has-text('done in')")
    page.wait_for_selector("#pa-sources .latest .src-card")
    return {"sources": t_sources, "text": t_text, "final": time.perf_counter() - t0}


# ----------------------------------------------------------------------------- gradio_client

def test_gradio_client_chat_endpoint_with_follow_up(server):
    from gradio_client import Client

    client = Client(server, verbose=False)
    first = client.predict("Which paper studies backdoor attacks in federated learning?",
                           api_name="/chat")
    assert re.search(r"\[1\]", first["answer"])
    cited = first["citations"][0]
    assert cited["category"] == "Social Aspects · Security" and cited["evidence"]
    follow = client.predict("Who wrote it?", history=first["history"], api_name="/chat")
    assert "Haichang Gao" in follow["answer"]
    assert [c["paper_id"] for c in follow["citations"]] == [cited["paper_id"]]
    assert len(follow["history"]) == 4
    filtered = client.predict("Which paper uses federated learning?", categories=[CAUSALITY],
                              api_name="/chat")
    assert filtered["citations"] and all(c["category"] == CAUSALITY for c in filtered["citations"])
    client.close()


def test_chat_endpoint_refuses_an_empty_or_over_long_message(server, pa):
    from gradio_client import Client

    client = Client(server, verbose=False)
    limit = pa.settings.max_message_chars
    for message, said in (("   ", "the message is empty"),
                          ("x" * (limit + 1), f"the limit is {limit} characters")):
        with pytest.raises(Exception, match=said):
            client.predict(message, api_name="/chat")
    client.close()


def test_corpus_tab_lists_every_format_the_upload_accepts(server):
    """The Corpus tab's text and its file picker both come from the corpus readers' registry:
    RIS and CSL-JSON included, and every extension a reader is chosen by."""
    components = httpx.get(server + "config", timeout=60).json()["components"]
    props = {c["props"].get("elem_id"): c["props"] for c in components if c.get("props")}
    text, picker = props["pa-formats"]["value"], props["pa-upload"]["file_types"]
    for label, extensions in accepted_files():
        assert f"{label} (" + ", ".join(f"`{e}`" for e in extensions) + ")" in text
        assert set(extensions) <= set(picker)
    assert "RIS (`.ris`)" in text and "CSL-JSON (`.json`)" in text
    assert set(picker) == set(EXTENSIONS)


# ----------------------------------------------------------------------------- browser

TOASTS = "[data-testid='toast-body']"


@pytest.mark.browser
def test_page_says_why_it_does_not_send_an_empty_or_over_long_message(page, pa):
    n_bots = page.locator(BOT_MESSAGES).count()
    page.fill("#pa-input textarea", "   ")
    page.click("#pa-send")
    page.locator(TOASTS, has_text="the message is empty").wait_for()
    limit = pa.settings.max_message_chars
    too_long = "graph " * (limit // 6 + 1)
    page.fill("#pa-input textarea", too_long)
    page.press("#pa-input textarea", "Enter")
    page.locator(TOASTS, has_text=f"the limit is {limit} characters").wait_for()
    assert "max_message_chars" in page.locator(TOASTS).last.inner_text()
    assert page.input_value("#pa-input textarea") == too_long  # kept, to be shortened
    assert page.locator(BOT_MESSAGES).count() == n_bots  # nothing was asked

@pytest.mark.browser
def test_page_answers_with_marker_linked_to_its_source_card(page, pa):
    assert "none (extracts only)" in page.inner_text("#pa-backend")
    timings = ask(page, "Which paper studies backdoor attacks in federated learning?")
    bot = page.locator("#pa-chat [data-testid='bot']").last
    assert "vulnerable to backdoor attacks" in bot.inner_text()
    marker = bot.locator("a[href^='#src-']").first
    assert marker.inner_text() == "[1]"
    card = page.locator("#src-1-1")
    assert "Social Aspects · Security" in card.inner_text()
    assert card.locator("mark").inner_text().strip()  # the supporting sentence, highlighted
    assert card.locator(".label-badge").count() == 1  # the seed corpus has no titles: a label
    assert "derived from its abstract" in card.locator(".label-badge").get_attribute("title")
    legend = page.locator("#pa-sources .latest .label-legend")  # and the panel says what it is
    assert legend.count() == 1 and "derived from the abstract" in legend.inner_text()
    # scroll the panel away from the card, then click the marker: the card comes into view
    page.evaluate("document.querySelector('#sources-panel').scrollTop = 0")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    marker.click()
    page.wait_for_function("document.querySelector('#src-1-1').classList.contains('src-flash')")
    assert card.is_visible()
    page.wait_for_function("""() => { const r = document.querySelector('#src-1-1').getBoundingClientRect();
                                      return r.top >= 0 && r.bottom <= window.innerHeight; }""")
    assert page.url.rstrip("/") == page.url.rstrip("/").split("#")[0]  # no navigation
    print(f"\nbrowser timings (none backend): {json.dumps({k: round(v, 2) for k, v in timings.items()})}")


@pytest.mark.browser
def test_page_compare_renders_a_table_follow_up_and_exports(page, tmp_path):
    # an example button asks its question at once
    t0 = time.perf_counter()
    page.click("button.example-btn:has-text('Summarize the papers on causal inference')")
    page.wait_for_selector("#pa-status:has-text('done in')")
    timings = {"final": time.perf_counter() - t0}
    assert "causal inference" in page.locator("#pa-chat [data-testid='user']").first.inner_text()
    assert page.locator("#pa-sources .latest .src-card").count() >= 2
    ask(page, "Compare Top-W with Verbalized Sampling.")
    bot = page.locator("#pa-chat [data-testid='bot']").last
    table = bot.locator("table")
    assert table.count() == 1 and "Top-W" in table.inner_text()
    assert table.locator("a[href^='#src-2-']").count() >= 2
    # copy as Markdown: answer + numbered references
    page.click("text=Copy the last answer as Markdown")
    md = page.locator("#pa-markdown textarea").input_value()
    assert "**References**" in md and "[1]" in md and "[2]" in md
    # BibTeX of every paper cited in the conversation
    with page.expect_download() as dl:
        page.click("#pa-bib")
    bib = Path(dl.value.path()).read_text("utf-8")
    assert bib.count("@misc{") >= 4 and "author = {" in bib
    # status shows the timings (first visible sources, first words, total)
    assert "sources in" in page.inner_text("#pa-status")
    # the screenshot (docs/screenshot.png with `make screenshot`): the compare question at the
    # top of the chat, its sources beside it
    page.wait_for_timeout(500)  # let the chat's own autoscroll settle first
    page.evaluate("""() => {
        const users = document.querySelectorAll('#pa-chat [data-testid="user"]');
        const q = users[users.length - 1];
        q.scrollIntoView({block: 'start'});
        for (let el = q.parentElement; el; el = el.parentElement) {
            if (el.scrollHeight > el.clientHeight + 4 && getComputedStyle(el).overflowY !== 'visible') {
                el.scrollTop = Math.max(0, el.scrollTop - 24); break;
            }
        }
        document.querySelector('#sources-panel').scrollTop = 0;
        window.scrollTo(0, 0);
    }""")
    page.wait_for_timeout(300)
    shot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "screenshot.png")
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000
    # earlier answers' sources stay, folded; their markers still reach their cards
    assert page.locator("#pa-sources details.turn-sources").count() == 1
    first_answer_marker = page.locator("#pa-chat [data-testid='bot']").first.locator("a[href^='#src-1-']").first
    first_answer_marker.click()
    page.wait_for_function("document.querySelector('#src-1-1').closest('details').open")
    # a new conversation starts empty
    page.click("#pa-new")
    page.wait_for_function("document.querySelectorAll('#pa-chat [data-testid=\"bot\"]').length == 0")
    assert page.locator("#pa-sources .src-card").count() == 0
    print(f"\nbrowser timings summary (none backend): {json.dumps({k: round(v, 2) for k, v in timings.items()})}")


@pytest.mark.browser
def test_page_category_filter_limits_the_cited_papers(page):
    page.click("#pa-categories input")
    page.fill("#pa-categories input", "Causality")
    page.click(f"#pa-categories li[aria-label='{CAUSALITY}']")
    page.keyboard.press("Escape")
    ask(page, "Which paper uses federated learning?")
    cards = page.locator("#pa-sources .latest .src-card")
    assert cards.count() >= 1
    for i in range(cards.count()):
        assert CAUSALITY in cards.nth(i).locator(".src-meta").inner_text()


def test_author_box_ships_a_bounded_list_and_searches_the_rest(pa):
    """The author filter never holds the whole author index: the page gets the most prolific
    names, and the server answers what is typed (PageHandlers.author_choices on key_up)."""
    import gradio as gr

    from assistant.ui.handlers import AUTHOR_SUGGESTIONS, Page, PageHandlers

    handlers = PageHandlers(pa, Page(), Path("."))
    facets = handlers.facets()
    assert len(facets["authors"]) == AUTHOR_SUGGESTIONS < facets["author_count"]
    typed = gr.KeyUpData(None, {"key": "n", "input_value": "natarajan"})
    update = handlers.author_choices(["Jie Wu"], typed)
    assert update["choices"] == ["Jie Wu", "Sriraam Natarajan"]  # what is chosen stays offered


def test_the_author_boxs_names_on_load_queue_with_its_keystrokes(pa):
    """A page whose load answers late must not replace the names offered for what the user has
    typed since: the only load event that sets the box's names is queued with its keystrokes,
    one at a time, and the page sends it before any keystroke."""
    from assistant.ui import build_ui

    demo = build_ui(pa)
    box = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "pa-authors")
    fns = list(demo.fns.values())
    keys = [f for f in fns if any(t[1] == "key_up" for t in f.targets) and box in f.inputs]
    loads = [f for f in fns if any(t[1] == "load" for t in f.targets) and box in f.outputs]
    assert len(keys) == 1 and len(loads) == 1, (keys, loads)
    assert loads[0].concurrency_id == keys[0].concurrency_id
    assert loads[0].concurrency_limit == keys[0].concurrency_limit == 1


@pytest.mark.browser
def test_page_author_box_finds_a_name_it_did_not_ship(page):
    page.click("#pa-authors input")
    page.fill("#pa-authors input", "")
    page.keyboard.type("natara")  # faster than the answers come: each keystroke's own text counts
    option = page.locator("#pa-authors li[aria-label='Sriraam Natarajan']")
    option.wait_for()
    option.click()
    page.keyboard.press("Escape")
    assert "Sriraam Natarajan" in page.inner_text("#pa-authors")


def _papers_shown(page) -> int:
    return int(page.inner_text("#pa-stats [data-stat='papers']"))


@pytest.mark.browser
def test_corpus_upload_good_file_then_bad_file(page, tmp_path):
    page.click("button[role='tab']:has-text('Corpus')")
    before = _papers_shown(page)
    good = tmp_path / "more_papers.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in GOOD_JSONL) + "\n", encoding="utf-8")
    page.set_input_files("#pa-upload input[type='file']", str(good))
    # sent to the server first; the page then lists the file by name (its stem and extension
    # are separate elements, so the name is matched on the row's label, not its text)
    page.wait_for_selector("#pa-upload [aria-label='more_papers.jsonl']", timeout=60_000)
    page.click("#pa-upload-btn")
    page.wait_for_selector("#pa-upload-status .ok", timeout=60_000)
    assert _papers_shown(page) == before + 2
    assert "more_papers.jsonl: 2 papers" in page.inner_text("#pa-upload-status").replace("Added ", "")
    # the filters now offer the new category
    page.click("button[role='tab']:has-text('Chat')")
    page.click("#pa-categories input")
    page.fill("#pa-categories input", "Testing")
    assert page.locator("#pa-categories li[aria-label='Optimization · Testing']").count() == 1
    page.keyboard.press("Escape")

    page.click("button[role='tab']:has-text('Corpus')")
    bad = tmp_path / "broken.jsonl"
    bad.write_text(json.dumps({"id": "ok-1", "title": "Fine", "abstract": "A fine abstract."}) + "\n"
                   + '{"id": "bad", "title": "Broken", "abstract": \n', encoding="utf-8")
    page.locator("#pa-upload button[aria-label='Clear']").first.click()
    page.set_input_files("#pa-upload input[type='file']", str(bad))
    page.wait_for_selector("#pa-upload [aria-label='broken.jsonl']", timeout=60_000)
    page.click("#pa-upload-btn")
    page.wait_for_selector("#pa-upload-status .err", timeout=60_000)
    message = page.inner_text("#pa-upload-status")
    assert re.search(r"broken\.jsonl:2: ", message), message
    assert "Nothing from this file was added" in message
    assert _papers_shown(page) == before + 2  # unchanged by the bad file


@pytest.mark.browser
def test_page_table_downloads_as_csv_and_cards_ask_for_more_like_this(page):
    ask(page, "Make a table of the papers on causal inference: method, data")
    table = page.locator("#pa-chat [data-testid='bot']").last.locator("table")
    assert table.count() == 1 and "Method" in table.inner_text()
    with page.expect_download() as dl:
        page.click("#pa-table-csv")
    rows = Path(dl.value.path()).read_text("utf-8").splitlines()
    assert rows[0] == "number,paper_id,title,method,data" and len(rows) >= 3
    # "More like this" on the second card sends the request for that paper as the next turn
    card = page.locator("#pa-sources .latest .src-card").nth(1)
    paper_id = card.get_attribute("data-paper-id")
    n_before = page.locator("#pa-chat [data-testid='bot']").count()
    card.locator("button.src-more").click()
    page.wait_for_function(
        "n => document.querySelectorAll('#pa-chat [data-testid=\"bot\"]').length > n", arg=n_before)
    page.wait_for_selector("#pa-status:has-text('similar')")
    assert f"id {paper_id}" in page.locator("#pa-chat [data-testid='user']").last.inner_text()
    first = page.locator("#pa-sources .latest .src-card").first
    assert first.get_attribute("data-paper-id") == paper_id
    assert page.locator("#pa-sources .latest .src-card").count() >= 3


# ----------------------------------------------------------------------------- conversations kept

BACKDOOR_Q = "Which paper studies backdoor attacks in federated learning?"


def test_restore_gives_follow_ups_the_kept_papers(pa, tmp_path):
    """What the browser kept (`browser_copy`) restores the history follow-ups read, the chat,
    the sources panel and the downloads; a copy that is not a conversation restores nothing."""
    from assistant.transcript import Transcript
    from assistant.ui.handlers import Page, PageHandlers, browser_copy

    first = pa.ask(BACKDOOR_Q)
    kept = json.loads(json.dumps(browser_copy(Transcript().add(BACKDOOR_Q, first))))  # as stored
    names = ("session", "chatbot", "status", "sources", "copy_md", "bib", "table_csv",
             "conversation_md", "kept", "msg")
    handlers = PageHandlers(pa, Page(**{n: n for n in names}), tmp_path)
    restored = handlers.restore(kept)
    session = restored["session"]
    assert [m["role"] for m in restored["chatbot"]] == ["user", "assistant"]
    assert "vulnerable to backdoor attacks" in restored["chatbot"][1]["content"]
    cited = first.citations[0].paper_id
    assert f'data-paper-id="{cited}"' in restored["sources"]
    assert restored["conversation_md"]["interactive"] and restored["bib"]["interactive"]
    follow = pa.ask("Who wrote it?", session["transcript"].turns())
    assert "Haichang Gao" in follow.answer and [c.paper_id for c in follow.citations] == [cited]
    import gradio as gr

    assert handlers.restore(None) == gr.skip() == handlers.restore(browser_copy(Transcript()))


@pytest.mark.browser
def test_page_keeps_the_conversation_across_a_reload(page):
    """Ask, reload: the conversation is back (chat, sources) and "who wrote it?" still means
    the paper of the first answer; the Markdown download holds every turn and every cited
    paper; "New conversation" clears what the browser kept."""
    ask(page, BACKDOOR_Q)
    cited = page.locator("#pa-sources .latest .src-card").first.get_attribute("data-paper-id")
    page.reload()
    page.wait_for_selector("#pa-status:has-text('Conversation restored')")
    assert BACKDOOR_Q in page.locator("#pa-chat [data-testid='user']").first.inner_text()
    assert "vulnerable to backdoor attacks" in page.locator(BOT_MESSAGES).first.inner_text()
    assert page.locator(f"#pa-sources .latest .src-card[data-paper-id='{cited}']").count() == 1
    ask(page, "Who wrote it?")
    assert "Haichang Gao" in page.locator(BOT_MESSAGES).last.inner_text()
    latest = page.locator("#pa-sources .latest .src-card")
    assert [latest.nth(i).get_attribute("data-paper-id") for i in range(latest.count())] == [cited]
    # the Markdown: both turns, and a reference for every paper cited on the page
    with page.expect_download() as dl:
        page.click("#pa-conversation-md")
    md = Path(dl.value.path()).read_text("utf-8")
    assert BACKDOOR_Q in md and "Who wrote it?" in md and "Haichang Gao" in md
    cards = page.locator("#pa-sources .src-card")
    shown = {cards.nth(i).get_attribute("data-paper-id") for i in range(cards.count())}
    references = md.split("## References", 1)[1]
    assert shown and all(f"id: {paper_id}" in references for paper_id in shown)
    # a new conversation clears the browser's copy: a reload shows nothing again
    page.click("#pa-new")
    page.wait_for_function("document.querySelectorAll('#pa-chat [data-testid=\"bot\"]').length == 0")
    page.wait_for_function("(localStorage.getItem('paper-assistant-conversation') || '').length < 200")
    page.reload()
    page.wait_for_selector("#pa-input textarea")
    page.wait_for_timeout(1500)  # a restore shows well within this (it ran at once above)
    assert page.locator(BOT_MESSAGES).count() == 0
    assert "restored" not in page.inner_text("#pa-status")


def test_the_pages_key_is_kept_in_the_store_folder_owner_only(tmp_path):
    """The key of the browsers' conversation copies: made once, kept (mode 600) and read back
    by the next server on the same store; a folder that cannot hold it gives none (Gradio then
    makes a key per process)."""
    from assistant.ui.handlers import SECRET_FILE, browser_secret

    first = browser_secret(tmp_path / "store")
    assert first and len(first) >= 32 and browser_secret(tmp_path / "store") == first
    assert ((tmp_path / "store" / SECRET_FILE).stat().st_mode & 0o777) == 0o600
    assert browser_secret(tmp_path / "other") != first
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert browser_secret(blocked / "store") is None
