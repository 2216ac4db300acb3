"""The structure of each kind of answer, built from the papers chosen by the planner.

The pipeline writes the parts that must be exact (comparison tables, the per-theme paper list
of a summary, extracts, author lists) from the abstracts themselves, already cited; the model
writes only the prose (an answer, an overview, a verdict), which grounding then checks.
Every string a user reads from an answer (refusals, notices, headings) is written here.
"""
from __future__ import annotations

from typing import Optional

from ..prompts import render
from ..types import ET_AL, Paper
from .aspects import ASPECT_CUES
from .cases import OtherCase
from .evidence import FIGURE_RE, QUANTITY_RE, Source, own_sentences, safe_sentences
from ..text import shorten, stems, terms

# the comparison table's rows → the cue words of that aspect (aspects.py)
ASPECTS = {"Problem": ASPECT_CUES["problem"], "Approach": ASPECT_CUES["approach"],
           "Evidence": ASPECT_CUES["evidence"], "Key result": ASPECT_CUES["result"]}


def source_block(source: Source) -> str:
    """A paper as the model reads it: its number, title and record on labelled lines, then
    its evidence sentences, one per line (what each written sentence restates)."""
    p = source.paper
    # labelled, so a category is not read as where the paper appeared
    record = "; ".join(x for x in (f"by {p.author_line(3)}" if p.authors else "",
                                   f"category {p.category}" if p.category else "",
                                   f"year {p.year}" if p.year else "") if x)
    lines = "\n".join(f"- {sentence}" for sentence in source.sentences)
    return (f"<source n={source.n}>\nTitle: {p.title}\n" + (f"Record: {record}\n" if record else "")
            + f"Lines:\n{lines}\n</source>")


def sources_text(sources: list[Source]) -> str:
    return "\n".join(source_block(s) for s in sources)


def question_prompt(parts: list[str], sources: list[Source], previous: str = "") -> str:
    """The question (its parts numbered when it has several) over the sources."""
    question = parts[0] if len(parts) == 1 else "Answer each part:\n" + "\n".join(
        f"{i}. {p}" for i, p in enumerate(parts, 1))
    if previous:
        return render("followup", sources=sources_text(sources), question=question,
                      previous=previous)
    return render("question", sources=sources_text(sources), question=question)


def unanswered_parts(parts: list[str], sources: list[Source]) -> list[str]:
    """Notices for the parts of a multi-part question that no source's evidence speaks to:
    a "how much" part needs a sentence with a number, any other part its content words."""
    if len(parts) < 2:
        return []
    notes = []
    evidence = " ".join(s for src in sources for s in src.sentences)
    have = stems(evidence)
    for part in parts[1:]:
        want = stems(" ".join(terms(part)))
        answered = bool(FIGURE_RE.search(evidence)) if QUANTITY_RE.search(part) else bool(want & have)
        if not answered:
            notes.append(f"The abstracts do not say: “{part.strip().rstrip('?')}?”")
    return notes


def summary_prompt(papers: list[Source]) -> str:
    """One sentence per paper (`prose_papers`), restating that paper's lines: no sentence
    speaks for several papers at once (a small model's cross-paper synthesis misattributes)."""
    names = "; ".join(f"[{s.n}] {prompt_name(s.paper)}" for s in papers)
    return render("summary", sources=sources_text(papers), names=names)


def prose_papers(themes: list[tuple[str, list[Source]]], least: int) -> list[Source]:
    """The papers a summary's prose speaks of: each theme's first, then the themes' next ones
    in turn until there are `least` (a one-theme summary still gets a few sentences)."""
    rounds = max((len(group) for _, group in themes), default=0)
    ordered = [group[i] for i in range(rounds) for _, group in themes if i < len(group)]
    return ordered[: max(len(themes), least)]


def compare_prompt(sources: list[Source]) -> str:
    names = " and ".join(f"[{s.n}] {prompt_name(s.paper)}" for s in sources)
    return render("compare", sources=sources_text(sources), names=names)


