"""Does a phrase name a paper? Comparison sides, table requests and summary topics are
matched to papers by their titles, the method name a title starts with, an acronym spelt by a
title's initials, or a distinctive token — before any relevance model is asked."""
from __future__ import annotations

import re
from typing import TypeVar

from ..text import acronym, distinctive_tokens, has_words, normalise, terms
from ..types import Paper

J = TypeVar("J")  # a judged candidate: anything with a `.paper`


def names_paper(target: str, paper: Paper) -> bool:
    """Does the target (its distinctive tokens, or the whole phrase) occur anywhere in the
    paper's title or abstract? The loosest test: a mention, not a name."""
    names = distinctive_tokens(target) or [target]
    text = normalise(paper.title + " " + paper.abstract)
    return any(normalise(n) in text for n in names)


def names_title(name: str, paper_title: str) -> bool:
    """Does `name` name the paper titled `paper_title`: the title, its head ("Verbalized
    Sampling" for "Verbalized Sampling (VS): simple, …") or a distinctive token of it
    ("DualGraph")? Stricter than `title_names`: a label derived from an abstract often starts
    with a topic ("Causal inference typically assumes …"), and a topic is not a name."""
    t = " ".join(normalise(name).split())
    title = " ".join(normalise(paper_title).split())
    head = re.split(r"[:—–(]| - ", paper_title)[0]
    if t and t in (title, " ".join(normalise(head).split())):
        return True
    tokens = distinctive_tokens(name)
    return bool(tokens) and all(normalise(tok) in title.split() for tok in tokens)


# a remark in parentheses after a name ("probabilistic MAML (both NeurIPS 2018)", "NAS with RL
# (the original controller-RNN paper)"): what the user knows about the paper, not its name
ASIDE_RE = re.compile(r"\s*\([^()]*\)")
WORD_RE = re.compile(r"[A-Za-z0-9][\w']*")  # a title's words; hyphenated parts count as words


def title_names(target: str, paper: Paper) -> bool:
    """The side is the paper's title, or the method name its title starts with
    ("Energy-based GANs" is "Energy-based Generative Adversarial Network", not
    "Calibrating Energy-based GANs"), or the title's head written with acronyms ("Bayesian
    MAML"); a remark in parentheses after the name does not count."""
    target = ASIDE_RE.sub("", target).strip() or target
    t = " ".join(normalise(target).split())
    title = " ".join(normalise(paper.title).split())
    head = re.split(r"[:—–]| - ", title)[0].strip()
    return bool(t) and (t == title or t == head or (len(t) >= 4 and title.startswith(t + " ")
                                                     and len(t.split()) >= 2)
                        or abbreviates(target.strip(), paper.title) or spells_head(target, paper.title))


def spells_head(target: str, title: str) -> bool:
    """"Bayesian MAML" for "Bayesian Model-Agnostic Meta-Learning", "NAS with RL" for "Neural
    Architecture Search with Reinforcement Learning": the side's words are the title head's
    words in order, each acronym (all capitals) standing for as many words as it has letters,
    and the head has no word left over. Only for a side with an acronym and another word (an
    acronym alone is `abbreviates`)."""
    found = WORD_RE.findall(target)
    letters = [acronym(t).lower() for t in found]  # "" for a word that is no acronym
    if len(found) < 2 or not any(letters):
        return False
    words = [w.lower() for w in WORD_RE.findall(re.split(r"[:—–]| - ", title)[0])]
    at = 0
    for word, spelt in zip(found, letters):
        size = len(spelt) if spelt else 1
        span = words[at:at + size]
        if len(span) < size:
            return False
        if spelt and "".join(w[0] for w in span) != spelt:
            return False
        if not spelt and span[0].rstrip("s") != word.lower().rstrip("s"):
            return False
        at += size
    return at == len(words)


def acronyms_in(text: str) -> list[str]:
    """The acronyms a phrase writes ("Bayesian MAML" → ["MAML"], "GCNs vs GATs" → ["GCNs", "GATs"])."""
    return [t for t in WORD_RE.findall(text) if acronym(t)]


def abbreviates(acronym: str, title: str) -> bool:
    """"EBGAN" for "Energy-based Generative Adversarial Network": an all-capitals side spelt by
    the initials of the title's first words (hyphenated parts count as words), so a paper
    whose title never writes its acronym is still found by it. Only from the first word: the
    initials of later words name a part or a variant ("Model-Ensemble Trust-Region Policy
    Optimization" is not TRPO; "Maximum a Posteriori Policy Optimisation" is not PPO)."""
    letters = re.sub(r"[^A-Za-z]", "", acronym)
    if not (3 <= len(letters) <= 10 and acronym.replace("-", "").isupper()):
        return False
    initials = "".join(w[0] for w in re.findall(r"[A-Za-z][\w']*", title)).upper()
    return initials.startswith(letters.upper())


def new_terms(topic: str, papers: list[Paper]) -> bool:
    """Does a summary request name a topic beyond the papers it refers to ("summarize them")?"""
    words = [t for t in terms(topic) if t not in ("them", "these", "those", "both", "two", "three")]
    return bool(words) and not all(any(names_paper(w, p) for p in papers) for w in words)


def is_name(side: str) -> bool:
    """A comparison side that is a name ("GraphSAGE", "TransE", "PETS"), not a description."""
    return len(side.split()) <= 3 and bool(distinctive_tokens(side))


def only_a_name(side: str) -> bool:
    """A side that is nothing but identifiers ("GPT-2", "BERT", "KAN"): a paper is that side only
    if it spells the name, never because its words are near."""
    words = side.split()
    return bool(words) and len(distinctive_tokens(side)) == len(words)


def introduces(name: str, paper: Paper) -> bool:
    """Does the abstract present `name` as its own ("Here we present GraphSAGE, a general …",
    "… which we call PETS", "Our model, the … (VQ-VAE)", "our Gumbel-Softmax estimator")? Of the
    papers that mention a method, this is the one that *is* it; the others use it or compare
    with it ("the A2C and PPO algorithms", "gains over TRPO")."""
    names = "|".join(re.escape(t) for t in distinctive_tokens(name))
    if not names:
        return False
    name = rf"(?<![\w-])(?:{names})s?(?![\w-])"  # "graph attention networks (GATs)" presents GAT
    return bool(re.search(rf"\b(?:[Ww]e\s+(?:present|propose|introduce|develop|call|name|term|dub)|[Oo]ur)\b"
                          rf"[^.]{{0,80}}?{name}|(?:called|named|dubbed|termed)\s+{name}|^{name}",
                          paper.abstract))


def named_in_abstract(target: str, judged: list[J]) -> list[J]:
    """A comparison side that is a name the titles lack ("GraphSAGE"), among judged candidates
    (in the judge's order): the papers whose abstract presents it as its own. A paper that only
    uses the name is not that side ("PPO vs TRPO" are not the papers that run them)."""
    if not is_name(target):
        return []
    return [j for j in judged if _spells(target, j.paper) and introduces(target, j.paper)]


def _spells(name: str, paper: Paper) -> bool:
    """The name's tokens as written, case and all: "PETS" is not "pets"."""
    text = paper.title + " " + paper.abstract
    return all(has_words(text, t) for t in distinctive_tokens(name))

