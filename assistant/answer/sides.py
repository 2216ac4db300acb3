"""The sides of a comparison: "compare A with B" → ["A", "B"].

Sides are names ("Top-W", "Verbalized Sampling"), exact titles, or descriptions ("the paper
that unrolls the discriminator optimization", "the goal-oriented one"); what both sides share
("the two causal papers: …") is carried into each description, and a trailing clause that says
how to compare ("… as views on failure modes") is not a side. Resolving each side to a paper is
the planner's work; this module only reads the message.
"""
from __future__ import annotations

import json
import re

from ..text import enumerated, has_words, normalise, stems, terms

# a clause after the names says how to compare, not what: "... as views on LLM failure modes"
HOW = r"\s+(?:as|in terms of|with respect to|regarding|on how|in how|in what|when it comes to)\s+.*$"
TRAILING_CLAUSE_RE = re.compile(HOW, re.I)
# after two names, also what for and a question about them: "gptq vs awq for 4 bit weight
# quantization, which is better", "DreamerV3 and MuZero as approaches to learning with world models"
NAME_WORDS = 3  # a side this short is a name ("Regularization Learning Networks"), not a description
AFTER_NAMES_RE = re.compile(HOW + r"|\s+for\s+.*$|\s*,\s*(?:and\s+)?(?:which|what|how|why)\b.*$", re.I)
# after the last side, how to compare rather than what ("… as views on LLM failure modes")
SIDE_NOUN = r"(?:one|paper|work|method|approach|study|article)s?"
# (only right after the side's noun: "the one that treats X as an energy function" keeps its "as")
HOW_CLAUSE_RE = re.compile(rf"(\b{SIDE_NOUN})\s+(?:as|in terms of|with respect to|regarding|when it comes to|"
                           r"on how)\s+.*$", re.I)
# a side described rather than named: "the paper that unrolls …", "the one estimating the
# global error", "the goal-oriented one", "the geometric Littlewood-Offord paper (…)"
SIDE_START = rf"the\s+(?:[\w'()-]+\s+){{0,5}}?{SIDE_NOUN}(?![\w-])"
DESCRIPTION_RE = re.compile(rf"^{SIDE_START}", re.I)
DESCRIPTION_SEARCH_RE = re.compile(rf"\b{SIDE_START}", re.I)
SIDE_SPLIT_RE = re.compile(rf"\s*[,;]?\s+(?:with|and|or|to|versus|vs\.?|against|(?:differs?|different)\s+from|from)"
                           rf"\s+(?={SIDE_START})", re.I)
SIDE_SCAFFOLD_RE = re.compile(rf"^the\s+|(?<![\w-]){SIDE_NOUN}(?![\w-])|\b(?:that|which|who|where|on|about)\b", re.I)
# after the last side, a remark or a new sentence is not part of it ("… brain regions — any
# methodological overlap?", "… hidden confounders. How do they use the features differently?")
# "… with probabilities? both seem to be about …", "… typical answer. how do they differ?")
QUESTION_WORD = r"(?:how|what|which|why|who|do|does|did|is|are|can|could|both|and|but)\b"
REMARK_RE = re.compile(rf"\s+[—–]\s+.*$|\s+-\s+.*$|(?<=\w)[.;:?!]\s+(?=[A-Z]).*$|(?<=\w)\?\s+.*$|"
                       rf"(?<=\w)[.!]\s+(?={QUESTION_WORD}).*$", re.S)
# what ends a numbered side: a sentence end, or the connector to the next ("(a) X, vs (b) Y")
NUMBERED_SIDE_END_RE = re.compile(r"(?:(?<=\w{2})|(?<=[)\]]))[.?!](?:\s.*)?$|"
                                  r"[\s,;]+(?:vs\.?|versus|and|with|against|to)$", re.S | re.I)
DASH_RE = re.compile(r"\s+[—–-]\s+")
# "the two … papers for X:" before a colon says what both sides share
SHARED_RE = re.compile(r"\bthe\s+(?:two|both)\b|\b(?:papers|works|studies|articles|ones)\b", re.I)