def short_name(paper: Paper) -> str:
    """The method name of a derived label ("Top-W: …" → "Top-W"), else the title cut short."""
    title = paper.title
    for sep in (":", " — ", " - "):
        if sep in title:
            head = title.split(sep, 1)[0].strip()
            if 1 <= len(head.split()) <= 5:
                return head
    return shorten(title, 8)


def prompt_name(paper: Paper) -> str:
    """The name the model starts a paper's sentence with: its short name, unless that is a
    sentence of the abstract cut short ("… central to causal inference, feature selection…"),
    which the model would go on to finish in words of its own; then its first author's."""
    name = short_name(paper)
    if not (paper.title_is_derived and name.endswith("…")) or not paper.authors:
        return name
    surname = paper.authors[0].split()[-1]
    return surname if len(paper.authors) == 1 else f"{surname} et al."


# What the paper does is chosen first: "To address this limitation, we introduce X" also reads
# as a problem, and the problem row taking it left the approach to the field's opening lines.
ASPECT_ORDER = ("Approach", "Problem", "Evidence", "Key result")


def aspect_sentences(paper: Paper) -> dict[str, str]:
    """One abstract sentence per comparison aspect, each used once, falling back by position.
    All but the problem come from the paper's own voice (`own_sentences`): an abstract's
    opening lines on earlier work are not what the paper does or finds."""
    sents = safe_sentences(paper)
    own = own_sentences(sents)
    chosen: dict[str, int] = {}
    for aspect in ASPECT_ORDER:
        pool = _problem_lines(sents, chosen.get("Approach", 0)) if aspect == "Problem" else own
        candidates = [i for i in pool if i not in chosen.values() and ASPECTS[aspect].search(sents[i])]
        if aspect == "Key result":
            candidates = list(reversed(candidates))  # results are stated late in an abstract
        if candidates:
            chosen[aspect] = candidates[0]
        elif sents:
            chosen[aspect] = _aspect_by_position(aspect, len(sents), own, chosen)
    return {a: (sents[chosen[a]] if chosen[a] >= 0 else "—") for a in ASPECTS if a in chosen}


def _problem_lines(sents: list[str], approach: int) -> list[int]:
    """Where a paper's problem may be stated: anywhere before its approach, and after it in a
    line that states no result ("Experiments on challenging systems show that X achieves …" is
    a result, though it says "challenging")."""
    return [i for i in range(len(sents)) if i < approach or not ASPECTS["Key result"].search(sents[i])]


def _aspect_by_position(aspect: str, n: int, own: list[int], chosen: dict[str, int]) -> int:
    """Where an aspect no cue found usually is (-1: that sentence is taken): the approach at the
    first sentence in the authors' voice, the problem just before the approach, evidence and
    result at the end."""
    approach = chosen.get("Approach", 1)
    at = {"Approach": own[0] if own else 1, "Problem": approach - 1 if approach > 0 else 0,
          "Evidence": n - 2, "Key result": n - 1}[aspect]
    at = min(max(at, 0), n - 1)
    return -1 if at in chosen.values() else at


def cell(text: str, n: int) -> str:
    if text == "—":
        return "—"
    return shorten(text, 28).replace("|", "\\|") + f" [{n}]"


def compare_table(sources: list[Source]) -> str:
    header = "| | " + " | ".join(f"{short_name(s.paper)} [{s.n}]" for s in sources) + " |"
    rule = "|---|" + "---|" * len(sources)
    aspects = [aspect_sentences(s.paper) for s in sources]
    rows = []
    for aspect in ASPECTS:
        cells = [cell(a.get(aspect, "—"), s.n) for a, s in zip(aspects, sources)]
        rows.append(f"| **{aspect}** | " + " | ".join(cells) + " |")
    authors = [s.paper.author_line(2) or "—" for s in sources]
    rows.append("| **Authors** | " + " | ".join(f"{a} [{s.n}]" for a, s in zip(authors, sources)) + " |")
    return "\n".join([header, rule, *rows])


