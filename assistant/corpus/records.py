"""What a format reader yields: one record's raw fields, why the record could not be parsed, or
why it is left out on purpose."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class RawRecord:
    line: Optional[int]  # 1-based line where the record starts; None for a database row
    fields: Optional[Mapping[str, Any]] = None  # source field names → values; None when unparsable
    problem: Optional[str] = None  # why the record is unusable (set when fields is None)
    name: Optional[str] = None  # how to name it in messages besides the line, e.g. "entry smith2020"
    # why the record is left out on purpose, which is not an error (a Zotero item without an
    # abstract: a library holds many); set when fields is None
    skipped: Optional[str] = None

    @classmethod
    def bad(cls, line: Optional[int], problem: str, name: Optional[str] = None) -> "RawRecord":
        return cls(line=line, problem=problem, name=name)

    @classmethod
    def skip(cls, line: Optional[int], reason: str, name: Optional[str] = None) -> "RawRecord":
        return cls(line=line, skipped=reason, name=name)

    def where(self) -> str:
        """Its place in the file for a paper's `source`: the line, else its name (a database
        row has no line: "item ABCD2345")."""
        return str(self.line) if self.line is not None or not self.name else self.name
