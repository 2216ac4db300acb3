"""`paper-assistant`: a thin command-line shell over `assistant.PaperAssistant`."""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from .client import ServerError, connect, given_fields
from .config import SERVE_HOST, SERVE_PORT, load_settings
from .conversation import InputError, check_message, extend, make_filters, parse_mode
from .render import answer_payload, author_line, hits_json, reading_notice, references_markdown
from .transcript import (NEW_SAVED, NO_FOLDER, NOT_SAVING, RESUMED, SAME_FILE, SAVE_EXISTS,
                         WRITE_FAILED, Transcript, TranscriptError, load_transcript,
                         save_markdown, save_transcript)
from .types import Turn

if TYPE_CHECKING:  # imported when first needed (in_process): see there
    from .library import PaperAssistant

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Answers questions about a collection of paper abstracts, with citations.")
err = Console(stderr=True)
out = Console()
SKIPPED_SHOWN = 5  # records a reader left out on purpose, listed after an ingest; the rest counted

# -- options shared by the commands
StoreOpt = Annotated[Optional[Path], typer.Option("--store", help="Store folder (default: vectorstore/).")]
ChromaOpt = Annotated[Optional[str], typer.Option("--chroma-url", help="Use a Chroma server, http://HOST:PORT.")]
PresetOpt = Annotated[str, typer.Option("--preset", help="Named settings preset: default, extractive, openai.")]
BackendOpt = Annotated[Optional[str], typer.Option("--backend", help="LLM backend: local, openai or none.")]
ModelPathOpt = Annotated[Optional[Path], typer.Option("--model-path", help="Any GGUF file for the local backend.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
KOpt = Annotated[Optional[int], typer.Option("-k", help="Number of papers to use.")]
CategoryOpt = Annotated[Optional[list[str]], typer.Option("--category", help="Only this category (or area); repeatable.")]
AuthorOpt = Annotated[Optional[list[str]], typer.Option("--author", help="Only papers by an author matching this; repeatable.")]
YearFromOpt = Annotated[Optional[int], typer.Option("--year-from", help="Only papers from this year on.")]
YearToOpt = Annotated[Optional[int], typer.Option("--year-to", help="Only papers up to this year.")]
ServerOpt = Annotated[Optional[str], typer.Option("--server", envvar="PAPER_ASSISTANT_SERVER", show_default=False, help=f"Answer through the `paper-assistant serve` at this URL (or env PAPER_ASSISTANT_SERVER). Default: the one at http://{SERVE_HOST}:{SERVE_PORT} when it runs with the same store and model.")]
NoServerOpt = Annotated[bool, typer.Option("--no-server", help="Answer in this process even when a server runs.")]


def cli_settings(store=None, chroma_url=None, preset="default", backend=None, model_path=None,
                 **overrides):
    return load_settings(preset, store_dir=store, chroma_url=chroma_url,
                         llm_backend=backend, model_path=model_path, **overrides)


def in_process(settings) -> PaperAssistant:
    """The assistant in this process. Imported here, not at the top: it brings the index, the
    embedder and llama-index (about a second), which `ask` through a running server never needs."""
    from .library import PaperAssistant

    return PaperAssistant(settings)


def make_assistant(store=None, chroma_url=None, preset="default", backend=None,
                   model_path=None, **overrides) -> PaperAssistant:
    return in_process(cli_settings(store, chroma_url, preset, backend, model_path, **overrides))


def answering(settings, server: Optional[str], no_server: bool, compared=()):
    """What answers `ask` and `chat`: a running server when there is a fitting one (saying so on
    stderr), else a PaperAssistant in this process (assistant/client.py)."""
    if no_server:
        return in_process(settings)
    with friendly_errors():
        remote, message = connect(settings, server, compared)
    if remote is not None:
        err.print(f"[dim]{escape(message)}[/]", highlight=False)
        return remote
    if message:
        err.print(f"[yellow]note:[/] {escape(message)}", highlight=False)
    return in_process(settings)


def known_errors() -> tuple[type[Exception], ...]:
    """The failures a command reports in one line. Read when a failure reaches the handler: the
    store's errors live with the index, which a command may never have imported."""
    from .corpus import CorpusError
    from .index import StoreError

    return (CorpusError, StoreError, InputError, ServerError)


@contextmanager
def friendly_errors():
    """Known failures (bad input included) print one clear line and exit 2 instead of a traceback."""
    try:
        yield
    except known_errors() as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2)


def stdin_items():
    """JSON Lines from stdin (blank lines skipped), for the batch form of search."""
    for line in sys.stdin:
        if line.strip():
            yield json.loads(line)


def checked_turns(turns: list, limit: int) -> list[str]:
    """The turns of one conversation, each through `check_message`; InputError for the first
    bad one, naming it when there are several."""
    checked = []
    for n, turn in enumerate(turns, 1):
        try:
            if not isinstance(turn, str):  # JSON on stdin may hold anything
                raise InputError("a turn must be text", "invalid_item")
            checked.append(check_message(turn, limit))
        except InputError as exc:
            raise InputError(f"turn {n}: {exc}" if len(turns) > 1 else str(exc), exc.code) from None
    return checked


def stdin_conversations(limit: int):
    """(id, turns) per JSON Lines item {id, turns} on stdin (blank lines skipped); `turns` is
    an InputError for a line that is not such an item or has an empty or over-long turn."""
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            yield None, InputError(f"line {number} is not JSON", "invalid_json")
            continue
        turns = item.get("turns") if isinstance(item, dict) else None
        key = item.get("id") if isinstance(item, dict) else None
        if not isinstance(turns, list) or not turns:
            yield key, InputError(f'line {number}: an item needs "turns", a list of messages',
                                  "invalid_item")
            continue
        try:
            yield key, checked_turns(turns, limit)
        except InputError as exc:
            yield key, exc


def mode_option(mode: Optional[str]) -> Optional[str]:
    try:
        return parse_mode(mode)
    except InputError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mode") from None


@contextmanager
def rich_progress(path: Path):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=err, transient=False) as bar:
        task = bar.add_task(f"ingest {Path(path).name}", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def follow_map_build(build, quiet: bool) -> None:
    """Wait for the map build an ingest started (the process would end it), with a progress
    bar unless quiet; a failed build is reported, the ingest stands."""
    if build is None:
        return
    if quiet:
        build.done.wait()
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                      TimeElapsedColumn(), console=err, transient=False) as bar:
            task = bar.add_task("map", total=1.0)
            while not build.done.wait(0.25):
                bar.update(task, completed=build.share, description=f"map: {build.stage}")
            bar.update(task, completed=1.0, description="map")
    if build.error:
        err.print(f"[yellow]the map could not be built[/] ({build.error}); `paper-assistant map` "
                  f"tries again", highlight=False)