def share(matching: int, collection: int, verb: tuple[str, str] = ("is", "are")) -> str:
    """"3 of the 20 papers in this collection are" ("1 … is"; `verb`: its singular and plural)."""
    return f"{matching:,} of the {collection:,} papers in this collection {verb[matching != 1]}"


def summary_listing(topic: str, themes: list[tuple[str, list[Source]]], matching: int,
                    collection: int, scope: str = "") -> str:
    """How many papers match (in the categories named, `scope`), then the papers grouped by
    theme, one cited line each."""
    shown = sum(len(g) for _, g in themes)
    more = f"; the {shown} most relevant are below" if matching > shown else ""
    within = f" in *{scope}*" if scope else ""
    return theme_lines(f"{share(matching, collection)} about "
                       f"*{shorten(topic, 12)}*{within}{more}.", themes)


def shown_listing(themes: list[tuple[str, list[Source]]]) -> str:
    """A summary of papers the conversation showed ("summarize them"): they are named as that,
    not counted against the collection as if they matched a topic."""
    shown = sum(len(g) for _, g in themes)
    head = "The paper shown above." if shown == 1 else f"The {shown} papers shown above."
    return theme_lines(head, themes)


def overview_listing(scope: str, filtered: bool, themes: list[tuple[str, list[Source]]],
                     matching: int, collection: int, sizes: Optional[list[int]] = None) -> str:
    """An overview of the collection, a category named (`scope`) or the filtered papers;
    `sizes`: how many papers each theme holds (said where more than are shown)."""
    shown = sum(len(g) for _, g in themes)
    more = (f"; its {len(themes)} themes are below, each with its most central papers"
            if matching > shown else "")
    if scope:
        head = f"{share(matching, collection)} in *{scope}*{more}."
    elif filtered:
        head = f"{share(matching, collection, ('passes', 'pass'))} the filters{more}."
    else:
        head = f"This collection holds {collection:,} papers{more}."
    return theme_lines(head, themes, sizes)


def theme_lines(head: str, themes: list[tuple[str, list[Source]]],
                sizes: Optional[list[int]] = None) -> str:
    """A listing's first line, then its papers grouped by theme, one cited line each."""
    lines = [head, ""]
    for i, (theme, sources) in enumerate(themes):
        size = sizes[i] if sizes else len(sources)
        if theme:
            lines.append(f"**{theme}**" + (f" ({size:,} papers)" if size > len(sources) else ""))
        for s in sources:
            # what the paper does says more in a listing than its opening sentence
            gist = aspect_sentences(s.paper).get("Approach") or (
                s.sentences[0] if s.sentences else s.paper.abstract)
            lines.append(f"- *{short_name(s.paper)}*: {shorten(gist, 30)} [{s.n}]")
        lines.append("")
    return "\n".join(lines).strip()


def authors_answer(sources: list[Source], count: bool = False) -> str:
    """Who wrote each paper, from its record; with `count`, how many they are, and "at least"
    when the record's list ends in "et al." (its names are not all there)."""
    parts = []
    for s in sources:
        names = s.paper.authors
        if not names:
            parts.append(f"The collection lists no authors for *{short_name(s.paper)}* [{s.n}].")
            continue
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        if s.paper.authors_incomplete:
            who += " and others (the record's author list ends in “et al.”)"
        parts.append(f"*{short_name(s.paper)}* is by {who} [{s.n}].")
        if count:
            parts.append(author_count(s.paper))
    return " ".join(parts)


