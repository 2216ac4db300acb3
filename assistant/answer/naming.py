"""Does a phrase name a paper? Comparison sides, table requests and summary topics are
matched to papers by their titles, the method name a title starts with, an acronym spelt by a
title's initials, or a distinctive token — before any relevance model is asked."""
from __future__ import annotations

import re
from typing import Callable, Sequence, TypeVar

from ..stats import defined_acronyms
from ..text import STOPWORDS, acronym, distinctive_tokens, has_words, normalise, terms
from ..types import Paper

J = TypeVar("J")  # a judged candidate: anything with a `.paper`


def names_paper(target: str, paper: Paper) -> bool:
    """Does the target (its distinctive tokens, or the whole phrase) occur anywhere in the
    paper's title or abstract? The loosest test: a mention, not a name."""
    names = distinctive_tokens(target) or [target]
    text = normalise(paper.title + " " + paper.abstract)
    return any(normalise(n) in text for n in names)


def writes(paper: Paper, phrase: str) -> bool:
    """Does the paper's title or abstract write the phrase, as whole words, in any case?"""
    return has_words(normalise(paper.title + " " + paper.abstract), normalise(phrase))


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


def title_head(title: str) -> str:
    """A title's part before a colon or a dash ("Soft Actor-Critic" of "Soft Actor-Critic: …")."""
    return re.split(r"[:—–]| - ", title)[0]


def title_names(target: str, paper: Paper, initials: bool = True) -> bool:
    """The side is the paper's title, or the method name its title starts with
    ("Energy-based GANs" is "Energy-based Generative Adversarial Network", not
    "Calibrating Energy-based GANs"), or the title's head written with acronyms ("Bayesian
    MAML"), or (`initials`) an acronym of the title's first words; a remark in parentheses
    after the name does not count."""
    target = ASIDE_RE.sub("", target).strip() or target
    t = " ".join(normalise(target).split())
    title = " ".join(normalise(paper.title).split())
    head = title_head(title).strip()
    return bool(t) and (t == title or t == head or (len(t) >= 4 and title.startswith(t + " ")
                                                     and len(t.split()) >= 2)
                        or (initials and abbreviates(target.strip(), paper.title))
                        or spells_head(target, paper.title))


def holds_title(target: str, paper: Paper) -> bool:
    """The side writes the paper's whole title, with a remark around it ("the 'Scalable Private
    Learning with PATE' follow-up"): a title of three words or more, as a run of the side's words."""
    title = phrase_words(paper.title)
    side = " ".join(phrase_words(target))
    return len(title) >= 3 and f" {' '.join(title)} " in f" {side} "


def writes_name_of(words: Sequence[str], paper: Paper, rare: Callable[[str], bool]) -> bool:
    """Do a message's words (`phrase_words`) write a paper's own name: its title's head before a
    colon or dash, of up to four words, as a run of them ("glow" for "Glow: Generative Flow …",
    "train longer, generalize better"; one word only when `rare`, which few abstracts write), or
    every content word of a title of two to four ("the matrix capsules EM routing paper" for
    "Matrix capsules with EM routing"), plurals aside?"""
    head = phrase_words(title_head(paper.title))
    if len(head) < len(phrase_words(paper.title)) and 1 <= len(head) <= 4 and (len(head) > 1 or rare(head[0])):
        if f" {' '.join(head)} " in f" {' '.join(words)} ":
            return True
    content = content_words(paper.title)
    said = {w.rstrip("s") for w in words}
    return 2 <= len(content) <= 4 and all(w.rstrip("s") in said for w in content)


def title_has_all(words: list[str], paper: Paper) -> bool:
    """Every content word of a side is a word of the title, plurals aside ("Deep Generative
    Replay" in "Continual Learning with Deep Generative Replay"; "semi-supervised graph
    convolutional networks", the side's acronym spelt out, in "Semi-Supervised Classification
    with Graph Convolutional Networks"). Two words at least: one word is a topic, not a name."""
    title = {w.rstrip("s") for w in phrase_words(paper.title)}
    return len(words) >= 2 and all(w.rstrip("s") in title for w in words)


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
    words = [w.lower() for w in WORD_RE.findall(title_head(title))]
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
    return _initials(title).startswith(letters.upper())


def abbreviates_head(acronym: str, title: str) -> bool:
    """"SAC" for "Soft Actor-Critic: Off-Policy …": the acronym spells the title's head (its
    part before a colon or dash) whole, as a paper's own acronym does; an acronym that spells
    only the first words ("Exploring Neural Architecture Search for Language Tasks" is no ENAS)
    may be a chance."""
    head = title_head(title)
    return abbreviates(acronym, title) and _initials(head) == re.sub(r"[^A-Za-z]", "", acronym).upper()