@app.command()
def ingest(paths: Annotated[list[Path], typer.Argument(help="Corpus files: seed listing .txt, .jsonl, .json (incl. CSL-JSON), .csv, .bib, .ris, a Zotero library (zotero.sqlite).")],
           skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Load the good records and report the bad ones.")] = False,
           rebuild: Annotated[bool, typer.Option("--rebuild", help="Empty the store first.")] = False,
           store: StoreOpt = None, chroma_url: ChromaOpt = None, quiet: Annotated[bool, typer.Option("--quiet")] = False):
    """Read corpus files into the store (idempotent: re-ingesting updates in place)."""
    pa = make_assistant(store, chroma_url)
    with friendly_errors():
        reports = pa.ingest(paths, skip_bad=skip_bad, rebuild=rebuild,
                            progress_factory=None if quiet else rich_progress, background_map=True)
        follow_map_build(pa.map_build, quiet)
    for r in reports:
        u = r.upsert
        err.print(f"{r.path}: {r.papers} papers ({u.papers_new} new, {u.papers_updated} updated, "
                  f"{u.papers_unchanged} unchanged; {u.chunks_embedded} chunks embedded)"
                  + (f"; {len(r.skipped)} left out" if r.skipped else ""), highlight=False)
        for bad in r.bad:
            err.print(f"  [yellow]skipped[/] {bad}", highlight=False)
        for left_out in r.skipped[:SKIPPED_SHOWN]:  # a format may leave out thousands
            err.print(f"  [dim]left out[/] {left_out}", highlight=False)
        if len(r.skipped) > SKIPPED_SHOWN:
            err.print(f"  [dim]left out[/] … and {len(r.skipped) - SKIPPED_SHOWN} more "
                      f"({len(r.skipped)} in all)", highlight=False)
    stats = pa.stats()
    err.print(f"store {stats['store']}: {stats['papers']} papers, {stats['chunks']} chunks")


