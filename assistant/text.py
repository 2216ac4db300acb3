"""Text helpers shared by planning, evidence selection and grounding: sentences, terms, stems."""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Sequence

# Words that carry no topic: question scaffolding and research boilerplate. A question whose
# remaining terms are all absent from a paper is not about that paper, however close the
# embedding looks.
STOPWORDS = set("""
a an the and or but if of in on at to for from by with without about into over under between
is are was were be been being am do does did done doing has have had having can could should
would will shall may might must it its it's they them their this that these those there here
what which who whom whose when where why how whether any some all each every either neither
not no nor so than too very just also only more most much many such own same other another
i me my we our you your he she his her us one ones paper papers work works study studies
studied article articles collection corpus tell show give list find describe explain summarize
summarise summary overview compare comparison versus vs contrast difference differences
between both approach approaches method methods propose proposes proposed present presents
introduce introduces use uses used using new novel based way ways kind kinds type types
research researcher authors author wrote written write area areas field topic topics
please thing things something anything does do get gets got make makes made let lets
exist exists existing there's is there any related regarding concerning achieve achieves
obtain obtains main key idea ideas problem problems address addresses result results
deal deals dealing focus focuses focusing look looks looking talk talks cover covers covering
mention mentions discuss discusses involve involves involving apply applies applied doing
""".split())

TERM_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*")
# not after an abbreviation's period: "740 vs. 1020 GB/s", "Smith et al. (2020)", "Fig. 3"
SENT_SPLIT_RE = re.compile(r"(?<=[.!?])(?<!\bvs\.)(?<!\bal\.)(?<!\bcf\.)(?<!\bFig\.)(?<!\bEq\.)"
                           r"(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z0-9(\[$\"“])")
DASHES_RE = re.compile(r"[\u2010-\u2015-]+")


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def normalise(text: str) -> str:
    """Lower-case, one hyphen for any run of dashes ("Kolmogorov--Arnold" = "Kolmogorov-Arnold")."""
    return DASHES_RE.sub("-", text).lower()


def split_sentences(text: str) -> list[str]:
    parts = [s.strip() for s in SENT_SPLIT_RE.split(" ".join(text.split()))]
    return [p for p in parts if p]


def terms(text: str) -> list[str]:
    """Content terms of `text`, lower-cased, hyphenated names kept whole."""
    out = []
    for tok in TERM_RE.findall(normalise(text)):
        if tok in STOPWORDS or (len(tok) < 2 and not tok.isdigit()):
            continue
        out.append(tok)
    return out


def stem(token: str) -> str:
    return _stemmer().stemWord(token)


def stems(text: str) -> set[str]:
    """Stems of every word of `text`, including the parts of hyphenated words."""
    out: set[str] = set()
    for tok in TERM_RE.findall(normalise(text)):
        out.add(stem(tok))
        if "-" in tok:
            out.update(stem(p) for p in tok.split("-") if p)
    return out