def date_answer(sources: list[Source]) -> str:
    """When and where each paper appeared, from its record, and say so when the record has
    neither (a seed listing carries no year or venue)."""
    parts = []
    for s in sources:
        name, year, venue = short_name(s.paper), s.paper.year, s.paper.venue
        if year and venue:
            parts.append(f"*{name}* appeared in {venue} in {year} [{s.n}].")
        elif year:
            parts.append(f"*{name}* is from {year} [{s.n}].")
        elif venue:
            parts.append(f"*{name}* appeared in {venue} [{s.n}].")
        else:
            parts.append(f"The collection's record of *{name}* gives no year or venue [{s.n}].")
    return " ".join(parts)


def author_count(paper: Paper) -> str:
    n = len(paper.authors)
    noun = "author" if n == 1 else "authors"
    if paper.authors_incomplete:
        return f"That is at least {n} {noun}: the collection lists {n} by name, then “et al.”."
    return f"That is {n} {noun}." if n > 1 else "That is 1 author: a single-author paper."


def parts_not_found(parts: list[str]) -> str:
    """The parts of a multi-part question that no paper in the collection answers."""
    return "Nothing in this collection answers: " + "; ".join(f"“{p.strip().rstrip('?')}?”" for p in parts)


def lead(sources: list[Source]) -> str:
    """"From *Top-W* (Gholamidavoodi et al., 2025) [1]:" — the papers an answer rests on, known
    before the model writes a word, so the reader sees the answer's source at once instead of
    waiting for the model's first checked sentence."""
    named = [f"*{short_name(s.paper)}*{_by(s.paper)} [{s.n}]" for s in sources]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"From {listed}:"


def _by(paper: Paper) -> str:
    first = paper.authors[0].split()[-1] if paper.authors else ""
    who = first + (ET_AL if len(paper.authors) > 1 else "")
    meta = ", ".join(x for x in (who, str(paper.year or "")) if x)
    return f" ({meta})" if meta else ""


def extracts(sources: list[Source], words: int = 45) -> str:
    lines = []
    for s in sources:
        text = " ".join(s.sentences[:2]) if s.sentences else s.paper.abstract
        lines.append(f"- *{short_name(s.paper)}*: {shorten(text, words)} [{s.n}]")
    return "\n".join(lines)


EMPTY_COLLECTION = ("The collection is empty, so I cite no paper. Add papers first: "
                    "`paper-assistant ingest FILE` (or the page's upload), or `paper-assistant serve`, "
                    "which indexes the demo corpus into an empty store.")


VERDICT_NOTES = {"may": "it may answer it, but I am not sure enough to cite it",
                 "unlikely": "the model read it as answering, but I judge that unlikely",
                 "no": "judged not to answer it"}


def other_case_note(case: OtherCase) -> str:
    """Why a near paper does not answer: it treats another case ("dimension 2 or 3, not 4 or more")."""
    if "·" in case.kind:  # a symbol and its index: "SU(2), not SU(3)"
        return f"it treats {case.kind.replace('·', case.treated)}, not {case.kind.replace('·', case.asked)}"
    if case.kind == "dimension":
        return f"it treats dimension {case.treated}, not {case.asked}"
    return f"it treats {case.treated} {case.kind}, not {case.asked}"


