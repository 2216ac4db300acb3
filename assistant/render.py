"""One way to show an answer, for every front (the CLI, the page and `/v1`).

    author_line(authors)            "A, B, C et al."
    reference_line(citation)        "[1] A, B (2018). *Title*. Category. url. DOI link. id: p1"
    answer_markdown(question, a)    the answer as Markdown with its numbered references
    citation_json(citation)         a citation as the fronts send it (with evidence)
    answer_payload(answer)          `ask --json` and the page's `/chat`: Answer.to_json() with
                                    those citations
    answer_from_payload(payload)    its inverse: the Answer a server sent (assistant/client.py)
    answer_meta(answer)             intent, abstained, notices, backend (`/v1`'s extra field)
    hits_json(hits)                 `search --json` results (and an answer's `retrieved`)
    links_json(citation or paper)   {"url", "doi"}, as citations and search results carry them

A title derived from the abstract (the seed corpus has no titles) is always shown as a label,
never as the paper's title.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from .corpus.fields import doi_from_url
from .types import ET_AL, Answer, Citation, Hit, Paper

DERIVED_NOTE = "label derived from the abstract; the corpus gives no title"
PAPER_KEYS = ("paper_id", "title", "authors", "category", "year", "url", "doi")  # of hits_json


def author_line(authors: Sequence[str], limit: int = 4) -> str:
    """The first `limit` authors, "et al." for the rest; "" when there are none."""
    if not authors:
        return ""
    return ", ".join(authors[:limit]) + (ET_AL if len(authors) > limit else "")


def title_markdown(c: Citation) -> str:
    title = f"*{c.title}*"
    return f"{title} ({DERIVED_NOTE})" if c.title_is_derived else title


def reference_line(c: Citation) -> str:
    """One numbered reference, e.g. "[1] Ada Lovelace (2018). *Title*. Category. id: p1".

    A paper without authors starts with its title; its year then follows the title."""
    title = title_markdown(c)
    year = f" ({c.year})" if c.year else ""
    authors = author_line(c.authors, 6)
    bits = [(authors + year).rstrip("."), title] if authors else [title + year]  # no "al.."
    bits += [x for x in (c.category, *links(c)) if x]
    return f"[{c.number}] " + ". ".join(bits) + f". id: {c.paper_id}"


def doi_link(doi: str) -> str:
    return f"https://doi.org/{doi}"


def links(c: Citation) -> list[str]:
    """The paper's link and its DOI's resolver link, the link once when they are the same."""
    same = c.doi is not None and doi_from_url(c.url) == c.doi  # "https://dx.doi.org/<doi>"
    return [x for x in (None if same else c.url, doi_link(c.doi) if c.doi else None) if x]


def references_markdown(citations: Iterable[Citation]) -> str:
    """A "References" heading and one line per citation ("" without citations)."""
    lines = [reference_line(c) + "  " for c in citations]
    return "\n".join(["**References**", "", *lines]) if lines else ""


def answer_markdown(question: str, answer: Answer) -> str:
    """An answer as Markdown with its numbered reference list (the page's copy box)."""
    out = [f"**Q:** {question}", "", answer.answer]
    refs = references_markdown(answer.citations)
    if refs:
        out += ["", refs]
    return "\n".join(out).rstrip() + "\n"


def links_json(item: Citation | Paper) -> dict:
    """The paper's link and bare DOI as the fronts send them (None when the corpus gives none;
    a record with only a DOI has its resolver link as `url`, set when it was read)."""
    return {"url": item.url, "doi": item.doi}


def citation_json(c: Citation) -> dict:
    """Citation.to_json() plus the supporting sentence, whether the title is a label, each prose
    sentence citing it with the abstract sentence it restates (`quotes`), and the paper's link
    and DOI (`links_json`)."""
    return {**c.to_json(), "evidence": c.evidence, "title_is_derived": c.title_is_derived,
            "quotes": [q.model_dump() for q in c.quotes], **links_json(c)}


def citations_json(citations: Iterable[Citation]) -> list[dict]:
    return [citation_json(c) for c in citations]


def answer_meta(answer: Answer) -> dict:
    return {"intent": answer.intent, "abstained": answer.abstained, "notices": answer.notices,
            "backend": answer.backend,
            # seconds from the request: plan, first_token (the model's), waited_from, total;
            # model_tokens: the model's streamed pieces (one token each from llama.cpp)
            "timings": {k: round(v, 3) for k, v in answer.timings.items()}}


def answer_payload(answer: Answer) -> dict:
    """The answer as `ask --json` prints it and the page's `/chat` endpoint returns it."""
    return {**answer.to_json(), "citations": citations_json(answer.citations),
            "retrieved": hits_json(answer.retrieved)}


def answer_from_payload(payload: dict) -> Answer:
    """The Answer `answer_payload` was made from, as far as the payload carries it (not the
    papers' abstracts nor a citation's venue, which the CLI does not show), so that
    `answer_payload` of it gives the payload back."""
    return Answer.model_validate({**payload,
                                  "retrieved": [hit_from_json(h) for h in payload["retrieved"]]})


def hit_from_json(item: dict) -> Hit:
    """A Hit from its `hits_json` form (its paper without the abstract)."""
    paper = Paper(abstract="", **{k: item.get(k) for k in PAPER_KEYS if item.get(k) is not None})
    return Hit(paper=paper, score=item["score"], snippet=item["snippet"])


def hits_json(hits: Iterable[Hit]) -> list[dict]:
    """Papers found (`search --json`, an answer's `retrieved`): Hit.to_json() with the paper's
    link and DOI, as citations carry them."""
    return [{**h.to_json(), **links_json(h.paper)} for h in hits]


def reading_notice(candidates: int) -> str:
    """What a front shows while the model reads the candidates (engine event "reading")."""
    if candidates == 1:
        return "reading the closest paper to judge whether it answers this"
    return f"reading the {candidates} closest papers to judge which answer this"


def waiting_notice(ahead: int) -> str:
    """What a front shows while its request waits for the model (engine event "waiting")."""
    if ahead <= 0:
        return "waiting for the model"
    return f"waiting for the model ({ahead} request{'s' * (ahead != 1)} ahead)"