# Where one side ends and the other begins, strongest first: a comparison has two sides, so a
# message is cut once, at the strongest connector, and "and", "with" or "to" inside a side
# ("upper and lower bounds", "ADMM with variance reduction") stay in it.
CONNECTORS = [
    re.compile(r"\s+(?:vs\.?|versus|against)\s+", re.I),
    re.compile(r"\s+(?:(?:is|are)\s+)?(?:differs?|different)(?:\s*,[^,]{1,60},)?\s+from\s+", re.I),
    re.compile(r"\s+(?:relates?|related|compares?)\s+(?:to|with)\s+", re.I),
    re.compile(r"\s*[,;]?\s+(?:with|and|or|to|from)\s+(?=(?:the|a|an)\s)", re.I),
    re.compile(r"\s+with\s+", re.I),
    re.compile(r"\s*,\s+and\s+|\s+and\s+|\s*&\s*", re.I),
    re.compile(r"\s+to\s+", re.I),
]
LEADING_CONNECTOR_RE = re.compile(r"^(?:with|and|to|vs\.?|versus|against|from)\s+", re.I)
LIST_SPLIT_RE = re.compile(r"\s*(?:,|;|&|\band\b)\s*", re.I)
ONE_OTHER_RE = re.compile(r"^(?:the\s+)?(?:one|first)\b(.+?)[,;]?\s+(?:and\s+|while\s+|whereas\s+)?"
                          r"the\s+(?:other|second)\b(.+)$", re.I | re.S)
# "…: one does X, and the other does Y." anywhere in a message: a correlative pair of clauses,
# each describing a paper ("one of", "which one", "no one" start none; "another" only after a
# clause's punctuation or connective, not "one model imitates another"); the pair may cross a
# statement's end ("One paper has X. Another has Y."), never a question's
TOLD_ONE_OTHER_RE = re.compile(
    r"(?:^|(?<=[:;,.!?—–])\s*)(?:the\s+)?one\b(?!\s+of\b)(?:\s+(?:paper|work|study))?([^?!]+?)"
    r"(?:[,;.]\s+(?:(?:and|while|whereas|but)\s+)?|\s+(?:and|while|whereas|but)\s+)"
    r"(?:the\s+other|another)(?:\s+(?:one|paper|work|study))?\b([^?!]+?)(?:[.?!](?=\s|$)|$)", re.I | re.S)
QUESTION_START_RE = re.compile(r"^(?:how|what|which|why|where|when|do|does|did|is|are|can|in what)\b", re.I)
NAME_SCAFFOLD_RE = re.compile(r"(?<![\w-])(the|a|an|papers?|works?|methods?|approach(es)?|called|on|about|"
                              r"one|two|does|do|differ|differs|different)(?![\w-])", re.I)
# the words that start a comparison's sides ("between" only after a word asking for one:
# "the difference between A and B", not "causal graphs between brain regions")
# "…: A, or the one that B? compare them briefly", "A, vs. B - compare the two routes to compact
# models": the sides are before "compare", not in it (a pair's noun may take a phrase of its own)
POINTING_BODY_RE = re.compile(r"^\W*(?:(?:them|these|those|both|the two|each other)(?:\s+[\w-]+){0,2}|"
                              r"(?:both|the|these|those) two\s+[\w-]+\s+(?:to|for|of|on|in|towards?)"
                              r"(?:\s+[\w-]+){1,4})\W*$", re.I)
HOW_DOES_RE = re.compile(r"\b(?:how|in what way|what)\s+(?:does|do|is|are)\s+", re.I)
COMPARED_TO_RE = re.compile(r"\s+(?:to|with)\s", re.I)
COMPARE_START_RE = re.compile(r"\b(?:compare|comparing|contrast|(?:difference|differences|distinction|"
                              r"relationship|choose)\s+between)\b(.*)", re.I | re.S)


# a side that cites a publication ("batch norm (Ioffe & Szegedy 2015)", "Hamilton's original 1982
# three-manifolds paper", "He et al."): a work the user knows from elsewhere, maybe not here
CITATION_RE = re.compile(r"(?<![\w.-])(?:1[6-9]|20)\d\d(?![\w.-])|\bet al\b|\w\s*&\s*\w", re.I)


# fewer content words than this is a name or a fragment ("against" in "what do they compare
# against?"), not a description of a paper
DESCRIPTION_TERMS = 3