def common_prefix(a: Sequence, b: Sequence) -> int:
    """How many leading items of `a` and `b` are equal (characters of two words, tokens of two
    prompts)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def near_form(term: str, words: set[str]) -> bool:
    """Another form of the same word that stemming misses ("sycophancy" ~ "sycophantic")."""
    if len(term) < 6:
        return False
    for w in words:
        p = common_prefix(term, w)
        if p >= 6 and p >= 0.75 * min(len(term), len(w)):
            return True
    return False


def tokens(text: str) -> list[str]:
    """Every word of `text` in order, lower-cased, hyphenated and "what's" kept whole (also the
    words the intent model's n-gram features count: answer/intent.py, benchmarks/fit_intent.py)."""
    return TERM_RE.findall(normalise(text))


def words_of(text: str) -> set[str]:
    return set(tokens(text))


def term_in(term: str, text_stems: set[str], text_norm: str,
            words: set[str] | None = None) -> bool:
    """A query term matches a text by stem, as a whole hyphenated name, by all its parts,
    or as a near form of one of its words."""
    if DECIMAL_RE.fullmatch(term):  # a figure matches only as itself
        return bool(re.search(r"(?<![\w.])" + re.escape(term) + r"(?![\d])", text_norm))
    if stem(term) in text_stems:
        return True
    if words is not None and "-" not in term and near_form(term, words):
        return True
    if "-" in term:
        if re.search(r"(?<![a-z0-9])" + re.escape(term) + r"(?![a-z0-9])", text_norm):
            return True
        parts = [p for p in term.split("-") if len(p) > 1]
        return bool(parts) and all(stem(p) in text_stems for p in parts)
    return False


def is_distinctive(raw_token: str) -> bool:
    """Looks like a name: an acronym, CamelCase, a hyphenated/digit-bearing identifier."""
    if len(raw_token) < 2:
        return False
    inner_caps = sum(c.isupper() for c in raw_token[1:])
    return (inner_caps >= 1 or any(c.isdigit() for c in raw_token)
            or ("-" in raw_token and any(c.isupper() for c in raw_token)))


def acronym(token: str) -> str:
    """The acronym a word is, singular ("MAML" → "MAML", "GPs" → "GP"): two or more capital
    letters, an "s" after them allowed; "" for a word that is no acronym."""
    letters = token[:-1] if token.endswith("s") and len(token) >= 3 else token
    return letters if len(letters) >= 2 and letters.isalpha() and letters.isupper() else ""


DECIMAL_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)+")  # "33.7", "53.08": one figure, not two numbers


NAMED_TERM_RE = re.compile(TERM_RE.pattern + r"\+*")  # a name's "+" kept: "DCN+" is not "DCN"


def distinctive_tokens(text: str, plus: bool = False) -> list[str]:
    """Name-like tokens of a text; a decimal figure ("a 33.7% improvement") stays whole, as a
    paper that reports it names it exactly. `plus`: with the "+" a name ends in ("DCN+",
    "PixelCNN++"), for reading which paper a message names."""
    text = DASHES_RE.sub("-", text)
    figures = DECIMAL_RE.findall(text)
    rest = DECIMAL_RE.sub(" ", text)
    return figures + [t for t in (NAMED_TERM_RE if plus else TERM_RE).findall(rest) if is_distinctive(t)]


# Capitalised phrases ("the Dynamic Coattention Network", "Scalable Private Learning with PATE"):
# two capitalised words or more, joined by spaces or by one small word of a title ("with", "of";
# never "and", which joins two names: "Verbalized Sampling and Top-W"). Exact where it fires: a
# writer capitalises a name, not a description.
CAPITALISED = r"[A-Z][\w'’+-]*"
PHRASE_RE = re.compile(rf"{CAPITALISED}(?:\s+(?:(?:of|for|with|in|on|to|via|from|by|the|a|an)\s+)?{CAPITALISED})+")
SENTENCE_END_RE = re.compile(r"(?:[.?!:;—–]|\s-)\s*$")  # what a sentence's first word follows


def capitalised_phrases(text: str) -> list[str]:
    """The phrases of two capitalised words or more that read as names, with at least one word
    in title case (not a run of acronyms: "RL term", "GAN"). A sentence's first word is
    capitalised anyway, so it is left out ("Is DCN+ …" is not a name)."""
    found = []
    for m in PHRASE_RE.finditer(DASHES_RE.sub("-", text)):
        words = m.group(0).split()
        if _starts_sentence(text, m.start()):
            words = words[1:]
            while words and not words[0][0].isupper():
                words = words[1:]  # the small word after it ("Do the Verbalized Sampling …")
        capitalised = [w for w in words if w[0].isupper()]
        if len(capitalised) >= 2 and any(any(c.islower() for c in w) for w in capitalised):
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


