"""Errors raised or collected while reading a corpus file.

Every message names the file and the line (or BibTeX entry) so a user can open the file and fix
it: `str(error) == "path:line: reason"`.
"""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel


def _location(path: str, line: Optional[int]) -> str:
    return f"{path}:{line}" if line is not None else path


class CorpusError(Exception):
    """A corpus file (or one record of it) cannot be read. `str(e) == "path:line: reason"`."""

    def __init__(self, path: str, line: Optional[int], reason: str):
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{_location(self.path, line)}: {reason}")


class RecordError(BaseModel):
    """One bad record, collected instead of raised when reading with `skip_bad=True`."""

    path: str
    line: Optional[int] = None
    reason: str

    def __str__(self) -> str:
        return f"{_location(self.path, self.line)}: {self.reason}"

    def to_exception(self) -> CorpusError:
        return CorpusError(self.path, self.line, self.reason)


class BadRecord(Exception):
    """Internal: one record is malformed; the reader turns it into a RecordError or CorpusError."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)
