"""Chunking: the sentence-aware windows of a paper's abstract, the texts the dense model and BM25
see for each, and the content hash and flat metadata stored with each chunk in Chroma."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ..embed import MINILM_MAX_TOKENS, count_tokens
from ..types import Chunk, Paper


def embedding_text(paper: Paper, chunk_text: str) -> str:
    """What the dense model sees: the title gives every window its paper's context."""
    return f"{paper.title}. {chunk_text}" if paper.title else chunk_text


def lexical_text(paper: Paper, chunk_text: str) -> str:
    """What BM25 sees: title and authors too, so names and method names match lexically."""
    return " ".join(x for x in (paper.title, ", ".join(paper.authors), paper.category or "",
                                chunk_text) if x)


@dataclass
class Chunker:
    """Sentence-aware windows that fit the embedding model's 256-token limit.

    A short abstract stays one chunk; a longer one becomes overlapping windows of whole
    sentences (llama-index's SentenceSplitter, counting tokens with the MiniLM tokenizer).
    """

    chunk_tokens: int = 200
    overlap_tokens: int = 40
    _splitters: dict = field(default_factory=dict, repr=False)

    def _get_splitter(self, size: int):
        if size not in self._splitters:
            from llama_index.core.node_parser import SentenceSplitter

            def tokenize(text: str) -> list[int]:
                return [0] * count_tokens(text)

            self._splitters[size] = SentenceSplitter(
                chunk_size=size, chunk_overlap=min(self.overlap_tokens, size // 4),
                tokenizer=tokenize,
            )
        return self._splitters[size]

    def chunk(self, paper: Paper) -> list[Chunk]:
        # every window is embedded after "title. ": the title's tokens come out of the 256
        budget = max(MINILM_MAX_TOKENS - 2 - count_tokens(paper.title + ". "), 32)
        if count_tokens(paper.abstract) <= budget:
            texts = [paper.abstract]
        else:
            splitter = self._get_splitter(min(self.chunk_tokens, budget))
            texts = [t for t in splitter.split_text(paper.abstract) if t.strip()]
        return [Chunk(chunk_id=f"{paper.paper_id}::{i}", paper_id=paper.paper_id, index=i, text=t)
                for i, t in enumerate(texts)]


def content_hash(paper: Paper, chunk: Chunk) -> str:
    """Changes whenever what is stored for the chunk would change.

    Chunk 0 carries the whole paper record, so its hash covers the whole paper. Fields added
    to Paper later (`doi`, `authors_incomplete`) count only when set, so stores built before
    them are not re-embedded."""
    unset_new = ({"doi"} if paper.doi is None else set()) | (
        set() if paper.authors_incomplete else {"authors_incomplete"})
    fields = [paper.model_dump_json(exclude={"source", *unset_new})] if chunk.index == 0 else [
        paper.title, paper.authors, paper.category, paper.year]
    payload = json.dumps([*fields, chunk.text], ensure_ascii=False)
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


def chunk_metadata(paper: Paper, chunk: Chunk, digest: str) -> dict:
    """Flat metadata for Chroma filters; the whole paper rides on chunk 0 only."""
    meta: dict = {"paper_id": paper.paper_id, "chunk_index": chunk.index, "hash": digest,
                  "title": paper.title}
    if paper.category:
        meta["category"] = paper.category
    if paper.year is not None:
        meta["year"] = int(paper.year)
    if chunk.index == 0:
        meta["paper"] = paper.model_dump_json()
    return meta
