"""Reading research-paper corpora into `Paper` records.

    from assistant.corpus import read_papers, CorpusError
    for paper in read_papers("papers.jsonl"):          # streams; raises CorpusError("path:line: why")
        ...
    errors = []
    papers = list(read_papers("refs.bib", skip_bad=True, errors=errors))  # collect bad records

Formats: the demo listing (.txt/.md), JSON Lines (.jsonl/.ndjson), JSON (.json), CSV/TSV,
BibTeX (.bib), the reference-manager exports RIS (.ris) and CSL-JSON (.json with CSL keys), and
Zotero's own database (zotero.sqlite, read on a copy); see the module of each format for its shape.
"""
from .errors import CorpusError, RecordError
from .fields import content_id
from .reader import FORMATS, accepted_files, detect_format, read_papers
from .titles import derive_title

__all__ = [
    "CorpusError",
    "RecordError",
    "FORMATS",
    "accepted_files",
    "detect_format",
    "read_papers",
    "derive_title",
    "content_id",
]