def describes_a_paper_here(side: str) -> bool:
    """A side that describes a paper in words, not a name, a fragment, or a work cited from
    elsewhere: the message says the paper is in the collection."""
    return len(terms(side)) >= DESCRIPTION_TERMS and not CITATION_RE.search(side)


def compare_targets(message: str) -> list[str]:
    """The sides of "compare A with B": names ("Top-W", "Verbalized Sampling") or descriptions
    ("the paper that unrolls the discriminator optimization")."""
    numbered = numbered_sides(message) or told_sides(message)
    if numbered:
        return numbered
    m = COMPARE_START_RE.search(message)
    if m and POINTING_BODY_RE.search(m.group(1)) and terms(message[:m.start()]):
        message, m = message[:m.start()], None
    if m and _measured_against(message, m):
        # "how does A compare to B": A is before the verb, and "compare to" cuts the sides;
        # what comes before "how does" frames the question ("For catastrophic forgetting: how
        # does A compare with B?")
        message, m = _subject(message[:m.start()]) + message[m.start():], None
    body = _comparison_body(m.group(1) if m and terms(m.group(1)) else message)
    # "between" may sit inside a described side ("… causal graphs between brain regions"):
    # sides described from the message's first "the … paper" are tried as well
    first = DESCRIPTION_SEARCH_RE.search(message)
    described = described_sides(body) or (described_sides(_comparison_body(message[first.start():])) if first else [])
    if described:
        return described
    body = _without_after_names(_before_question(body))
    one_other = ONE_OTHER_RE.search(body.split(":")[-1].strip())
    sides = list(one_other.groups()) if one_other else _two_sides(body)
    sides[-1] = HOW_CLAUSE_RE.sub(r"\1", TRAILING_CLAUSE_RE.sub("", sides[-1]))
    return [t for t in (_clean_name(s) for s in sides) if t and (terms(t) or t.isupper())]


def compared_against(message: str) -> str:
    """The side after the verb in "how does A compare to B" (B): what A is measured against,
    often a work from elsewhere ("… compare with CycleGAN's cycle-consistency approach"), so
    the message does not say it is a paper here unless it describes one ("… with the one
    that …"). "" for other forms."""
    m = COMPARE_START_RE.search(message)
    if not (m and _measured_against(message, m)):
        return ""
    side = LEADING_CONNECTOR_RE.sub("", _comparison_body(m.group(1)))
    return "" if DESCRIPTION_RE.search(side) else _clean_name(side)


def _measured_against(message: str, compare: re.Match) -> bool:
    """Is the message "how does A compare to/with B", A before the verb (`compare`: where
    COMPARE_START_RE found the verb)?"""
    return bool(COMPARED_TO_RE.match(compare.group(1)) and terms(_subject(message[:compare.start()])))


def numbered_sides(message: str) -> list[str]:
    """The sides of "compare (a) X and (b) Y" / "First: X. Second: Y.", each up to its first
    sentence end; [] when the message numbers fewer than two."""
    sides = [NUMBERED_SIDE_END_RE.sub("", item.strip()) for item in enumerated(message)]
    sides = [t for t in (_clean_name(s) for s in sides) if terms(t)]
    return sides if len(sides) >= 2 else []


def told_sides(message: str) -> list[str]:
    """The two papers a message describes as "one X, and the other Y" (anywhere in it, also
    across two sentences: "One paper has X. Another has Y."), when each describes a paper; []
    otherwise."""
    m = TOLD_ONE_OTHER_RE.search(message)
    sides = list(m.groups()) if m else []
    if not sides or not all(describes_a_paper_here(side) for side in sides):
        return []
    return [_clean_name(side) for side in sides]


def _comparison_body(body: str) -> str:
    """The body without end punctuation, a leading "how does", or a remark after the sides; a
    dash that introduces described sides ("the two X papers — the one … and the one …") is
    read as a colon."""
    body = re.sub(r"[?.!]+$", "", body.strip())
    how = HOW_DOES_RE.match(body)
    body = body[how.end():] if how else body
    dash = DASH_RE.search(body)
    after = body[dash.end():] if dash else ""
    if dash and (len(SIDE_SPLIT_RE.split(after)) >= 2 or ONE_OTHER_RE.search(after)):
        body = body[:dash.start()] + ": " + body[dash.end():]
    return REMARK_RE.sub("", body).strip()