def refusal(intent: str, topic: str, offered: list[Paper], filtered: bool = False,
            outside: Optional[list[Paper]] = None, empty: bool = False,
            verdicts: Optional[list[str]] = None, nearest: str = "", beyond_shown: bool = False,
            other_cases: Optional[list[Optional[OtherCase]]] = None) -> str:
    """Nothing in the collection was accepted: say so plainly and cite nothing. A summary names
    its topic (a noun phrase); a question is never echoed back as if it were one. An empty
    collection is said to be empty, not to lack the topic. `verdicts`: the model read the
    offered papers, and per paper what may be said of it (VERDICT_NOTES: "may" answer, though
    not surely enough to cite; "unlikely"; "no"). Unread (verdicts None), they are the nearest,
    with the `nearest` one's closest sentence. `beyond_shown`: the question asked for papers
    besides those shown ("anything else on X?"): nothing *else* was found. `other_cases`: per
    offered paper, the other case it treats (cases.other_cases), said instead of its verdict."""
    if empty:
        return EMPTY_COLLECTION
    cases = list(other_cases or [])
    cases += [None] * (len(offered) - len(cases))
    subject = f"on *{shorten(topic, 12)}*" if intent == "summary" else "that answers this"
    scope = "among the papers your filters allow" if filtered else "in this collection"
    unsure = bool(verdicts) and any(v == "may" and not c for v, c in zip(verdicts, cases))
    other = " else" if beyond_shown else ""
    if unsure:
        text = f"I am not sure anything{other} {scope} answers this, so I cite no paper."
    elif verdicts is not None:
        text = f"I found nothing{other} {scope} {subject}, so I cite no paper."
    else:
        text = f"I found nothing{other} {scope} {subject} directly, so I cite no paper."
    if outside:
        names = "; ".join(f"*{short_name(p)}*" for p in outside)
        text += f" Outside your filters, these papers are about it: {names}. Clear the filters to use them."
    if offered and (any(cases) or verdicts and set(verdicts) != {"no"}):
        notes = [other_case_note(c) if c else VERDICT_NOTES[v] if v else ""
                 for c, v in zip(cases, verdicts or [""] * len(offered))]
        heading = "The closest papers, which I read:" if verdicts else "The nearest papers:"
        text += "\n\n" + closest_list(offered, heading, notes)
    elif offered and verdicts is not None:
        text += "\n\n" + closest_list(offered, "The closest papers, which I read and judged not to answer it:")
    elif offered:
        if nearest:
            text += (f"\n\nThe nearest paper, *{shorten(offered[0].title, 14)}*, says: "
                     f"“{shorten(nearest, 40)}” It may touch on your question without answering it.")
        text += "\n\n" + closest_list(offered, "The nearest papers:")
    return text


def unknown_category(label: str, categories: list[str], listed: int) -> str:
    """A category the message named that the collection does not have: it was read as a topic;
    name the categories there are (up to `listed`), so the next try can use one."""
    if not categories:
        return f"The papers in this collection carry no categories, so I read “{label}” as a topic."
    names = "; ".join(categories) if len(categories) <= listed else (
        f"{len(categories):,} of them, listed by the page's Category filter")
    return f"No category of this collection is called “{label}”, so I read it as a topic. Its categories: {names}."


def closest_list(papers: list[Paper], heading: str, notes: Optional[list[str]] = None) -> str:
    notes = notes or [""] * len(papers)
    lines = [heading] + [f"{i}. *{shorten(p.title, 14)}*" + (f" — {p.author_line(2)}" if p.authors else "")
                         + (f" ({note})" if note else "")
                         for i, (p, note) in enumerate(zip(papers, notes), 1)]
    # a blank line first: Markdown would otherwise fold the hint into the last list item
    return "\n".join(lines) + "\n\nIf one of them is what you meant, ask about it (“the first one”)."


def choices(offered: list[Paper]) -> str:
    """A follow-up to a refusal ("who wrote it?"): "it" is not one paper yet."""
    if not offered:
        return "My last answer found no paper about your question, so there is nothing to refer to."
    return ("My last answer cited no paper for your question, so I can't tell which paper you "
            "mean.\n\n" + closest_list(offered, "The closest papers it offered:"))


def taken_as_it(paper: Paper) -> str:
    """A follow-up to a refusal whose first offered paper the model read as possibly answering."""
    return (f"My last answer was not sure enough to cite a paper; I take “it” to be the first one "
            f"it offered, *{short_name(paper)}*.")


def taken_as_meant(papers: list[Paper]) -> str:
    """A follow-up to a refusal that points at several papers ("how do those two differ?")."""
    names = ", ".join(f"*{short_name(p)}*" for p in papers)
    return f"My last answer was not sure enough to cite a paper; I take you to mean {names}."