@app.command()
def search(query: Annotated[Optional[str], typer.Argument(help="What to look for. With --json and no QUERY: JSON Lines {id, query} on stdin.")] = None,
           k: Annotated[int, typer.Option("-k", help="Number of papers.")] = 10,
           as_json: JsonOpt = False, category: CategoryOpt = None, author: AuthorOpt = None,
           year_from: YearFromOpt = None, year_to: YearToOpt = None,
           store: StoreOpt = None, chroma_url: ChromaOpt = None):
    """Hybrid (BM25 + dense) search over the corpus; one line per paper."""
    pa = make_assistant(store, chroma_url)
    filters = make_filters(category, author, year_from, year_to)
    with friendly_errors():
        if query is None:
            if not as_json:
                raise typer.BadParameter("give a QUERY, or --json to read queries from stdin")
            for item in stdin_items():
                hits = pa.search(item["query"], k=k, filters=filters)
                print(json.dumps({"id": item.get("id"), "results": hits_json(hits)},
                                 ensure_ascii=False), flush=True)
            return
        hits = pa.search(query, k=k, filters=filters)
    if as_json:
        print(json.dumps({"results": hits_json(hits)}, ensure_ascii=False))
        return
    if not hits:
        out.print("No matching papers.")
    for i, h in enumerate(hits, 1):
        p = h.paper
        meta = " · ".join(str(x) for x in (p.category, p.year) if x)
        out.print(f"[bold]{i}. {p.title}[/]  [dim]{h.score:.4f}[/]", highlight=False)
        out.print(f"   {author_line(p.authors, 3)}" + (f"  [dim]{meta}[/]" if meta else ""),
                  highlight=False)
        out.print(f"   [dim]{h.snippet[:240]}{'…' if len(h.snippet) > 240 else ''}[/]", highlight=False)


@app.command()
def similar(paper_id: Annotated[str, typer.Argument(help="Id of a paper in the store (see `search --json`).")],
            k: Annotated[Optional[int], typer.Option("--k", "-k", help="Number of papers (default 5).")] = None,
            as_json: JsonOpt = False, store: StoreOpt = None, chroma_url: ChromaOpt = None):
    """More like this: the papers nearest PAPER_ID by meaning, with the sentence linking each."""
    pa = make_assistant(store, chroma_url)
    with friendly_errors():
        results = pa.similar(paper_id, k=k)
    if as_json:
        print(json.dumps({"paper_id": paper_id, "results": [r.to_json() for r in results]},
                         ensure_ascii=False))
        return
    for i, r in enumerate(results, 1):
        out.print(f"[bold]{i}. {r.paper.title}[/]  [dim]{r.score:.3f} · {r.paper.paper_id}[/]",
                  highlight=False)
        out.print(f"   [dim]{r.link}[/]", highlight=False)


@app.command("map")
def map_command(as_json: JsonOpt = False,
                points: Annotated[bool, typer.Option("--points", help="With --json: every paper's x, y and theme too.")] = False,
                out_html: Annotated[Optional[Path], typer.Option("--out", help="Also write the map as a standalone HTML page (hover, themes; no server needed).")] = None,
                rebuild: Annotated[bool, typer.Option("--rebuild", help="Build it again even if the cached one is current.")] = False,
                store: StoreOpt = None, chroma_url: ChromaOpt = None):
    """The map of the collection: its themes (labelled by their distinctive terms) with sizes,
    from the 2-D layout the page's Map tab draws (cached with the store, rebuilt after ingest)."""
    pa = make_assistant(store, chroma_url)
    with friendly_errors():
        cmap = pa.collection_map(rebuild=rebuild)
        if out_html is not None:
            from .ui.map_tab import standalone_html  # Gradio's seconds of import, only for --out

            view = cmap.view(pa.store.papers(), pa.settings.map_max_points)
            out_html.write_text(standalone_html(view, pa.settings.map_max_points), encoding="utf-8")
    if as_json:
        print(json.dumps(cmap.to_json(with_points=points), ensure_ascii=False))
        return
    how = ("t-SNE" if cmap.method == "tsne" else
           f"PCA (axes explain {sum(cmap.explained):.0%} of the variance)")
    out.print(f"{cmap.size:,} papers · {len(cmap.clusters)} themes · layout {how} · built in "
              f"{cmap.build_seconds:.1f} s", highlight=False)
    for c in cmap.clusters:
        out.print(f"{c.id + 1:>3}. {c.label}  [dim]{c.size:,} papers · centre ({c.x:.2f}, {c.y:.2f})[/]",
                  highlight=False)
    if out_html is not None:
        out.print(f"wrote {out_html}", highlight=False)


