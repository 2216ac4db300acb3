"""Corpus files → store, all-or-nothing per file, resumable, in bounded-memory batches.

A file is read twice: a validation pass that only parses (so a malformed record stops the
file before anything of it is written), then a writing pass in batches. Parsing is cheap next
to embedding, and two streaming passes keep memory flat for multi-GB files.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .config import Settings
from .corpus import CorpusError, RecordError, read_papers
from .index import Store, UpsertReport, iter_batches

BATCH_PAPERS: int = Settings.model_fields["ingest_batch_papers"].default

ProgressFn = Callable[[int, int], None]  # (papers done, papers total)


@dataclass
class FileReport:
    path: str
    papers: int = 0
    bad: list[RecordError] = field(default_factory=list)
    # left out on purpose, not errors: the items of a Zotero library without an abstract
    skipped: list[RecordError] = field(default_factory=list)
    upsert: UpsertReport = field(default_factory=UpsertReport)


def validate_file(path: Path, skip_bad: bool) -> FileReport:
    """Parse the whole file without writing; raises CorpusError unless skip_bad."""
    report = FileReport(str(path))
    for _ in read_papers(path, skip_bad=skip_bad, errors=report.bad, skipped=report.skipped):
        report.papers += 1
    return report


def ingest_file(store: Store, path: Path, skip_bad: bool = False,
                progress: Optional[ProgressFn] = None, batch_size: int = BATCH_PAPERS) -> FileReport:
    path = Path(path)
    if not path.exists():
        raise CorpusError(str(path), None, "no such file")
    report = validate_file(path, skip_bad)
    done = 0
    for batch in iter_batches(read_papers(path, skip_bad=True, errors=[], skipped=[]), batch_size):
        report.upsert.add(store.upsert_papers(batch))
        done += len(batch)
        if progress:
            progress(done, report.papers)
    return report


def ingest_paths(store: Store, paths: list[Path], skip_bad: bool = False,
                 progress_factory=None, batch_size: int = BATCH_PAPERS) -> list[FileReport]:
    """Ingest several files; a bad file raises before any of *it* is written.

    `progress_factory(path, total)` may return a context manager yielding a (done, total)
    callback, which is how the CLI shows a rich progress bar and the UI a Gradio one.
    """
    reports = []
    try:
        for path in paths:
            ctx = progress_factory(path) if progress_factory else nullcontext(None)
            with ctx as progress:
                reports.append(ingest_file(store, Path(path), skip_bad, progress, batch_size))
    finally:
        # Even after an error in a later file, the caches reflect what was written.
        store.finish_ingest()
    return reports
