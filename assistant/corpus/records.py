"""What a format reader yields: one record's raw fields, or why the record could not be parsed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class RawRecord:
    line: Optional[int]  # 1-based line where the record starts
    fields: Optional[Mapping[str, Any]] = None  # source field names → values; None when unparsable
    problem: Optional[str] = None  # why the record is unusable (set when fields is None)
    name: Optional[str] = None  # how to name it in messages besides the line, e.g. "entry smith2020"

    @classmethod
    def bad(cls, line: Optional[int], problem: str, name: Optional[str] = None) -> "RawRecord":
        return cls(line=line, problem=problem, name=name)