@app.command("eval")
def eval_command(n: Annotated[Optional[int], typer.Option("--n", help="Papers to ask for (default 100).")] = None,
                 seed: Annotated[Optional[int], typer.Option("--seed", help="Sample seed (default 0).")] = None,
                 tune: Annotated[bool, typer.Option("--tune", help="Try fusion weights; store the best beside the store.")] = False,
                 as_json: JsonOpt = False, store: StoreOpt = None, chroma_url: ChromaOpt = None):
    """Recall@1/5/10 and MRR of BM25, dense and hybrid search on your own corpus, no labels needed:
    each sampled paper is searched for by its title (or, without a real title, a later sentence
    of its abstract)."""
    pa = make_assistant(store, chroma_url)
    with friendly_errors():
        try:
            report = pa.evaluate(n=n, seed=seed, tune=tune)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--tune") from None
    if as_json:
        print(report.model_dump_json())
        return
    _print_eval(report)


def _scores_table(title: str, first: str, rows: dict):
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column(first)
    cutoffs = sorted(next(iter(rows.values())).recall) if rows else []
    for c in cutoffs:
        table.add_column(f"R@{c}", justify="right")
    table.add_column("MRR", justify="right")
    for name, s in rows.items():
        table.add_row(str(name), *(f"{s.recall[c]:.3f}" for c in cutoffs), f"{s.mrr:.3f}")
    return table


def _print_eval(report) -> None:
    out.print(f"{report.queries} queries ({report.titles} titles, {report.queries - report.titles} "
              f"abstract sentences; {report.skipped} papers skipped), seed {report.seed}",
              highlight=False)
    out.print(_scores_table(f"search modes (hybrid α = {report.hybrid_alpha:g})", "mode", report.modes))
    if report.tuning:
        out.print(_scores_table("hybrid by dense weight α", "α", report.tuning))
        out.print(f"best α = {report.best_alpha:g}, saved to {report.saved_to}", highlight=False)


@app.command()
def stats(store: StoreOpt = None, chroma_url: ChromaOpt = None,
          as_json: JsonOpt = False):
    """Papers, chunks, embedding model and store location."""
    pa = make_assistant(store, chroma_url)
    with friendly_errors():
        s = pa.stats()
    if as_json:
        print(json.dumps(s))
        return
    for key, value in s.items():
        out.print(f"{key:12s} {value}", highlight=False)


ModeOpt = Annotated[Optional[str], typer.Option("--mode", help="question, summary, compare, similar (more like a paper) or table (a literature table; with --json its rows) (default: detected).")]


def _print_answer(answer, streamed: bool) -> None:
    """The checked answer (it may differ from the streamed draft), then the references."""
    from rich.markdown import Markdown

    if not streamed:
        out.print(Markdown(answer.answer))
    for notice in answer.notices:
        err.print(f"[yellow]note:[/] {notice}", highlight=False)
    if answer.citations:
        out.print()
        out.print(Markdown(references_markdown(answer.citations)))


def _run_turn(pa, message: str, history: list, mode, filters, k, as_json: bool):
    """One turn: stream to the terminal (or collect for JSON); returns the final Answer."""
    from rich.live import Live
    from rich.markdown import Markdown

    if as_json:
        return pa.ask(message, history, mode=mode, filters=filters, k=k)
    final, draft = None, ""
    with Live(console=out, refresh_per_second=12, transient=True) as live:
        for kind, payload in pa.ask_stream(message, history, mode=mode, filters=filters, k=k):
            if kind in ("retrieved", "reading") and payload:
                titles = "; ".join(h.paper.title[:50] for h in payload[:5])
                head = "found" if kind == "retrieved" else reading_notice(len(payload))
                live.update(f"[dim]{head}: {titles}[/]")
            elif kind == "token":
                draft += payload
                live.update(Markdown(draft))
            elif kind == "final":
                final = payload
    out.print(Markdown(final.answer))
    _print_answer(final, streamed=True)
    return final