def unresolved(reference: str, shown: list[Paper]) -> str:
    """A reference that points past what was shown ("the fifth one" of two papers)."""
    text = f"I can't tell which paper “{reference.strip()}” means"
    if not shown:
        return text + ": my earlier answers showed no papers."
    return text + f": my last answer showed {len(shown)}.\n\n" + closest_list(shown, "They were:")


def only_one(source: Source, missing: list[str]) -> str:
    what = (" I found nothing for " + ", ".join(f"“{m}”" for m in missing) + ".") if missing else ""
    return (f"I can only find one side of this comparison in the collection, "
            f"*{short_name(source.paper)}* [{source.n}], so there is nothing to compare it with here.{what}")


# ----------------------------------------------------------------------------- more like this
def similar_listing(source: Source, neighbours: list[tuple[Source, float]]) -> str:
    """The paper asked about, cited, then its nearest papers, nearest first, each cited with the
    sentence of its abstract closest to the source paper (why it is listed)."""
    head = (f"Papers closest in meaning to *{short_name(source.paper)}* [{source.n}], nearest "
            f"first, each with its sentence closest to that paper:")
    lines = [head, ""]
    for i, (s, score) in enumerate(neighbours, 1):
        link = shorten(s.sentences[0], 40) if s.sentences else ""
        lines.append(f"{i}. *{short_name(s.paper)}* (similarity {score:.2f}): “{link}” [{s.n}]")
    if not neighbours:
        lines.append("No other paper in this collection is close to it.")
    return "\n".join(lines)


def which_paper(shown: list[Paper], named: str = "") -> str:
    """A "more like …" that points at no single paper: ask which, cite nothing."""
    if named:
        text = (f"I found no paper in this collection named or about “{shorten(named, 12)}”, so I "
                f"can't look for papers like it.")
    else:
        text = ("Which paper should I find similar papers to? Name it, or point at one "
                "(“more like the first one”, “more like Top-W”).")
    if shown:
        text += "\n\n" + closest_list(shown, "My last answer showed:")
    return text


# ----------------------------------------------------------------------------- literature tables
def table_intro(topic: str, rows: int, matching: int, collection: int, scope: str = "",
                in_scope: int = 0) -> str:
    """How many papers the table covers, and what its cells are. `scope`: the category the
    request named, whose `in_scope` papers are the rows (up to the table's limit)."""
    if topic and matching:
        more = f"; the {rows} most relevant are below" if matching > rows else ""
        lead = (f"{share(matching, collection)} about "
                f"*{shorten(topic, 12)}*{more}.")
    elif scope:
        more = f"; the first {rows} are below" if in_scope > rows else ""
        lead = f"{share(in_scope, collection)} in the {scope} category{more}."
    else:
        lead = f"A table of the {rows} paper{'s' * (rows != 1)}."
    return (lead + " Each cell quotes the paper's abstract; “—” means the abstract says nothing "
            "close to that column.")


# -- notices and headings the engine and planner show (users' strings live in this module)
PROSE_HEADING = "**In short.** "  # before the model's sentences of a summary or comparison
EXTRACTS_HEADING = "Extracts from the most relevant papers:"
ALSO_RELEVANT_HEADING = "Also relevant:"
UNVERIFIED = "The model's answer could not be verified against the abstracts; showing extracts."
TABLE_NEEDS_PAPERS = ("Which papers should the table cover? Name a topic (“Make a table of the papers "
                      "on causal inference: method, data”) or the papers.")


def model_failed(error: Exception) -> str:
    return f"The language model failed ({type(error).__name__}: {str(error)[:120]}); showing extracts instead."


def model_unavailable(reason: str) -> str:
    return f"The language model is unavailable ({reason}); showing extracts instead."


def not_found(targets: list[str]) -> str:
    """The sides of a comparison that found no paper."""
    return "Not found in this collection: " + ", ".join(f"“{m}”" for m in targets) + "."