def _subject(before: str) -> str:
    """What "… how does X compare to" asks about: X, after the last "how does" ("what accuracy
    did they get, and how does that compare with …": "that", a pointer, not a side)."""
    starts = list(HOW_DOES_RE.finditer(before))
    return before[starts[-1].end():] if starts else before


def _without_after_names(body: str) -> str:
    """Two or more short names without what follows them ("A and B as approaches to X" → "A and
    B"); a longer side keeps its clause ("the Schrödingerization algorithm for the fractional
    Poisson equation"), as does "BERT for classification with GPT" (one side before "for")."""
    after = AFTER_NAMES_RE.search(body)
    head = body[:after.start()] if after else ""
    names = _two_sides(head) if head and not head.endswith(",") else []  # ", in terms of rates," is an aside
    if len(names) >= 2 and all(len(n.split()) <= NAME_WORDS for n in names):
        return body[:after.start()]
    return body


def _before_question(body: str) -> str:
    """The part of "X: Y" naming the sides: Y when it does ("the two sampling papers: Top-W and
    VS"), X when Y is a question or a remark ("Heurtebise vs Fröhlich: how do they differ")."""
    head, colon, tail = body.rpartition(":")
    if not colon:
        return body
    if (QUESTION_START_RE.search(tail.strip()) or (len(_two_sides(tail)) < 2 <= len(_two_sides(head)))
            or (_cut_by_versus(head) and not _cut_by_versus(tail))):
        return head
    return tail


def _cut_by_versus(body: str) -> bool:
    """Is `body` cut into sides at "vs" / "versus" / "against", the strongest connector? "A vs B:
    both cut communication, one by X and one by Y" names its sides before the colon; what
    follows says what they share."""
    return bool(_cut_at(CONNECTORS[0], _without_leading_connector(body)))


def _without_leading_connector(body: str) -> str:
    return LEADING_CONNECTOR_RE.sub("", body.strip())  # "compare [it] with Top-W"


def _cut_at(connector: re.Pattern, body: str) -> list[str]:
    """`body` cut at the first place `connector` matches with words on both sides; [] if none."""
    cut = connector.search(body)
    if cut and body[:cut.start()].strip() and body[cut.end():].strip():
        return [body[:cut.start()], body[cut.end():]]
    return []


def _two_sides(body: str) -> list[str]:
    """A list of short names ("A, B and C") stays a list; anything else is cut once."""
    body = _without_leading_connector(body)
    parts = [p for p in LIST_SPLIT_RE.split(body) if p and p.strip()]
    if len(parts) >= 3 and all(len(p.split()) <= 3 for p in parts):
        return parts
    for connector in CONNECTORS:
        sides = _cut_at(connector, body)
        if sides:
            return sides
    return [body]


def _clean_name(side: str) -> str:
    text = SIDE_SCAFFOLD_RE.sub(" ", side) if DESCRIPTION_RE.search(side.strip()) else side
    return " ".join(NAME_SCAFFOLD_RE.sub(" ", text).split()).strip(" ,;:-–—'\"“”")


def described_sides(body: str) -> list[str]:
    """"the paper that unrolls X with the one that treats Y" → the two descriptions; "the two
    X papers: the one doing Y and the Z one" → each description with what they share (X)."""
    shared = ""
    head, colon, tail = body.partition(":")
    if colon and len(SIDE_SPLIT_RE.split(tail.strip())) >= 2:
        body, shared = tail.strip(), " ".join(SHARED_RE.sub(" ", head).split())
    if not DESCRIPTION_RE.search(body.strip()):
        return []
    sides = [s for s in SIDE_SPLIT_RE.split(body.strip()) if s.strip()]
    if len(sides) < 2:
        return []
    sides[-1] = HOW_CLAUSE_RE.sub(r"\1", REMARK_RE.sub("", sides[-1]))  # "… the sycophancy paper as views on failure modes"
    out = [" ".join(SIDE_SCAFFOLD_RE.sub(" ", s).split()).strip(" ,;") for s in sides]
    return [f"{s} ({shared})" if shared else s for s in out if s]


SIDE_WORDS_TOKENS = 48  # what the model may write for the sides of a comparison (a few short lines)
LIST_MARK_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\)|paper\s+\d+\s*:)\s*", re.I)