def _initials(title: str) -> str:
    """The first letters of a title's words, hyphenated parts counted as words."""
    return "".join(w[0] for w in re.findall(r"[A-Za-z][\w']*", title)).upper()


def new_terms(topic: str, papers: list[Paper]) -> bool:
    """Does a summary request name a topic beyond the papers it refers to ("summarize them")?"""
    words = [t for t in terms(topic) if t not in ("them", "these", "those", "both", "two", "three")]
    return bool(words) and not all(any(names_paper(w, p) for p in papers) for w in words)


def content_words(text: str) -> list[str]:
    """The words of a phrase that are not function words, lower-cased, hyphenated parts apart."""
    return [w for w in phrase_words(text) if w not in STOPWORDS]


def phrase_words(text: str) -> list[str]:
    """A phrase's words, lower-cased, hyphenated parts apart, quotes around them dropped."""
    return [w.strip("'") for w in WORD_RE.findall(normalise(text))]


def written_as_name(side: str) -> bool:
    """A side written as a name: an identifier ("GCN", "Top-W") among its words, or every word
    capitalised ("Deep Generative Replay"), as a method's name is and a description is not."""
    words = WORD_RE.findall(side)
    return is_name(side) or (len(words) >= 2 and all(w[0].isupper() or w.lower() in STOPWORDS for w in words))


YEAR_RE = re.compile(r"\b(?:19|20)\d\d\b")


def dated(side: str, paper: Paper) -> bool:
    """Does the side give the paper's year or venue ("the 2016 … paper", "the ICLR one")?"""
    years = {int(y) for y in YEAR_RE.findall(side)}
    venue = (paper.venue or "").lower()
    return (paper.year in years) or bool(venue) and venue in {w.lower() for w in WORD_RE.findall(side)}


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
    "… which we call PETS", "Our model, the … (VQ-VAE)", "our Gumbel-Softmax estimator", "we go
    beyond ConvLSTM and propose the Trajectory GRU (TrajGRU) model")? Of the
    papers that mention a method, this is the one that *is* it; the others use it or compare
    with it ("the A2C and PPO algorithms", "gains over TRPO")."""
    names = "|".join(re.escape(t) for t in distinctive_tokens(name))
    if not names:
        return False
    name = rf"(?<![\w-])(?:{names})s?(?![\w-])"  # "graph attention networks (GATs)" presents GAT
    found = re.finditer(rf"\b(?:(?:[Ww]e|and)\s+(?:present|propose|introduce|develop|call|name|term|dub)|[Oo]ur)\b"
                        rf"([^.]{{0,80}}?){name}|(?:called|named|dubbed|termed)\s+{name}|^{name}", paper.abstract)
    return any(not (m.group(1) and _uses(m.group(1), m.string[m.end(1):m.end()])) for m in found)


def _uses(gap: str, named: str) -> bool:
    """Is the name, after "we propose" and `gap`, what the work is for or built on? The acronym's
    own long form is set aside ("called probabilistic ensembles with trajectory sampling (PETS)")."""
    if gap.rstrip().endswith("("):
        for _, long_form in defined_acronyms(gap + named + ")"):
            cut = gap.lower().rfind(long_form)
            if cut >= 0:
                gap = gap[:cut]
                break
    return bool(USES_RE.search(gap))


# between "we propose" and a name, a word that makes the name what the paper's work is for or
# built on, not the work itself ("we propose … a boosting theory for ResNet", "our algorithm to
# train … such as VGG", "Our algorithm combines DQN …")
USES_RE = re.compile(r"\b(?:for|to|on|in|with|over|than|like|such as|against|via|combines?|uses?|using|"
                     r"applies|apply|extends?|extending)\b", re.I)


def named_in_abstract(target: str, judged: list[J]) -> list[J]:
    """A comparison side that is a name the titles lack ("GraphSAGE"), among judged candidates
    (in the judge's order): the papers whose abstract presents it as its own. A paper that only
    uses the name is not that side ("PPO vs TRPO" are not the papers that run them), nor is one
    that spells the acronym out to compare with it. (Those that also spell out its acronym, "We
    propose Efficient Neural Architecture Search (ENAS)", come first in `plan._named`.)"""
    if not is_name(target):
        return []
    return [j for j in judged if _spells(target, j.paper) and introduces(target, j.paper)]


def defines(name: str, paper: Paper) -> bool:
    """Does the abstract spell out an acronym the name writes ("… Teacher Ensembles (PATE)")?"""
    wanted = {acronym(a) for a in acronyms_in(name)}
    return bool(wanted) and any(acronym(a) in wanted for a, _ in defined_acronyms(paper.abstract))


def _spells(name: str, paper: Paper) -> bool:
    """The name's tokens as written, case and all: "PETS" is not "pets"."""
    text = paper.title + " " + paper.abstract
    return all(has_words(text, t) for t in distinctive_tokens(name))