def _starts_sentence(text: str, at: int) -> bool:
    """Does a word at `at` start the text or a sentence (after ". ", "? ", "— ")? A word right
    after a quote mark is a quoted name's ("\"Attention Is All You Need\" …"). Only the few
    characters before it are read, so a long message costs no more per phrase."""
    before = text[max(0, at - 8): at]
    if at <= 8 and not before.strip():
        return True
    return bool(SENTENCE_END_RE.search(before))


def idf(df: int, n_docs: int) -> float:
    return math.log((n_docs + 1) / (df + 0.5))


def shorten(text: str, words: int = 40) -> str:
    parts = text.split()
    if len(parts) <= words:
        return text.strip()
    return " ".join(parts[:words]).rstrip(",;:") + " …"


# numbered sub-questions: "(1) … (2) …", "1) … 2) …", "a) … b) …", "Q1: … Q2: …", "First, …
# Second, …"; only a run that counts from its first label (1, 2; a, b), so a stray "2)" or
# "(a)" inside a formula is not one
ENUMERATOR_RE = re.compile(r"(?:^|(?<=[\s:;,.?!]))(?:\(([1-5a-e])\)|([1-5a-e])\)|[Qq]([1-5])\s*[:.)]|"
                           r"(first|second|third)(?:ly)?\s*[,:])\s+", re.I)
ENUMERATOR_ORDER = ("12345", "abcde", ("first", "second", "third"))


def enumerated(message: str) -> list[str]:
    """The sub-questions of a message that numbers them ("Q1: … Q2: …", "(a) … (b) …"), without
    their labels and what comes before the first ("Two quick ones."); [] when it numbers none."""
    marks = list(ENUMERATOR_RE.finditer(message))
    for order in ENUMERATOR_ORDER:
        kept: list[re.Match] = []
        for m in marks:  # the labels in their order: 1 then 2 …, other marks skipped
            label = next(g for g in m.groups() if g).lower()
            if len(kept) < len(order) and label == order[len(kept)]:
                kept.append(m)
        if len(kept) >= 2:
            ends = [m.start() for m in kept[1:]] + [len(message)]
            pieces = [message[m.end():end].strip(" ,;") for m, end in zip(kept, ends)]
            return [re.sub(r"\s+(?:and|also)$", "", p, flags=re.I) for p in pieces if terms(p)]
    return []


WORD_JOIN = r"[\w-]"  # a character that joins a word to what is next to it (a word's or a hyphen)
WORD_START_RE = re.compile(rf"(?<!{WORD_JOIN})")  # where whole words may start (`words_pattern`)
WORD_END_RE = re.compile(rf"(?!{WORD_JOIN})")  # where they may end


def words_pattern(phrase: str, flags: int = 0) -> re.Pattern:
    """`phrase` as whole words: not inside a longer word or hyphenated name ("Long He" is not
    in "along heat", "GAT" not in "GATs-like")."""
    return re.compile(rf"(?<!{WORD_JOIN}){re.escape(phrase)}(?!{WORD_JOIN})", flags)


def has_words(text: str, phrase: str) -> bool:
    """Does `text` hold `phrase` as whole words (`words_pattern`)?"""
    return words_pattern(phrase).search(text) is not None


def as_written(phrase: str, texts: Sequence[str]) -> str:
    """A lower-cased phrase as `texts` write it when they mostly write it with two capitals or
    more ("llm" → "LLM", "relu" → "ReLU"); else lower-cased (a title's "Causal" stays
    "causal")."""
    found: dict[str, int] = {}
    pattern = words_pattern(phrase, re.I)
    for text in texts:
        for m in pattern.finditer(text):
            found[m.group(0)] = found.get(m.group(0), 0) + 1
    if not found:
        return phrase
    form, n = max(found.items(), key=lambda kv: kv[1])
    capitals = sum(c.isupper() for c in form)
    return form if capitals >= 2 and 2 * n >= sum(found.values()) else phrase


def label(phrases: Sequence[str]) -> str:
    """Phrases as a name: joined, the first letter raised ("LLM, agent", "Causal, feature")."""
    text = ", ".join(phrases)
    return text[:1].upper() + text[1:]
