"""The data model shared by every stage: Paper → Chunk → Hit → Answer (with Citations).

Plain pydantic models so they serialise to the public JSON shapes (`search --json`,
`ask --json`, the HTTP API) without hand-written converters.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field

Intent = Literal["question", "summary", "compare", "similar", "table"]
# similar: "more like the second one", the nearest papers to one paper (assistant/similar.py)
# table: "make a table of the papers on X: method, data", one row of extracted phrases per paper

ET_AL = " et al."  # how a shortened author list ends, everywhere an answer shows one


class Paper(BaseModel):
    """One paper as read from a corpus file. `paper_id` is stable across re-ingests."""

    paper_id: str
    title: str
    authors: list[str] = Field(default_factory=list)
    authors_incomplete: bool = False  # the record's list ended in "et al." / 等: names are missing
    abstract: str
    category: Optional[str] = None
    year: Optional[int] = None
    venue: Optional[str] = None
    url: Optional[str] = None  # the record's link, else its DOI's resolver link
    doi: Optional[str] = None  # bare DOI, "10.1000/xyz" (no "doi:" or resolver prefix)
    # True when the title was derived from the abstract (the seed listing has no titles):
    # the UI and references show it as a label, never as a claimed title.
    title_is_derived: bool = False
    source: Optional[str] = None  # "file:line" the record came from

    def author_line(self, limit: int = 3) -> str:
        if not self.authors:
            return ""
        names = self.authors[:limit]
        more = ET_AL if len(self.authors) > limit else ""
        return ", ".join(names) + more


class Chunk(BaseModel):
    """A window of one paper's abstract, the unit that is embedded and BM25-indexed."""

    chunk_id: str  # f"{paper_id}::{index}"
    paper_id: str
    index: int
    text: str


class Hit(BaseModel):
    """One paper found by retrieval, with its best-matching chunk as the snippet."""

    paper: Paper
    score: float
    snippet: str
    bm25_score: float = 0.0  # raw best BM25 score of the paper's chunks (0 when none matched)
    dense_score: float = 0.0  # best cosine similarity of the paper's chunks
    chunk_ids: list[str] = Field(default_factory=list)

    def to_json(self) -> dict:
        p = self.paper
        return {
            "paper_id": p.paper_id,
            "title": p.title,
            "authors": p.authors,
            "category": p.category,
            "year": p.year,
            "score": round(self.score, 6),
            "snippet": self.snippet,
        }


class Quote(BaseModel):
    """A sentence of the model's prose as shown (without markers) and the abstract sentence it
    was checked against: what the claim restates."""

    claim: str
    evidence: str


class Citation(BaseModel):
    """A paper that the final answer text cites as `[number]`."""

    number: int
    paper_id: str
    title: str
    authors: list[str]
    category: Optional[str] = None
    year: Optional[int] = None
    venue: Optional[str] = None
    url: Optional[str] = None
    doi: Optional[str] = None
    title_is_derived: bool = False
    evidence: str = ""  # the abstract sentence that best supports what the answer says
    quotes: list[Quote] = Field(default_factory=list)  # each prose sentence citing it, with its evidence

    @classmethod
    def from_paper(cls, number: int, paper: Paper, evidence: str = "",
                   quotes: Optional[list[Quote]] = None) -> "Citation":
        return cls(
            number=number,
            paper_id=paper.paper_id,
            title=paper.title,
            authors=paper.authors,
            category=paper.category,
            year=paper.year,
            venue=paper.venue,
            url=paper.url,
            doi=paper.doi,
            title_is_derived=paper.title_is_derived,
            evidence=evidence,
            quotes=quotes or [],
        )

    def to_json(self) -> dict:
        return {
            "number": self.number,
            "paper_id": self.paper_id,
            "title": self.title,
            "authors": self.authors,
            "category": self.category,
            "year": self.year,
        }


class Turn(BaseModel):
    """One message of a conversation. `paper_ids` are the papers an assistant turn cited,
    which is how follow-ups ("who wrote it?") find their focus."""

    role: Literal["user", "assistant"]
    content: str
    paper_ids: list[str] = Field(default_factory=list)
    # an assistant turn that found nothing: its paper_ids are the closest papers it offered
    refused: bool = False


class TableRow(BaseModel):
    """One paper of a literature table: its citation number and one cell per aspect."""

    number: int  # the paper's [n] in the answer
    paper_id: str
    title: str
    cells: list[str]  # verbatim phrases from the abstract, "—" when none fits the aspect


class LiteratureTable(BaseModel):
    """A literature table ("method, data, main result" per paper), extracted from abstracts."""

    topic: str
    aspects: list[str]  # the column names, as the user wrote them
    rows: list[TableRow] = Field(default_factory=list)

    def to_json(self) -> dict:
        return self.model_dump()


class Answer(BaseModel):
    answer: str
    intent: Intent
    citations: list[Citation] = Field(default_factory=list)
    retrieved: list[Hit] = Field(default_factory=list)
    abstained: bool = False
    backend: str = "none"
    query: str = ""  # the standalone query used for retrieval after condensing the history
    notices: list[str] = Field(default_factory=list)
    removed_citations: int = 0  # markers dropped because they pointed outside the retrieved set
    unsupported_claims: int = 0  # cited sentences the grounding check could not support
    timings: dict[str, float] = Field(default_factory=dict)
    # the papers this answer put in front of the user, in order: its citations by number, or
    # for a refusal the closest papers it offered (what "the first one" refers to next)
    presented: list[str] = Field(default_factory=list)
    table: Optional[LiteratureTable] = None  # the rows of a literature table (intent "table")

    def to_json(self) -> dict:
        extra = {"table": self.table.to_json()} if self.table is not None else {}
        return {
            "answer": self.answer,
            "intent": self.intent,
            "citations": [c.to_json() for c in self.citations],
            "retrieved": [h.to_json() for h in self.retrieved],
            "abstained": self.abstained,
            "backend": self.backend,
            "query": self.query,
            "notices": self.notices,
            "removed_citations": self.removed_citations,
            "unsupported_claims": self.unsupported_claims,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "presented": self.presented,
            **extra,
        }

    def as_turn(self) -> Turn:
        return Turn(role="assistant", content=self.answer,
                    paper_ids=self.presented or [c.paper_id for c in self.citations],
                    refused=self.abstained)


class Filters(BaseModel):
    """Metadata filters applied to both the dense and the BM25 side of retrieval."""

    categories: list[str] = Field(default_factory=list)  # exact category or its area prefix
    authors: list[str] = Field(default_factory=list)  # case-insensitive substring of any author
    year_min: Optional[int] = None
    year_max: Optional[int] = None

    def is_empty(self) -> bool:
        return not (self.categories or self.authors or self.year_min or self.year_max)