@app.command()
def ask(questions: Annotated[Optional[list[str]], typer.Argument(help="Turns of one conversation. With --json and none: JSON Lines {id, turns} on stdin.")] = None,
        as_json: JsonOpt = False, mode: ModeOpt = None, k: KOpt = None,
        category: CategoryOpt = None, author: AuthorOpt = None,
        year_from: YearFromOpt = None, year_to: YearToOpt = None,
        backend: BackendOpt = None, model_path: ModelPathOpt = None, preset: PresetOpt = "default",
        store: StoreOpt = None, chroma_url: ChromaOpt = None,
        server: ServerOpt = None, no_server: NoServerOpt = False):
    """Ask questions; each argument is the next turn of one conversation.

    Answered by a running `paper-assistant serve` when one fits (--no-server: never)."""
    settings = cli_settings(store, chroma_url, preset, backend, model_path)
    filters = make_filters(category, author, year_from, year_to)
    mode = mode_option(mode)
    limit = settings.max_message_chars
    compared = given_fields(store, chroma_url, backend, preset, model_path)
    with friendly_errors():
        if not questions:
            if not as_json:
                raise typer.BadParameter("give a QUESTION, or --json to read conversations from stdin")
            _ask_stdin(answering(settings, server, no_server, compared), limit, mode, filters, k)
            return
        questions = checked_turns(questions, limit)  # all of them, before anything is answered
        pa = answering(settings, server, no_server, compared)
        history = []
        for q in questions:
            if not as_json and len(questions) > 1:
                out.print(f"\n[bold cyan]> {q}[/]", highlight=False)
            answer = _run_turn(pa, q, history, mode, filters, k, as_json)
            if as_json:
                print(json.dumps(answer_payload(answer), ensure_ascii=False), flush=True)
            history = extend(history, q, answer)


def _ask_stdin(pa, limit: int, mode, filters, k) -> None:
    """One JSON line per conversation read: its answer, or {"id", "error": {message, code}}
    for bad input, so one bad line loses none of the others; exit 2 at the end if any was bad."""
    bad = total = 0
    for key, turns in stdin_conversations(limit):
        total += 1
        if isinstance(turns, InputError):
            bad += 1
            print(json.dumps({"id": key, "error": {"message": str(turns), "code": turns.code}},
                             ensure_ascii=False), flush=True)
            continue
        history: list[Turn] = []
        for turn in turns:
            answer = pa.ask(turn, history, mode=mode, filters=filters, k=k)
            history = extend(history, turn, answer)
        print(json.dumps({"id": key, **answer_payload(answer)}, ensure_ascii=False), flush=True)
    if bad:
        err.print(f"[bold red]error:[/] {bad} of {total} conversations had bad input; their lines "
                  f"carry an \"error\" instead of an answer", highlight=False)
        raise typer.Exit(2)


SaveOpt = Annotated[Optional[Path], typer.Option("--save", help="Write the conversation to this JSON file after each answer, to --resume later (a new file, or the one being resumed).")]
ResumeOpt = Annotated[Optional[Path], typer.Option("--resume", help="Continue a conversation saved with --save: follow-ups refer to its papers.")]
MarkdownOpt = Annotated[Optional[Path], typer.Option("--markdown", help="Also write the conversation as Markdown (every question and answer, then the references) after each answer.")]


def _same_file(a: Optional[Path], b: Optional[Path]) -> bool:
    return a is not None and b is not None and a.resolve() == b.resolve()


def _chat_start(save: Optional[Path], resume: Optional[Path],
                markdown: Optional[Path]) -> Transcript:
    """The conversation to continue (empty without --resume). Every file is checked before
    anything is asked: a conversation file is only overwritten once it has been read."""
    transcript = load_transcript(resume) if resume else Transcript()
    for path in (save, markdown):
        if path is not None and not path.parent.is_dir():
            raise TranscriptError(NO_FOLDER.format(path=path, folder=path.parent), "not_found")
    if save is not None and save.exists() and not _same_file(save, resume):
        raise TranscriptError(SAVE_EXISTS.format(path=save), "file_exists")
    if _same_file(markdown, save) or _same_file(markdown, resume):
        raise TranscriptError(SAME_FILE.format(path=markdown), "file_exists")
    return transcript


def _keep(transcript: Transcript, save: Optional[Path], markdown: Optional[Path]) -> None:
    """Write the conversation's files; a failure is said and the conversation goes on."""
    for path, write in ((save, save_transcript), (markdown, save_markdown)):
        if path is None:
            continue
        try:
            write(path, transcript)
        except OSError as exc:
            err.print("error: " + WRITE_FAILED.format(path=path, reason=exc.strerror or exc),
                      style="bold red", markup=False, highlight=False)


def _say_resumed(transcript: Transcript, resume: Path, save: Optional[Path]) -> None:
    n = len(transcript.exchanges)
    last = transcript.exchanges[-1].question if n else ""
    note(RESUMED.format(n=n, s="s" * (n != 1), path=resume, question=last))
    if save is None:
        note(NOT_SAVING.format(path=resume))


