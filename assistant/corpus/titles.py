"""Short display labels for papers that have no title (the seed listing has none).

A label is shown in place of a title and marked `title_is_derived`, so it must be honest: it is
built only from words of the abstract. In order of preference:

1. the method, system or dataset the abstract introduces ("we propose X", "we introduce X, a
   ...", "by introducing X"), with its own description when it has one: "Top-W: geometry-aware
   truncation rule", "Meta Context Engineering (MCE): bi-level framework ...". Only phrases that
   look like a name count (a capital letter, CamelCase, an acronym): "we propose a novel method"
   names nothing and is skipped;
2. the thesis of a position paper ("this paper argues that X");
3. the abstract's first sentence, cut at a clause or word boundary with "…".
"""
from __future__ import annotations

import re
from typing import Iterator, Optional

MAX_LEN = 100  # hard limit for a whole label
NAME_LEN = 80  # limit for the name part of "name: description"
FALLBACK_LEN = 90  # limit for a label made from the first sentence
MIN_DESCRIPTION_LEN = 20  # shorter room than this: leave the description out

# "we propose", "This paper introduces", "we also present", "we formalize this as", "by introducing"
_INTRODUCES = re.compile(
    r"\b(?:we|this\s+(?:paper|work|article|study))\s+"
    r"(?:(?:also|further|then|first|now|here|additionally)\s+)?"
    r"(?:(?:propose|present|introduce|develop|design|release)s?"
    r"|formali[sz]es?\s+(?:this|it|them)\s+as"
    r"|(?:call|term|name|dub)s?\s+(?:this|it|them|our\s+\w+))\s+"
    r"|\bby\s+(?:proposing|introducing|presenting|developing)\s+",
    re.IGNORECASE,
)
_ARGUES = re.compile(
    r"\b(?:this\s+(?:position\s+)?(?:paper|work|article)\s+argues|we\s+argue)\s+that\s+", re.IGNORECASE
)
# A sentence ends at ". " before a capital (or at the end), but not after "e.g.", "i.e.", "vs.",
# "et al." or a single capital initial.
_SENTENCE_END = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bal)(?<!\b[A-Z])[.!?](?=\s+[A-Z0-9\"'“(\[$]|\s*$)"
)
_RELATIVE = r"that|which|whose|where|who|whom|whereby|wherein"
# Where the phrase naming the thing ends; what follows may describe it ("X, a ...", "X as a ...").
_NAME_END = re.compile(
    rf"\s*[,;:—–]\s*|\s+-\s+|\s+(?:{_RELATIVE}|as|and\s+(?:show|use|demonstrate|evaluate|prove))\b\s*"
)
# Where a description may be cut: punctuation or a relative clause.
_DESCRIPTION_CUT = re.compile(rf"\s*[,;:—–]\s*|\s+-\s+|\s+(?:{_RELATIVE})\b")
# Words after which a long phrase can be shortened without losing its head ("... built on X").
_SOFT_CUT = re.compile(
    r"\s+(?:to|for|with|using|via|by|in|on|from|under|over|through|across|based|built|designed"
    r"|trained|defined|that|which|where|whose)\b"
)
_LEADING_FILLER = re.compile(
    r"^(?:(?:a|an|the|our|this|novel|new|(?:concept|notion|idea)\s+of)\s+)+", re.IGNORECASE
)
# LaTeX and Markdown emphasis that abstracts carry: "\emph{x}", "{\em x}", "*x*" → "x".
_MARKUP = re.compile(
    r"\\(?:emph|textit|textbf|textsc|texttt|text|mathrm)\{([^{}]*)\}"
    r"|\{\\(?:em|it|bf|sc|tt)\s+([^{}]*)\}"
    r"|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])"
)
_NAMING_WORD = re.compile(r"\s+(?:called|named|dubbed|termed)\s+", re.IGNORECASE)
_DANGLING_END = re.compile(
    r"(?:[\s,;:—–-]+|\s+(?:a|an|the|of|and|or|to|for|in|on|with|by|as|at|from|its|their|built|based"
    r"|designed|trained|defined|derived))+$",
    re.IGNORECASE,
)
_APPOSITION_START = re.compile(r"^(?:a|an|the)\s", re.IGNORECASE)
_HAS_CAPITAL = re.compile(r"[A-Z]")


def derive_title(abstract: str) -> str:
    """A short, honest label for a paper from its abstract alone ("" for an empty abstract)."""
    text = _tidy(abstract)
    if not text:
        return ""
    sentences = list(_sentences(text))
    for label in _introduced_names(sentences):
        return label
    for label in _theses(sentences):
        return label
    return _first_sentence_label(sentences) or _clip(text, FALLBACK_LEN)


# -- candidates -------------------------------------------------------------------------------

def _introduced_names(sentences: list[str]) -> Iterator[str]:
    for sentence in sentences:
        for match in _INTRODUCES.finditer(sentence):
            label = _label_for_introduction(sentence[match.end():], sentences)
            if label:
                yield label


def _label_for_introduction(rest: str, sentences: list[str]) -> Optional[str]:
    """'Top-W, a geometry-aware truncation rule that ...' → 'Top-W: geometry-aware truncation rule'."""
    rest = re.sub(r"^and\s+\w+\s+", "", rest.rstrip(".!?"))  # "we introduce and study X"
    if re.match(r"(?:to|that|how|whether|a\s+way)\b", rest, re.IGNORECASE):
        return None  # "we propose to ..." / "we present how ...": no named thing follows
    split = _first_top_level(_NAME_END, rest)
    name, description = (rest[: split.start()], rest[split.end():]) if split else (rest, "")
    name = _LEADING_FILLER.sub("", name).strip()
    name, description = _split_name_from_article(name, description)
    if _NAMING_WORD.search(name) or not _looks_named(name):
        name, description = _apposed_name(name, description)
        if not name:
            return None
    name = _shorten_name(name)
    after_colon = split is not None and split.group().strip() == ":"
    if not (_APPOSITION_START.match(description) or after_colon):
        description = ""  # "X, where ..." / "X and show ...": what follows does not describe X
    return _combine(_capitalise(name), _description(description), sentences)


def _theses(sentences: list[str]) -> Iterator[str]:
    for sentence in sentences:
        match = _ARGUES.search(sentence)
        if match:
            yield _clip(_capitalise(sentence[match.end():].rstrip(".!?")), FALLBACK_LEN)


def _first_sentence_label(sentences: list[str]) -> str:
    first = next((s for s in sentences if re.search(r"\w", s)), "").rstrip(".!?")
    if len(first) > FALLBACK_LEN:
        clause = re.split(r",\s+(?:yet|but|while|whereas|and\s+yet)\s+|;\s+|\s+—\s+", first, maxsplit=1)[0]
        if len(clause) >= FALLBACK_LEN // 2:
            first = clause
    return _clip(first, FALLBACK_LEN)


# -- pieces of a label ------------------------------------------------------------------------

def _split_name_from_article(name: str, description: str) -> tuple[str, str]:
    """'Proteus a strictly lookup-free TCQ framework' (no comma) → ('Proteus', 'a strictly ...')."""
    match = re.search(r"\s(an?)\s", name)
    if match and _looks_named(name[: match.start()]):
        return name[: match.start()].strip(), name[match.start():].strip()
    return name, description


def _apposed_name(head: str, description: str) -> tuple[str, str]:
    """'a new benchmark, FooBench, ...' or 'a benchmark called FooBench' → ('FooBench', head)."""
    called = _NAMING_WORD.search(head)
    if called and _looks_named(head[called.end():]):
        return head[called.end():].strip(), "a " + _LEADING_FILLER.sub("", head[: called.start()]).strip()
    candidate = re.split(r"\s*[,;:]\s*", description, maxsplit=1)[0]
    candidate = re.sub(r"^(?:called|named|dubbed|termed)\s+", "", candidate, flags=re.IGNORECASE)
    if candidate and len(candidate.split()) <= 4 and _looks_named(candidate) and head:
        return candidate.strip(), "a " + head
    return "", ""


def _looks_named(phrase: str) -> bool:
    """A name has a capital letter after the first word or is CamelCase/an acronym: 'Top-W',
    'DualGraph', 'subspace-based ZO (SZO) method'. 'bi-level contrastive algorithm' is not one."""
    phrase = phrase.strip()
    if not phrase or len(phrase.split()) > 16:
        return False
    head = _first_top_level(_SOFT_CUT, phrase)
    head = phrase[: head.start()] if head else phrase
    return bool(_HAS_CAPITAL.search(head))


def _shorten_name(name: str) -> str:
    """Long names are cut after their acronym ('... Alignment (CTO-VPA)') or at a soft cut."""
    if len(name) <= NAME_LEN:
        return name
    acronym_ends = (m.end() for m in re.finditer(r"\([^()]{1,20}\)", name) if m.end() <= NAME_LEN)
    acronym_end = max(acronym_ends, default=0)
    if acronym_end:
        return name[:acronym_end]
    return _clip_at_soft_cut(name, NAME_LEN)


def _description(text: str) -> str:
    """The appositive after a name, up to the first comma or relative clause that leaves at least
    two words: 'a simple, training-free prompting strategy' keeps going past 'a simple'."""
    text = text.strip().rstrip(".!?")
    for cut in _top_level_matches(_DESCRIPTION_CUT, text):
        candidate = _LEADING_FILLER.sub("", text[: cut.start()]).strip()
        if len(candidate.split()) >= 2:
            return candidate
    return _LEADING_FILLER.sub("", text).strip()


def _combine(name: str, description: str, sentences: list[str]) -> str:
    room = MAX_LEN - len(name) - 2
    if description and room >= MIN_DESCRIPTION_LEN:
        return f"{name}: {_clip_at_soft_cut(description, room)}"
    if len(name.split()) <= 2 and "(" not in name and room >= MIN_DESCRIPTION_LEN + 1:
        # A bare name ("BEAR") says nothing about the topic: add the opening of the abstract.
        return f"{name} — {_clip(_first_sentence_label(sentences), room - 1)}"
    return name


# -- text helpers -----------------------------------------------------------------------------

def _tidy(text: str) -> str:
    text = _MARKUP.sub(lambda m: next(g for g in m.groups() if g is not None), text or "")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,;:.])", r"\1", text)  # "Top-W , a ..." → "Top-W, a ..."