def stand_ins(missing: list[str], found: list[str], copied: list[str]) -> dict[str, str]:
    """For each side the phrase reading found no paper for (`missing`), the model's copied side
    (`copied`) that shares the most content words with it, more than any other copy does and more
    than it shares with any side that was found: "the original dynamic routing one" → "Dynamic
    Routing", not "Capsule Network Paper". Copies are not in the phrase reading's order, so
    they are matched by their words. A missing side no copy stands in for is left out; {} when
    a side that was found shares no word with the copies left over."""
    def shared(a: str, b: str) -> int:
        return len(stems(" ".join(terms(a))) & stems(" ".join(terms(b))))
    chosen: dict[str, str] = {}
    for side in missing:
        scores = sorted(((shared(side, c), c) for c in copied), reverse=True)
        if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
            continue
        best = scores[0][1]
        if all(shared(best, other) < scores[0][0] for other in found) and best not in chosen.values():
            chosen[side] = best
    # the sides found stay only when the copy confirms them: each shares words with a copy left
    # over ("infinitely many variables", a piece the phrase reading cut, is in no copy)
    rest = [c for c in copied if c not in chosen.values()]
    return chosen if all(any(shared(side, c) for c in rest) for side in found) else {}


def copied_sides(written: str, message: str) -> list[str]:
    """The lines of `written` (the model's sides of a comparison, one a line) as the words of
    `message` have them (`_as_the_message_says`), once each: a side the model made up is not a
    side the user asked for. [] unless at least two remain."""
    said = " ".join(normalise(message).split())
    most = len(said.split()) / 2  # a side is part of the message, never most of it
    sides: list[str] = []
    for line in written.splitlines():
        side = _as_the_message_says(LIST_MARK_RE.sub("", line).strip().strip("\"'“”‘’`").strip(" .,;:"), said)
        if side and len(side.split()) <= most and side not in sides:
            sides.append(side)
    return sides if len(sides) >= 2 else []


def _as_the_message_says(side: str, said: str) -> str:
    """`side` when the message (`said`, normalised) has it word for word; else its longest run of
    words the message has, when that run is at least half of it and holds a content word (the
    small model bends names: "Top-W Sampling" for "Top-W vs Verbalized Sampling" gives "Top-W");
    else ""."""
    words, shown = normalise(side).split(), side.split()
    if " ".join(words) in said:
        return side
    for size in range(len(words) - 1, 0, -1):
        if 2 * size < len(words):
            break
        for i in range(len(words) - size + 1):
            run = " ".join(words[i:i + size])
            if terms(run) and has_words(said, run):
                return " ".join(shown[i:i + size])
    return ""


# a word of the message as a grammar may copy it: its surrounding punctuation dropped ("(the",
# "nvp?" → "the", "nvp"), what is inside kept ("WGAN-GP", "DualGraph's", "1x1")
WORD_EDGE = "\"'“”‘’`,.;:?!()[]{}"
COPY_WORDS = 150  # a longer message gets no grammar (its rules grow with its words)


def copy_grammar(message: str, papers: int = 2) -> str:
    """A GBNF grammar under which the model can write only `papers` lines "Paper i: <words>",
    each a run of consecutive words of `message` (prompts/sides.txt's form). A small model
    asked to copy the words naming each paper rewrites them instead ("Glow" and "Invertible 1x1
    Convolutional Neural Networks" for "what does glow add on top of real nvp …?"), and
    `copied_sides` can only drop what it made up; under the grammar every line is the user's.
    Rule w_i is a run that starts at word i: word i, then optionally run i+1. "" for an empty
    message or one over COPY_WORDS words."""
    words = [w.strip(WORD_EDGE) or w for w in message.split()]
    if not words or len(words) > COPY_WORDS:
        return ""
    lines = ' "\\n" '.join(f'"Paper {i}: " run' for i in range(1, papers + 1))
    rules = [f"root ::= {lines}", "run ::= " + " | ".join(f"w{i}" for i in range(len(words)))]
    for i, word in enumerate(words):
        rest = f' (" " w{i + 1})?' if i + 1 < len(words) else ""
        rules.append(f"w{i} ::= {json.dumps(word, ensure_ascii=False)}{rest}")
    return "\n".join(rules)