def note(text: str) -> None:
    """A dim line on the terminal, shown as written (a question may hold "[…]")."""
    out.print(text, style="dim", markup=False, highlight=False)


@app.command()
def chat(mode: ModeOpt = None, k: KOpt = None, backend: BackendOpt = None,
         model_path: ModelPathOpt = None, preset: PresetOpt = "default",
         save: SaveOpt = None, resume: ResumeOpt = None, markdown: MarkdownOpt = None,
         store: StoreOpt = None, chroma_url: ChromaOpt = None,
         server: ServerOpt = None, no_server: NoServerOpt = False):
    """An interactive conversation in the terminal (empty line or Ctrl-D to quit, /new to restart).

    Answered by a running `paper-assistant serve` when one fits (--no-server: never)."""
    settings = cli_settings(store, chroma_url, preset, backend, model_path)
    mode = mode_option(mode)
    with friendly_errors():  # a bad conversation file stops here, before anything is loaded
        transcript = _chat_start(save, resume, markdown)
    pa = answering(settings, server, no_server,
                   given_fields(store, chroma_url, backend, preset, model_path))
    with friendly_errors():
        pa.ensure_corpus()
        s = pa.stats()
        out.print(f"[bold]paper-assistant[/] · {s['papers']} papers · {pa.backend_label()}",
                  highlight=False)
        if resume is not None:
            _say_resumed(transcript, resume, save)
            _keep(transcript, None, markdown)
        _chat_loop(pa, mode, k, transcript, save, markdown)


def _chat_loop(pa, mode, k, transcript: Transcript, save: Optional[Path], markdown: Optional[Path]) -> None:
    """Ask until an empty line; the conversation is kept in `save` / `markdown` after each answer."""
    while True:
        try:
            message = out.input("[bold cyan]> [/]").strip()
        except (EOFError, KeyboardInterrupt):
            break
        if not message:
            break
        if message == "/new":
            transcript = Transcript()
            if save is not None:
                note(NEW_SAVED.format(path=save))
            continue
        try:
            check_message(message, pa.settings.max_message_chars)
        except InputError as exc:  # say why, and let the user try again
            err.print(f"[bold red]error:[/] {exc}", highlight=False)
            continue
        answer = _run_turn(pa, message, transcript.turns(), mode, None, k, as_json=False)
        transcript = transcript.add(message, answer)
        _keep(transcript, save, markdown)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on. Anything but loopback needs --auth and --api-key, or --no-auth.")] = SERVE_HOST,
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = SERVE_PORT,
    auth: Annotated[Optional[str], typer.Option("--auth", envvar="PAPER_ASSISTANT_AUTH", show_default=False,
                                                help="USER:PASSWORD login for the page (or env PAPER_ASSISTANT_AUTH).")] = None,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Serve beyond loopback without any authentication, on purpose.")] = False,
    api_key: Annotated[Optional[str], typer.Option("--api-key", envvar="PAPER_ASSISTANT_API_KEY", show_default=False,
                                                   help="Bearer token the /v1 API requires (or env PAPER_ASSISTANT_API_KEY).")] = None,
    store: StoreOpt = None, chroma_url: ChromaOpt = None, preset: PresetOpt = "default",
    backend: BackendOpt = None, model_path: ModelPathOpt = None,
    parallel: Annotated[Optional[int], typer.Option("--parallel", show_default=False,
                                                    help="Serve the local model with llama.cpp's llama-server (a child process) and this many parallel slots; 0: in-process, one answer at a time. Default: 8 slots when llama-server is built (`make run` builds it), else in-process (env PAPER_ASSISTANT_LLM_SERVER_PARALLEL).")] = None,
):
    """Serve the chat page and the OpenAI-compatible API (http://127.0.0.1:7860/ by default).

    Indexes the bundled demo corpus first when the store is empty."""
    from .llm.server import serving_settings
    from .server import ServeError, serve as run_server  # the web stack: only `serve` needs it

    pa = in_process(serving_settings(cli_settings(store, chroma_url, preset, backend, model_path,
                                                  llm_server_parallel=parallel)))
    try:
        with friendly_errors():
            run_server(host=host, port=port, auth=auth, no_auth=no_auth, api_key=api_key, pa=pa,
                       progress_factory=rich_progress)
    except ServeError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