def _sentences(text: str) -> Iterator[str]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        sentence = text[start: match.end()].strip()
        if sentence:
            yield sentence
        start = match.end()
    if text[start:].strip():
        yield text[start:].strip()


def _capitalise(text: str) -> str:
    """Upper-case the first letter of a plain first word ('multi-view ...'), but leave names that
    are written in lower case on purpose ('nn-APPEX', 'word2vec') alone."""
    text = text.strip()
    first_word = text.split(" ", 1)[0]
    if re.fullmatch(r"[a-z][a-z-]*", first_word):
        return text[0].upper() + text[1:]
    return text


def _clip(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, ending in '…' when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if text[limit - 1].isalnum() and " " in cut:  # mid-word: back up to the last whole word
        cut = cut[: cut.rfind(" ")]
    return _DANGLING_END.sub("", cut) + "…"


def _clip_at_soft_cut(text: str, limit: int) -> str:
    """Shorten by dropping a trailing qualifier ('... built on X'), unless that leaves too little
    ('natural way' of 'natural way to incorporate ...'): then cut at a word boundary."""
    if len(text) <= limit:
        return text
    cuts = [m.start() for m in _SOFT_CUT.finditer(text) if m.start() <= limit]
    for cut in reversed(cuts):
        shortened = _DANGLING_END.sub("", text[:cut])
        if len(shortened.split()) >= 3 or len(shortened) >= limit // 2:
            return shortened
    return _clip(text, limit)


def _top_level_matches(pattern: re.Pattern, text: str) -> Iterator[re.Match]:
    """Matches of `pattern` outside brackets, so '(e.g., a, b)' or '(CTO-VPA)' never split."""
    depth_at = _bracket_depths(text)
    for match in pattern.finditer(text):
        if depth_at[match.start()] == 0:
            yield match


def _first_top_level(pattern: re.Pattern, text: str) -> Optional[re.Match]:
    return next(_top_level_matches(pattern, text), None)


def _bracket_depths(text: str) -> list[int]:
    depths, depth = [], 0
    for char in text:
        if char in "([{":
            depth += 1
        depths.append(depth)
        if char in ")]}":
            depth = max(0, depth - 1)
    depths.append(depth)
    return depths
