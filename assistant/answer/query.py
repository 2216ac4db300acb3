"""Message + history → a typed query: intent, topic, compare targets, references, parts.

One pure function, `parse`, so every way of saying the same thing can be tested in a table:

- the topic of a summary without the request's own words ("Summarize what this collection says
  about X", "What's in here on X?", "Give me an overview of X" → X);
- references to what earlier answers showed, each answer's papers in the order it presented
  them: "it", "the first two", "the second one", "[2]", "both", "them", "the other one", "the
  two causal papers you mentioned"; after a refusal the same words point at the closest papers
  it offered;
- the sides of a comparison ("compare A with B"), minus the sides that are references;
- the parts of a multi-part question ("Which paper does X, and by how much does it improve?").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

from ..text import STOPWORDS, capitalised_phrases, distinctive_tokens, enumerated, stems, terms
from ..types import Intent, Turn
from .naming import phrase_words
from .sides import LIST_SPLIT_RE, compare_targets, compared_against, describes_a_paper_here

COMPARE_RE = re.compile(
    r"\b(compare|comparing|comparison|contrast|versus|vs\.?|differ|differs|different from|"
    r"difference|differences|differently|in common|overlaps?|how does .+ relate to|which is better)\b", re.I)
# A summary asked for in so many words ("summarize", "what does the collection have on", "the
# gist", "which papers are about").
ASKS_FOR_SUMMARY = (
    r"summari[sz]e|rundown|"
    r"what (does|do) (this|the) (collection|corpus|library|papers?) (say|have|contain|cover|offer|hold)|"
    r"what do the papers say|what (do|does) (we|it|you) have (on|about)|"
    r"what'?s (in )?(here|there|in (this|the) (collection|corpus|library)) (on|about)|"
    r"what is (in )?(here|there) (on|about)|what (work|research|papers) (is|are) (there|here) (on|about)|"
    r"what('?s| is) in (this|the) (collection|corpus|library)|what (topics|themes|areas) (does|do|are|is)|"
    r"which papers are (in|about|on|from)|what papers are (in|about|on)|"
    r"list (the |all )?papers|all (the )?papers (on|about)|"
    # asking for a synthesis in other words: "the gist", "the big picture", "the collection's take
    # on", "what do these abstracts say about", "which of these papers …, and what do they argue?"
    r"synthes[ie]s|synthesi[sz]e|gist|big picture|state of the art|landscape|themes?|(?:'s|s'|’s) take on|"
    r"what (do|does) (these|the|this) (papers|abstracts|set|collection) (say|find|argue|contribute|cover)|"
    r"which of (these|the) papers|what'?s in the set|tell me what they do|what do they (find|argue)")
# Nouns that ask for a summary ("an overview of …") but also name things inside a question ("do
# they report summary statistics?", "a survey-style report", "an accessible overview of the
# recent resolution of …"): where only they fire, the intent model reads the message
# (`rules_then_model`).
SUMMARY_NOUNS = r"summary|summaries|overview|survey|review of"
ASKS_FOR_SUMMARY_RE = re.compile(rf"\b({ASKS_FOR_SUMMARY})\b", re.I)
SUMMARY_RE = re.compile(rf"\b({ASKS_FOR_SUMMARY}|{SUMMARY_NOUNS})\b", re.I)

# Words that make a request for a summary rather than name its topic.
REQUEST_WORDS = set("""
summarize summarise summarizing summary summaries overview overviews survey review rundown recap
give gave me us an a the what what's whats which is are was does do did this these that those
collection corpus library here there in on about of regarding concerning around into for
say says said have has contain contains cover covers covered offer offers hold holds tell show list all any every
papers paper work works research studies study literature articles findings results
please can could would you you've got i we want like know brief short quick high-level general some
main key overall everything anything written published available briefly
and or both topics themes areas
""".split())
# How people ask whether the literature has something, not what they ask about.
SCAFFOLD_RE = re.compile(
    r"^\s*(?:(?:is|are) there (?:any |some )?(?:evidence|work|research|papers?|studies|a paper|"
    r"a study|literature|results?)\s+(?:that|which|on|about|for|showing|suggesting|of|to suggest)|"
    r"(?:do|does) (?:we|anyone|any paper|the literature) (?:know|show|find)\s+(?:whether|if|that)?|"
    r"has anyone (?:shown|studied|found|looked at|proposed)(?:\s+(?:whether|if|that))?)\s+", re.I)
# "Which paper reports / explains / proposes …": the verb says what a paper does with its
# topic, never the topic; as a question term it is rare and missed by the very paper asked for.
FRAMING_RE = re.compile(
    r"^\s*(?:which|what) (?:papers?|works?|studies|study|articles?|methods?|approach(?:es)?)\s+"
    r"(?:(?:also|actually|specifically)\s+)?"
    r"(?:reports?|explains?|proposes?|presents?|introduces?|describes?|studies|study|discuss(?:es)?|"
    r"address(?:es)?|investigates?|examines?|shows?|tackles?|analy[sz]es?|considers?|develops?|"
    r"provides?|offers?|argues?|claims?|demonstrates?|suggests?|focus(?:es)? on|deals? with|"
    r"looks? at|talks? about|covers?)\s+", re.I)
POLITE_RE = re.compile(r"^\s*(please|can you|could you|would you|i'd like|i would like|i want)\b[\s,]*", re.I)

AUTHORS_RE = re.compile(r"\b(who (wrote|authored|are the authors|is the author|did|made|published)|"
                        r"(author|authors|writers?) of (it|this|that|them|these|the)|"
                        r"who(se)? (is|are) (it|they|this|that) by|by whom)\b", re.I)

ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
                 "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "1st": 1, "2nd": 2,
                 "3rd": 3, "4th": 4, "5th": 5, "last": -1, "latter": -1, "former": 1}
COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "2": 2, "3": 3, "4": 4, "5": 5}
ORDINAL = r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|1st|2nd|3rd|4th|5th|last)"
NOUN = r"(?:one|ones|paper|papers|work|works|study|studies|article|method|approach|result|entry)"

# "the first two", "the last three papers", "the top 2"
RANGE_RE = re.compile(rf"\b(?:the\s+)?(first|last|top)\s+(two|three|four|five|[2-5])\b(?:\s+{NOUN})?", re.I)
# "the second one", "the last paper", "the first", "the former", "number 2", "paper 3", "[2]", "#2";
# never a word's part ("first-order", "second-hand"), a rate ("per second"), "a second paper"
# (another paper, not the second shown) or a label ("Second one: the paper that …")
ORDINAL_RE = re.compile(rf"\b(?:the\s+)?(?<!\bper\s)(?<!\ba\s){ORDINAL}(?!-)(?!(?:\s+{NOUN})?\s*:)(?:\s+{NOUN})?\b"
                        rf"|\b(?:the\s+)?(former|latter)\b", re.I)
# a citation marker "[2]" stands alone: "[2]x[n]", "x[2]" and "[2]^k" are mathematics
REFERENCE_RE = re.compile(r"(?<![\w\])^_])\[(\d{1,2})\](?![\w\[(^_×*])|"
                          r"(?:#|\b(?:paper|source|reference|number|no\.)\s*)(\d{1,2})\b", re.I)
# "the other one", "the other paper"
OTHER_RE = re.compile(rf"\bthe other(?:\s+{NOUN})?\b", re.I)
# a question for papers beyond those shown: "anything else on X?", "who else works on it?",
# "any other papers on Y?", "are there others …?", "more work on X besides that one?" ("the
# other paper" points back at one shown: OTHER_RE)
ELSE_RE = re.compile(r"\b(?:anything|something|what|who|anyone|anybody|any ?one) else\b|\bothers\b|"
                     r"(?<!the )\bother (?:papers|works?|studies|articles|research|groups|teams|labs|people|researchers)\b|"
                     r"\b(?P<besides>besides|apart from|other than) (?:that|this|it|these|those|them)\b", re.I)
# "the two causal papers you mentioned", "the federated one", "the paper on sycophancy you cited"
MENTIONED = r"(?:that\s+)?you\s+(?:mentioned|listed|cited|showed|found|gave|named)"
DESCRIBED_RES = [
    re.compile(rf"\bthe\s+(?:(two|three|four|five|2|3|4|5)\s+)?([a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+"
               rf"(?:papers?|ones?|works?|studies|articles?)\s+{MENTIONED}\b", re.I),
    re.compile(r"\bthe\s+(?:(two|three|four|five|2|3|4|5)\s+)?([a-z][\w-]*)\s+ones?\b", re.I),
    re.compile(rf"\bthe\s+(?:(two|three|four|five|2|3|4|5)\s+)?(?:papers?|ones?|works?)\s+(?:on|about)\s+"
               rf"([a-z][\w -]{{2,40}}?)\s+{MENTIONED}\b", re.I),
]
# the last two papers shown, in one answer or across two: "compare those two", "which one …"
BOTH_RE = re.compile(r"\b(both(?: of them)?|(?:the|those|these) two(?: of them| papers)?|the pair|each other|"
                     r"(?:which|either|neither)(?: one)? of (?:the|those|these|them)(?: two)?|which one|"
                     r"either (?:one|paper))\b", re.I)
# "both" that points nowhere: the correlative "both X and Y" ("learns from both expert demos and
# human preferences") and a determiner after a preposition ("expands the sequence in both
# directions"; "in both papers" still points)
CORRELATIVE_WORDS = 4  # at most this many words between "both" and its "and"
PREPOSITIONS = {"in", "on", "at", "to", "from", "into", "across", "over", "under", "for", "between", "through"}
ALL_RE = re.compile(r"\b(them|these|those|all of them|each of them|these papers|those papers)\b", re.I)
THEY_RE = re.compile(r"\b(they|their)\b", re.I)  # only when nothing else is referred to
THING = r"(?:paper|one|article|method|approach|model|study)"  # nouns, never verbs ("a paper that studies")
# "Is that a solo paper?": "that"/"this" as the subject of a message that opens with "is"/"was"
IT_RE = re.compile(rf"\b(it|its|it's|this {THING}|that {THING}|the same {THING}|(?<=^is )(?:that|this)|"
                   r"(?<=^was )(?:that|this)|"
                   r"the (?:paper|method|approach|work|study|model)(?!\s+(?:that|which|on|about|where|by|"
                   r"proposing|introducing|from|in)\b)|the authors?)\b", re.I)
# "And what about the one that analyzes … showing gradient descent solves them globally?": a
# message asking for another paper by a description; a pronoun inside the description refers
# within it ("them": the subproblems; "and the note on capacities of … with their duals":
# the balls'), not to an earlier answer
NEW_PAPER_RE = re.compile(r"^\W*(?:and\s+)?(?:(?:what|how)\s+about\s+)?the\s+(?:one|paper|work|study|article|note|preprint|"
                          r"manuscript)\s+(?!you\b)(?:that|which|who|where|with|on|about|[a-z]+ing)\b", re.I)
# words that are not descriptions in "the X one": determiners, ordinals, counts
NOT_DESCRIPTORS = set(ORDINAL_WORDS) | set(COUNT_WORDS) | {"same", "other", "top", "whole", "next",
                                                            "previous", "above", "below", "following"}

# "..., and by how much ...", "who wrote it and what benchmarks does it use"
QUESTION_END_RE = re.compile(r"(?<=\?)\s+")  # after a question mark: the next sentence
# (an auxiliary before "be", "not" or "also" goes on the clause before: "… contains them as
# special cases and can be estimated from trajectories" is one question)
PART_SPLIT_RE = re.compile(
    r"(?:,\s*(?:and\s+)?|\s+and\s+|;\s*|\?\s+)(?=(?:also\s+)?(?:who|what|which|how|when|where|why|"
    r"by how much|(?:does|do|did|is|are|was|were|can|could)\b(?!\s+(?:be|not|also)\b))\b)", re.I)
# a sentence's opening phrase that sets the scene of the question after its comma ("In federated
# learning, which paper …?", "On a complete 4-manifold with …, is there …?", "Given a graph G,
# what …?"): a preposition or a participle opens an adverbial of that question, not a question
SETTING_RE = re.compile(r"^(?:in|on|for|over|with|within|without|under|among|across|beyond|between|"
                        r"at|from|along|given|using|assuming|regarding|concerning|if)\b", re.I)
# a sentence that says it is another question: "…? and separately, one doing X", "…? Also Y"
ANOTHER_PART_RE = re.compile(r"^\W*(?:and\s+)?(?:also|separately|additionally|plus)\b", re.I)


INTENTS = ("question", "summary", "compare", "similar", "table")

# how many papers a question wants: "which paper …" one, "papers on …" / "is there any work" several
SINGULAR_RE = re.compile(r"\b(which|what) (paper|work|article|study|method)\b|\bthe paper\b", re.I)
# ("works" and "studies" are verbs after a noun, "that" or "who": "which paper studies X")
PLURAL_RE = re.compile(r"\b((?P<papers>papers|articles)|any work|is there (any|work))\b|"
                       r"(?<!paper )(?<!work )(?<!study )(?<!article )(?<!method )(?<!one )(?<!that )"
                       r"(?<!who )\b(works|studies)\b", re.I)
# "how many authors does it have?", "number of authors?", "so it's a single-author paper?"
COUNT_AUTHORS_RE = re.compile(r"\b(how many|number of|count of)\s+(?:\w+\s+)?(authors?|co-?authors|people|writers)\b|"
                              r"\b(single|sole|solo|one)[- ]authors?\b|\bauthor list\b", re.I)


METADATA_PART_RE = re.compile(r"^\s*(and\s+)?(who (wrote|authored|are the authors|is the author|made|published)"
                              r"|what are the authors|(when|what year|which year) (was|is) (it|this|that)"
                              r"|where (was|is|did) (it|this|that) (published|appear)"
                              r"|(which|what) venue)\b", re.I)


def asked_by_rules(message: str) -> str:
    """What a follow-up asks about its paper, by the phrase rules: authors_count, authors, date
    (or venue) or content (answer/intent.py's AsksModel reads the same by meaning)."""
    if COUNT_AUTHORS_RE.search(message):
        return "authors_count"
    if AUTHORS_RE.search(message):
        return "authors"
    return "date" if METADATA_PART_RE.search(message) else "content"


@dataclass
class Part:
    """One sub-question of a message: its text, what its own retrieval looks for ("" when it
    only points back at another part's paper: "and who wrote it?"), and how many papers it
    wants."""

    text: str
    topic: str
    singular: bool
    plural: bool
    metadata: bool  # answered from the paper's record, not its abstract ("who wrote it")


def wanted(text: str) -> tuple[bool, bool]:
    """(one paper, every paper on it): how many papers a question asks for."""
    plural = bool(PLURAL_RE.search(text))
    return bool(SINGULAR_RE.search(text)) and not plural, plural


def lists_papers(text: str) -> bool:
    """Does the message ask for papers by that word ("which papers …", "papers on X?")? Such a
    message is plural, never singular (`wanted`). "Is there work on X?" and "any work on X?" ask
    for papers too, but are mostly asked about one."""
    return any(m.group("papers") for m in PLURAL_RE.finditer(text))


IT_WORDS = {"it", "its", "it's"}  # a part that says "it" points at another part's paper
POINTING_BACK = IT_WORDS | {"this", "that"}  # "where was this published?", "was that at ICLR?"
# what a question beyond the papers shown may say without naming a topic ("is anyone else
# working on it?")
ACTIVITY_WORDS = {"working", "researching", "studying", "looking"}
# a later part with one of these as its subject asks about the paper(s) an earlier part asks for
# ("who wrote the KAN paper, and what do they prove?")
SUBJECT_PRONOUNS = IT_WORDS | {"they", "their", "them"}
# how the answer should look, not what it is about: "one line each", "in two sentences",
# "as bullet points"; a count of lines is one only after "in" or before "each" ("a paragraph
# back into order" is a topic)
LINES = r"(?:one|a|a single|two|three|[1-5])\s+(?:short\s+)?(?:lines?|sentences?|bullets?|bullet points?|paragraphs?)"
EACH = r"(?:each|apiece|per (?:paper|item|entry|one)|for each(?: one| paper)?)"
FORMAT_RE = re.compile(rf"[,;:]?\s*\b(?:(?:in|with|using)\s+{LINES}(?:\s+{EACH})?|{LINES}\s+{EACH}"
                       r"|(?:as|in)\s+(?:a\s+)?(?:bullets?|bullet points?|bulleted list))\b", re.I)


def read_part(text: str) -> Part:
    """A sub-question. One that asks for a paper's record and points back ("and what year is it
    from?", "when was it published?") has no topic of its own: "it" is the paper another part
    asks for, whatever other words the part has."""
    topic = question_core(COUNT_AUTHORS_RE.sub(" ", AUTHORS_RE.sub(" ", text)))
    own = [t for t in terms(topic) if t not in POINTING_TERMS]
    metadata = bool(METADATA_PART_RE.search(text) or COUNT_AUTHORS_RE.search(text))
    points_back = metadata and bool(IT_WORDS & set(_words(text)))
    return Part(text, topic if own and not points_back else "", *wanted(text), metadata)


def pointing_parts(message: str, parts: list[Part]) -> list[Part]:
    """The parts with each later one whose subject is a pronoun ("…, and what do they prove?",
    "…, and does it beat X?") made one that searches nothing of its own: it asks about the
    paper an earlier part asks for. Parts the message numbers ("(1) … (2) …") are questions of
    their own, and so is one that names its paper ("the data assimilation paper that lets it
    …", "the other one") or says it is another question ("Also, what do they find about Y?")."""
    if len(parts) < 2 or not parts[0].topic or enumerated(message):
        return parts
    return [replace(p, topic="") if i > 0 and p.topic and _points_back(p.text) else p
            for i, p in enumerate(parts)]


def _points_back(text: str) -> bool:
    words = set(_words(text))
    return bool(SUBJECT_PRONOUNS & words) and not POINTING_TERMS & words and not ANOTHER_PART_RE.search(text)


def dated_parts(message: str, parts: list[Part],
                read_asks: Callable[[str], Optional[str]]) -> tuple[list[Part], bool]:
    """The parts with those that ask when the paper another part asks for appeared made record
    questions ("…, and what's its year?", "I need the paper proving X. When was it published?",
    "Which one does Y? Was that at ICLR or NeurIPS?"), and whether there is one. A later piece
    that points back is one when the phrase rules or the fitted follow-up model (`read_asks`)
    read it as asking for the date; a message of one part is cut before its last sentence."""
    texts = [p.text for p in parts]
    if len(texts) == 1:
        sentences = [s for s in SENTENCE_END_RE.split(message.strip()) if s.strip()]
        texts = [" ".join(sentences[:-1]), sentences[-1]] if len(sentences) > 1 else texts
    dated = [i > 0 and bool(POINTING_BACK & set(_words(t)))
             and (asked_by_rules(t) == "date" or read_asks(t) == "date") for i, t in enumerate(texts)]
    if not any(dated):
        return parts, any(p.metadata and asked_by_rules(p.text) == "date" for p in parts)
    return [Part(t, "", False, False, True) if d else read_part(t) for t, d in zip(texts, dated)], True


def asks_for_a_paper_per_part(message: str) -> bool:
    """Is the message two questions or more, each asking for one paper or for a paper's authors
    ("who wrote the survey on X, and which paper does Y?")? Then a summary word inside one of
    them ("the survey") names a paper: it does not ask for a summary."""
    parts = [read_part(p) for p in split_parts(plain(message))]
    return len(parts) >= 2 and all(p.topic and (p.singular or p.metadata) for p in parts)


def question_allowance(message: str) -> frozenset[str]:
    """Stems a claim may use without its source: the question's own words, except its names
    ("Compare Top-W with Verbalized Sampling" does not let a sentence citing Top-W say what
    Verbalized Sampling does: a name must be found in the paper cited for it)."""
    words = re.findall(r"[\w'-]+", message)
    capitalised = [w for w in words[1:] if w[:1].isupper()]  # the first word is capitalised anyway
    names = stems(" ".join(distinctive_tokens(message) + capitalised))
    return frozenset(stems(message) - names)


@dataclass
class Query:
    message: str
    intent: Intent
    topic: str  # what retrieval looks for
    targets: list[str] = field(default_factory=list)  # compare sides named, not referred to
    references: list[str] = field(default_factory=list)  # earlier papers the message points at
    reference: str = ""  # how: number, ordinal, range, other, described, both, all, it, they
    unresolved: str = ""  # a reference with nothing to point at ("the fifth one" of two)
    after_refusal: bool = False  # the references point at the closest papers of a refusal
    parts: list[Part] = field(default_factory=list)
    asks_authors: bool = False
    counts_authors: bool = False  # "how many authors …": the answer states a number
    asks_date: bool = False  # "when was it published?", "which venue?": the record's year and venue
    # what the relevance judgement reads: the message without parts that ask only for the
    # record of the paper another part asks for (parse sets it; "" means the message)
    question: str = ""
    # papers the conversation showed that the message asks beyond ("anything else on X?"):
    # its answer leaves them out
    beyond_shown: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # name-like tokens ("DualGraph", "GPUs", "33.7")
    # capitalised phrases read as names ("the Dynamic Coattention Network"): text.capitalised_phrases
    phrases: list[str] = field(default_factory=list)
    singular: bool = False  # the message wants one paper ("which paper …")
    plural: bool = False  # the message wants every paper on it ("papers on …")
    lists_papers: bool = False  # …by that word ("which papers …"): its papers are a topic's members
    categories: list[str] = field(default_factory=list)  # categories named as such: a filter
    scope: str = ""  # how the message named them ("the Applications area")
    unknown_category: str = ""  # a category named as one that the collection lacks ("the NLP area")
    topic_alternatives: list[str] = field(default_factory=list)  # a summary's other clauses (topic_reading)
    paper_id: str = ""  # an explicit paper id ("more like id: h6a909e7d1eee", the page's button)
    similar_target: str = ""  # what "more like …" names ("Top-W"); "" for "more like this"
    # no "more like" phrase asks for neighbours (the intent model read the request): the paper
    # is what the whole message describes ("got papers along the lines of the neural Hawkes process?")
    similar_described: bool = False
    table_topic: str = ""  # what a table is about ("causal inference"), "" when it names no topic
    table_aspects: list[str] = field(default_factory=list)  # its columns ("method", "data")
    table_of_previous: bool = False  # "a table of the papers you cited": the last answer's papers
    # a question that names no paper and asks for none, right after an answer about one paper
    # ("which variables get bisected?"): that paper, which may be what it asks about (plan reads it)
    follow_up: list[str] = field(default_factory=list)
    # how a follow-up candidate, or the papers a summary points at by a pronoun, read by meaning:
    # "focus" (asks about those papers), "new", or None (unsure, or no candidate)
    focus: Optional[str] = None
    # a summary request that the focus model read as a question about the one paper shown
    # ("how large is the dataset they put together?"): its topic, which the planner summarizes
    # instead unless the model reads that paper as answering it ("… and why leading digits
    # follow it": "it" is in the topic)
    unconfirmed_summary: str = ""
    # a comparison's sides told in sentences of their own ("One paper does X. The other does Y.
    # How do they compare?"): the sentences that describe something and do not point at the sides
    side_sentences: list[str] = field(default_factory=list)
    # the side after "how does A compare to B" (B), which the message does not assert is here
    compared_against: str = ""
    # the stems an answer's sentence may use without its source (`question_allowance`)
    allowance: frozenset[str] = frozenset()
    words: list[str] = field(default_factory=list)  # the message's words, lower-cased (naming.phrase_words)
    # authors of the collection the message names, possessives included ("Zywina's theorem"):
    # parse's `authors` reading
    authors: list[str] = field(default_factory=list)

    @property
    def sides(self) -> list[str]:
        """The table topic cut at "," / "and" ("Top-W, Verbalized Sampling and DualGraph")."""
        return [s for s in LIST_SPLIT_RE.split(self.table_topic) if s.strip()]


# A comparison asked for in so many words ("compare", "vs", "how does X differ from Y", "the
# difference between"). The other words of COMPARE_RE ("differs", "differently", "finite
# difference") also describe things inside a question ("… safe if the true
# data-generating law differs from my sample …"): where only they fire, the intent model reads
# the message (`rules_then_model`).
ASKS_TO_COMPARE_RE = re.compile(r"\b(?:compare|comparison|contrast|versus|vs\.?|in common|which is better|"
                                r"differences? between|how\b[^.?!]*\b(?:differ|differs|different|relate|relates))\b",
                                re.I)


# "What's here on X, and how do the approaches differ?", "Which papers do X? How do their
# constructions differ?": a request for the papers on a topic that asks how they differ, which a
# summary answers paper by paper; not "the two X papers — how do they differ?"
SET_REQUEST_RE = re.compile(r"\bwhich papers\b|\bwhat'?s (?:in )?here\b", re.I)
# two sides after all: "the two X papers", "how does the survey of X differ from …" (not "from
# each other")
TWO_SIDES_RE = re.compile(r"\b(?:two|2|both|pair|(?:differs?|different|relates?) (?:from|to)\b"
                          r"(?! each other| one another))\b", re.I)


# the clause asking how they differ, from its "how" to the end of its sentence
SET_DIFFERS_CLAUSE_RE = re.compile(r"\bhow\b(?:(?!\bhow\b)[^.?!])*\b(?:differ|differs|different)\b[^.?!]*[.?!]?",
                                   re.I)


def asks_how_a_set_differs(message: str) -> bool:
    """Is the only comparison asked "how … differ" about the papers a request for a topic's
    papers gathers ("What does this collection have on causal inference, and how do the
    approaches differ?")?"""
    asked = [m.group(0).lower() for m in ASKS_TO_COMPARE_RE.finditer(message)]
    return (bool(asked) and all(a.startswith("how") for a in asked)
            and bool(SUMMARY_RE.search(message) or SET_REQUEST_RE.search(message))
            and not TWO_SIDES_RE.search(message))


def rules_then_model(message: str, rules: Intent, model: Intent, p: float, confidence: float,
                     overrule: float = 1.0) -> Intent:
    """Settings.intent rules_then_model, from the phrase rules' reading `rules` and the intent
    model's best reading `model` at probability `p`: where the rules read their default
    (question), the model's reading where `p` reaches `confidence`; where only a weak word like
    "differs" or "comparing" suggests a comparison, or only a noun like "summary" or "overview"
    a summary, the model's at any probability (the rules have no reading to fall back on);
    elsewhere the rules', unless the model is near certain of another (`overrule`,
    Settings.intent_overrule): the rules take words of a topic for a request ("writes long
    survey-style reports … has anyone built that?", "e.g. tumour vs normal", "what do they
    compare against?")."""
    if rules == "question":
        return model if p >= confidence else rules
    if rules == "compare" and not ASKS_TO_COMPARE_RE.search(message):
        return model
    if rules == "summary" and not (ASKS_FOR_SUMMARY_RE.search(message) or asks_how_a_set_differs(message)):
        return model
    return model if p >= overrule else rules


def detect_intent(message: str) -> Intent:
    extra = detect_new_intent(message)  # "more like this", "make a table of …" (below)
    if extra:
        return extra
    if COMPARE_RE.search(message):
        return "summary" if asks_how_a_set_differs(message) else "compare"
    if SUMMARY_RE.search(message):
        return "summary"
    return "question"


# Words around a summary's topic that frame the request rather than name the topic, beyond
# REQUEST_WORDS: how people ask for a synthesis ("pull together", "the gist", "the big picture",
# "the collection's take on"), say who they are ("I'm interested in", "I need"), and what the
# rest of the message asks ("If so, summarise it", "A paragraph is fine", "what do they find?").
FRAME_WORDS = set("""
pull together gist synthesis synthesise synthesize take need i'm im interested new worried curious wondering
relevant count counts part so if it them they their each fine paragraph bullet bullets points
find found argue argues contribute contributes do does did got get stuff set abstracts abstract
build builds building according explain
collection's set's quick quickly short brief please thanks as deal deals writing related-work section
""".split())
# Sentences, dashes and semicolons separate the clauses of a message; the topic is in one of them
# ("Do we have LLM papers here? If so, give me the gist of each.").
CLAUSE_SPLIT_RE = re.compile(
    r"(?<=[.?!])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bcf\.)(?<!\bvs\.)(?<!\bal\.)(?<!\betc\.)\s+|"  # not "e.g. X"
    r"\s+[—–]\s*|\s*[—–]\s+|\s+-\s+|;\s*|,\s+(?=(?:and\s+)?(?:what|how|which|who|why)\b)")
# "the big picture on X", "the state of the art in X": the request, not the topic; how to write it,
# and for whom.
FRAME_PHRASE_RE = re.compile(
    r"\b(?:the\s+)?(?:big[\s-]picture|state of the art)\b|"
    # how to write it: "in two or three sentences", "under 300 words", "bullet points", "table format"
    r"\b(?:in|under|within|as)?\s*(?:\d+|one|two|three|four|five|a few)(?:\s+(?:or|to|-)\s+(?:\d+|two|three|four|five))?"
    r"\s+(?:sentences?|words|lines|bullets?|paragraphs?)\b|\b(?:bullet points?|table format|as a table)\b|"
    # and for whom: "for a newcomer", "to a beginner", "in plain words", "in plain English"
    r"\b(?:for|to)\s+(?:a|an|the|me\s+as\s+an?)?\s*(?:newcomers?|beginners?|novices?|non-?experts?|outsiders?|"
    r"lay\s*(?:person|people|man|reader)s?|undergrad(?:uate)?s?)\b|"
    r"\b(?:in\s+)?(?:plain|simple|everyday)[\s-](?:words|terms|english|language)\b", re.I)
# "… What does the collection have on such systems?": a clause that points back at the topic
# of another one names nothing itself.
ANAPHOR_RE = re.compile(r"\b(?:such|these|those|this|that)\s+(?:systems?|methods?|approach(?:es)?|models?|"
                        r"topics?|tools?|techniques?|problems?|ideas?|things?|areas?|fields?|work)\b", re.I)
# "I'm putting together a reading group on causal ML.", "Our team keeps getting bland outputs.":
# who is asking; the topic is in the request that follows, when there is one.
CONTEXT_CLAUSE_RE = re.compile(r"^\s*(?:i|i'm|i’m|im|i am|i've|we|we're|we’re|our|my)\b", re.I)
# "… in this set", "… across these papers": where, not what.
SCOPE_TAIL_RE = re.compile(r"\s+(?:in|from|across|among|within|of)\s+(?:the|this|these|our|your)\s+"
                           r"(?:set|collection|corpus|library|papers|abstracts)\b", re.I)


def _frame(word: str) -> bool:
    w = _bare(word)
    return not w or w in REQUEST_WORDS or w in FRAME_WORDS or w in FUNCTION_WORDS


def _without_request_words(clause: str) -> str:
    """A clause without the request words at its edges."""
    text = FRAME_PHRASE_RE.sub(" ", SCOPE_TAIL_RE.sub(" ", POLITE_RE.sub("", clause.strip())))
    words = re.findall(r"[^\s]+", text)
    start, end = 0, len(words)
    while start < end and _frame(words[start]):
        start += 1
    while end > start and _frame(words[end - 1]):
        end -= 1
    return " ".join(words[start:end]).strip(" ,;:.?!\"'“”—–-")


def topic_of(message: str) -> str:
    """The topic of a summary request: of the message's clauses, the one that names most (request
    words never count), without the request words at its edges ("Summarize what this collection
    says about causal inference." → "causal inference"; "Do we have LLM papers here? If so, give
    me the gist of each." → "LLM")."""
    return topic_reading(message)[0]


def topic_reading(message: str) -> tuple[str, list[str]]:
    """The topic of a summary request (`topic_of`), and the other clauses' topics in the order
    written, of which the planner takes the first the collection has papers on when the topic's
    own words find none (`Planner._topic_found`): a clause that points back ("I'm new to federated
    learning. What's in here that touches it?") means another; a clause the most words made the
    topic may be an aside ("what's in here about Kakeya sets? … - any dimension, finite field
    versions"). Clauses that tell who is asking stand in only for one that points back."""
    clauses = _clauses(message)
    named = topic_clauses(clauses)
    if not named:
        return message.strip().rstrip("?.! "), []
    chosen = _topic_clause(named)
    # "" (the whole collection): a clause asks for all of it ("can you sort all the papers in
    # this collection into rough themes? just short names under each heading")
    everything = [""] if any(asks_for_everything(c) for c in clauses) else []
    if len(named) < 2:
        return named[chosen][0], everything
    # the clauses it may point back at; else the other requests (not who is asking: "I work on
    # X. What's here on Y?" is about Y, whether or not anything is)
    points_back = bool(SUBJECT_PRONOUNS & set(_words(named[chosen][2])))
    others = [t for i, (t, context, _) in enumerate(named) if i != chosen and (points_back or not context)]
    return named[chosen][0], others + everything


def _topic_clause(named: list[tuple[str, bool, str]]) -> int:
    """Which clause names the topic: the request before the asker's context; then the clause
    that names most."""
    return max(range(len(named)), key=lambda i: (not named[i][1], sum(not _frame(w) for w in named[i][0].split())))


def _clauses(message: str) -> list[str]:
    return [c for c in CLAUSE_SPLIT_RE.split(message.strip()) if c and c.strip()]


def topic_clauses(clauses: list[str]) -> list[tuple[str, bool, str]]:
    """The clauses of a summary request (`_clauses`) that may name its topic, without the
    request words at their edges, each with whether it tells who is asking ("I'm putting
    together a reading group on causal inference") and the clause as written, in the order
    written."""
    pruned = [ANAPHOR_RE.sub(" ", c) for c in clauses] if len(clauses) > 1 else clauses
    named = [(_without_request_words(p), bool(CONTEXT_CLAUSE_RE.match(p)), c) for p, c in zip(pruned, clauses)]
    return [n for n in named if n[0]]


def question_core(message: str) -> str:
    """What a question asks about, without "Is there evidence that …" or "Which paper
    reports …" around it."""
    core = FRAMING_RE.sub("", SCAFFOLD_RE.sub("", message.strip()))
    return core if terms(core) else message.strip()


def _bare(word: str) -> str:
    return word.strip(" ,;:.?!\"'“”()").lower().replace("’", "'")


def split_parts(message: str) -> list[str]:
    """The sub-questions of "X, and Y?" / "who … and what …" / "Is there X? Also anything on
    Y?" (one part when there is one). Each sentence that ends in "?" is a question of its own
    when another follows; a last sentence without "?" stays with the question before it unless
    it starts as one. A piece of one word ("ok and what about …") is not a question: it joins
    the next."""
    numbered = enumerated(message)
    if numbered:
        return numbered
    sentences = QUESTION_END_RE.split(message.strip())
    if len(sentences) > 1 and not sentences[-1].rstrip().endswith("?") \
            and len(PART_SPLIT_RE.split("? " + sentences[-1])) == 1 and not ANOTHER_PART_RE.search(sentences[-1]):
        sentences[-2:] = [f"{sentences[-2]} {sentences[-1]}"]
    sentences = [s for sentence in sentences for s in paper_requests(sentence)]
    pieces = [p for sentence in sentences for p in _with_setting(
        [p.strip(" ,;") for p in PART_SPLIT_RE.split(sentence) if p and p.strip(" ,;?")])]
    parts: list[str] = []
    for piece in pieces:
        if parts and len(parts[-1].split()) < 2:
            parts[-1] = f"{parts[-1]} {piece}"  # "ok" + "what about …"
        else:
            parts.append(piece)
    if len(parts) > 1 and len(parts[-1].split()) < 2:
        parts[-2:] = [f"{parts[-2]} {parts[-1]}"]
    return parts if len(parts) > 1 else [message.strip()]


def _with_setting(pieces: list[str]) -> list[str]:
    """A sentence's pieces, its opening setting (SETTING_RE) joined to the question it sets;
    not an opening that asks itself after a colon ("For a reading list: what's the GRU variant
    …, and what's …?"). (A "which" or "where" inside a setting is a relative: "In the game
    where you're out if …, is …?")"""
    if len(pieces) > 1 and SETTING_RE.match(pieces[0]) and not any(c in pieces[0] for c in "?:"):
        return [f"{pieces[0]}, {pieces[1]}"] + pieces[2:]
    return pieces


# where a statement ends: a "." or ";" after a word of two characters or more, before a capital
# ("… the user believes. The other argues …"; not "b.c.) to", "J. Smith", "Fig. 3", "vs. the");
# a sentence also ends after "?" or "!"
STATEMENT_END_RE = re.compile(r"(?<=[\w)\]][\w)\]][.;])\s+(?=[A-Z])")
SENTENCE_END_RE = re.compile(rf"(?<=[?!])\s+|{STATEMENT_END_RE.pattern}")


def side_sentences(message: str) -> list[str]:
    """The sentences of a message of several that describe something (three content words or
    more, no work cited from elsewhere) and do not point at what they compare ("they",
    "both", "them"): the sides of "There's a paper that X. There's also one that Y. Contrast
    them." [] for a message of one sentence."""
    sentences = [s.strip() for s in SENTENCE_END_RE.split(message.strip()) if s.strip()]
    if len(sentences) < 2:
        return []
    return [s for s in sentences if describes_a_paper_here(s) and not points_at_both(s)]


def paper_requests(text: str) -> list[str]:
    """Sentences that each ask for a paper ("I need the paper that X. I'd also like to know
    which paper Y."): two questions, though neither ends in "?"; else the text whole."""
    sentences = [s.strip() for s in STATEMENT_END_RE.split(text.strip()) if s.strip()]
    if len(sentences) > 1 and all(any(wanted(s)) for s in sentences):
        return sentences
    return [text]


def plain(message: str) -> str:
    """The message without the labels of numbered sub-questions, for reading what it asks."""
    numbered = enumerated(message)
    return " ".join(p if p.endswith(("?", ".", "!")) else p + "?" for p in numbered) if numbered else message


def last_answer(history: list[Turn]) -> Optional[Turn]:
    """The assistant's last turn, whether or not it showed papers."""
    return next((t for t in reversed(history) if t.role == "assistant"), None)


def shown_lists(history: list[Turn]) -> list[Turn]:
    """Assistant turns that showed papers, most recent first."""
    return [t for t in reversed(history) if t.role == "assistant" and t.paper_ids]


def _pick(ids: list[str], position: int) -> Optional[str]:
    """1-based position (negative from the end) into a list of paper ids."""
    index = position - 1 if position > 0 else len(ids) + position
    return ids[index] if 0 <= index < len(ids) else None


def _list_turn(turns: list[Turn]) -> Optional[Turn]:
    """What ordinals count through: the most recent answer that showed several papers; when
    every answer showed one ("What is X?" "And Y?" "Does the second one subsume the first?"),
    the conversation's papers in the order they were shown."""
    listing = next((t for t in turns if len(t.paper_ids) >= 2), None)
    if listing is not None or not turns:
        return listing
    shown = list(dict.fromkeys(p for t in reversed(turns) for p in t.paper_ids))
    return Turn(role="assistant", content="", paper_ids=shown)


def _accumulated(turns: list[Turn], want: int) -> list[str]:
    """"Compare the two" after two one-paper answers: the first `want` papers of the last
    answers (a refusal before them offered several; "the two" are still two)."""
    ids: list[str] = []
    for t in turns:
        ids.extend(p for p in t.paper_ids if p not in ids)
        if len(ids) >= want:
            break
    return ids[:want]


@dataclass
class _Found:
    start: int
    end: int
    ids: list[str]
    kind: str
    unresolved: str = ""


PRONOUNS = ("it", "they", "all")  # the kinds of reference a pronoun makes


def find_references(message: str, history: list[Turn],
                    describe: Callable[[str], str] = lambda pid: "") -> list[_Found]:
    """Every reference to earlier answers in `message`, in the order written."""
    turns = shown_lists(history)
    if not turns:
        return []
    last, listing = turns[0], _list_turn(turns)
    found: list[_Found] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, ids: list[str], kind: str, unresolved: str = "") -> None:
        if any(m.start() < b and a < m.end() for a, b in taken):
            return
        taken.append((m.start(), m.end()))
        found.append(_Found(m.start(), m.end(), ids, kind, unresolved))

    for m in REFERENCE_RE.finditer(message):
        n = int(m.group(1) or m.group(2))
        pid = _pick(last.paper_ids, n)
        add(m, [pid] if pid else [], "number", "" if pid else m.group(0))
    for m in RANGE_RE.finditer(message):
        count = COUNT_WORDS[m.group(2).lower()]
        ids = listing.paper_ids[-count:] if m.group(1).lower() == "last" else listing.paper_ids[:count]
        add(m, ids, "range", "" if len(ids) == count else m.group(0))
    for m in OTHER_RE.finditer(message):
        focus = set(last.paper_ids)
        others = [p for t in turns[1:] for p in t.paper_ids if p not in focus]
        add(m, others[:1], "other", "" if others else m.group(0))
    for m in ORDINAL_RE.finditer(message):
        word = (m.group(1) or m.group(2)).lower()
        pid = _pick(listing.paper_ids, ORDINAL_WORDS[word])
        add(m, [pid] if pid else [], "ordinal", "" if pid else m.group(0))
    for pattern in DESCRIBED_RES:
        for m in pattern.finditer(message):
            words = m.group(2).lower()
            if words.split()[0] in NOT_DESCRIPTORS or not terms(words):
                continue
            count = COUNT_WORDS.get((m.group(1) or "").lower(), 1)
            ids = described(listing.paper_ids + [p for t in turns for p in t.paper_ids], words, describe)
            if ids:
                add(m, ids[:count], "described")
    for m in pointers_to_both(message):
        ids = last.paper_ids[:2] if len(last.paper_ids) >= 2 else _accumulated(turns, 2)
        if len(ids) == 2:  # after one paper shown, "which one is that?" points at none
            add(m, ids, "both")
    for m in ALL_RE.finditer(message):
        add(m, list(last.paper_ids), "all")
    for m in IT_RE.finditer(message):
        add(m, last.paper_ids[:1], "it")
    if not found:
        for m in THEY_RE.finditer(message):
            add(m, list(last.paper_ids), "they")
    if NEW_PAPER_RE.search(message):
        found = [f for f in found if f.kind not in PRONOUNS]
    return sorted(found, key=lambda f: f.start)


def _pointing_back(message: str, intent: Intent, refs: list[_Found], history: list[Turn],
                   read_focus: Callable[[str], Optional[str]]
                   ) -> tuple[Intent, list[_Found], Optional[str], str]:
    """A summary or a table that points back by a pronoun or "both": (its intent, its references,
    how it reads by meaning: "focus", "new" or None, and the topic of a summary that became a
    question about the one paper shown, else "")."""
    seen, unconfirmed = None, ""
    if refs and all(f.kind in (*PRONOUNS, "both") for f in refs):
        refs = _plural_after_one_paper_answers(refs, shown_lists(history))
        if intent == "summary":
            seen = read_focus(plain(message))
            refs = [] if seen == "new" else refs  # "… that makes them faster": "them" is in the topic
            if seen == "focus" and len({p for f in refs for p in f.ids}) == 1:
                # "how large is the dataset they put together, and who are the authors?": what
                # is asked of one paper shown is a question about it, not a topic to summarize
                # (unless the planner's model reads the paper as not answering it)
                intent, seen, unconfirmed = "question", None, topic_of(message)
    if intent == "summary" and seen != "new" and any(f.kind == "both" for f in refs):
        seen = "focus"  # "summarize both, and …", "them both": an exact pointer at the two shown
    return intent, refs, seen, unconfirmed


def _plural_after_one_paper_answers(refs: list[_Found], turns: list[Turn],
                                    kinds: tuple[str, ...] = ("all", "they")) -> list[_Found]:
    """"Summarize them" after "Which paper does X?" "And the one on Y?": a plural pronoun (of
    `kinds`) after answers that cited one paper each points at those papers, in the order shown,
    not at the last one alone ("it" and references to a list are left as they are)."""
    run: list[str] = []
    for t in turns:  # most recent first
        if t.refused or len(t.paper_ids) != 1:
            break
        run.extend(p for p in t.paper_ids if p not in run)
    if len(run) < 2:
        return refs
    return [replace(f, ids=run[::-1]) if f.kind in kinds else f for f in refs]


def _pointing(message: str, refs: list[_Found], seen: Optional[str], history: list[Turn]) -> list[_Found]:
    """The references of a question that points back only by a pronoun or a noun, given how the
    message reads by meaning: none when it asks something new ("ok and what about the one on
    evolving prompts instead of handcrafting them": "them" is inside the description); none
    either when only a noun points ("the prompting trick where you ask the model …"), the
    reading is unsure and the last answer cited one paper: that paper is then only a follow-up
    candidate, which the planner judges (Query.follow_up)."""
    if seen == "new":
        return []
    if seen is None and all(only_a_noun(message, f) for f in refs):
        last = last_answer(history)
        if last is not None and len(last.paper_ids) == 1:
            return []
    return refs


def only_a_noun(message: str, found: _Found) -> bool:
    """A reference made only by a definite noun ("the method", "the paper", "the authors"), which
    a message describing another paper uses too; "it", "this paper", "[2]" are exact."""
    return found.kind == "it" and message[found.start:found.end].lower().startswith("the ")


def described(ids: list[str], words: str, describe: Callable[[str], str]) -> list[str]:
    """Papers (in order, once) whose text uses every content word of the description."""
    wanted = stems(" ".join(terms(words)))
    out = []
    for pid in dict.fromkeys(ids):
        if wanted and wanted <= stems(describe(pid)):
            out.append(pid)
    return out


# ----------------------------------------------------------------------------- named categories
# "Which papers are in the Applications area?", "the Large Language Models category", "papers
# tagged math.CO": a category of the collection named *as a category* selects papers by their
# label, as the page's category filter does. Without such a word ("papers about large language
# models") the words are a topic, judged by meaning, and the labels are never the selection.
SCOPE_NOUNS = ("category", "categories", "area", "areas", "section", "sections", "track", "tracks",
               "tag", "tags", "label", "labels")
SCOPE_NOUN = rf"(?:{'|'.join(SCOPE_NOUNS)}|subject areas?)"
PLURAL_SCOPE_RE = re.compile(rf"\b(?:{'|'.join(n for n in SCOPE_NOUNS if n.endswith('s'))})\b", re.I)
SCOPE_BEFORE = (rf"\b{SCOPE_NOUN}\s*:?\s*|\b(?:categori[sz]ed|classified|filed|listed)\s+(?:as|under|in)\s+|"
                r"\b(?:tagged|labell?ed)\s+(?:as\s+|with\s+)?")
SCOPE_AFTER = rf"\s*\(?\s*(?:the\s+)?{SCOPE_NOUN}\b\)?"  # "the Robotics area", "Theory (the category)"
SCOPE_CUE_RE = re.compile(rf"{SCOPE_NOUN}\b|\b(?:categori[sz]ed|classified|tagged|labell?ed|filed)\b|·", re.I)
LABEL_SEPARATOR = r"\s*(?:·|/|>|:|-|–|,)?\s*"  # "Deep Learning · Theory", "Deep Learning / Theory"
AND_WORDS = r"(?:and|&|/|,|\+)"  # "Zero-order and Black-box" as "zero-order / black-box"
MINOR_WORDS = {"and", "of", "the", "for", "in", "on"}


def category_labels(categories: Sequence[str]) -> dict[str, list[str]]:
    """Every way a category can be named → the filter values it stands for: the category, its
    area ("Deep Learning"), its leaf ("Large Language Models", under every area that has it), and
    each code of a list ("math.AC, math.AG")."""
    labels: dict[str, set[str]] = {}
    for category in categories:
        codes = [category] if " · " in category else [c.strip() for c in category.split(",") if c.strip()]
        for code in codes:
            labels.setdefault(code.lower(), set()).add(code)
            if " · " in code:
                area, leaf = code.split(" · ", 1)
                labels.setdefault(area.lower(), set()).add(area)
                labels.setdefault(leaf.lower(), set()).add(code)
    return {label: sorted(values) for label, values in labels.items()}


def _words_pattern(text: str) -> str:
    """A label's words, however spaced or joined: "Health / Medicine" as "health/medicine",
    "Zero-order and Black-box Optimization" as "zero-order / black-box optimization"."""
    out = []
    for token in re.findall(r"[\w.'-]+|[^\w\s]", text):
        if token.lower() == "and" or not re.search(r"\w", token):
            out.append(rf"\s*{AND_WORDS}?\s*")
        else:
            out.append(rf"{re.escape(token)}\s*")
    pattern = "".join(out).replace(r"\s*\s*", r"\s*")
    return pattern[: -len(r"\s*")] if pattern.endswith(r"\s*") else pattern


def _acronyms(text: str) -> list[str]:
    """How researchers shorten a label of several words: "Large Language Models" → "LLMs?",
    "Computer Vision" → "CV", "General Machine Learning" → "General ML" or "GML"."""
    words = [w for w in re.findall(r"[A-Za-z][\w-]*", text) if w.lower() not in MINOR_WORDS]
    if len(words) < 2:
        return []
    return [r"\s+".join(re.escape(w) for w in words[:i]) + (r"\s+" if i else "")
            + "".join(w[0] for w in words[i:]) + "s?" for i in range(len(words) - 1)]


def _label_pattern(label: str) -> str:
    forms = [LABEL_SEPARATOR.join(_words_pattern(part) for part in label.split(" · "))]
    forms += _acronyms(label) if " · " not in label else []
    # whole words, where a dot inside a code counts as a letter ("math.CO", not "math.COMB"),
    # but not a full stop ("… the Robotics category." / "papers on Robotics.")
    return r"(?<!\w)(?<!\w\.)(?:" + "|".join(forms) + r")(?!\w)(?!\.\w)"


@dataclass
class Scope:
    categories: list[str]  # filter values
    phrase: str  # as written, without the words around it
    rest: str  # the message without the category and its cue words


def cue_before(text: Optional[str]) -> bool:
    """A cue word before a label; a capitalised noun without a colon is part of a name, not a
    cue ("a Category Theory view", against "Category: Theory" and "the category Theory")."""
    if not text:
        return False
    return ":" in text or not (text[0].isupper() and text.split()[0].lower() in SCOPE_NOUNS)


def named_categories(message: str, categories: Sequence[str]) -> Optional[Scope]:
    """The categories `message` names as categories, or None. A label counts when a cue word
    stands right before or after it ("the Robotics area", "category: Theory"), when it is a full
    "Area · Category" label (no one writes that as a topic), or, with a plural cue ("the
    Applications and Robotics areas"), anywhere in the message."""
    if not categories or not SCOPE_CUE_RE.search(message):
        return None
    labels = category_labels(categories)
    patterns = {label: re.compile(_label_pattern(label), re.I) for label in labels}
    alternation = "|".join(_label_pattern(l) for l in sorted(labels, key=len, reverse=True))
    found = re.compile(
        rf"(?:\b(?:in|from|under|within|of|on)\s+)?(?:the\s+)?(?P<before>{SCOPE_BEFORE})?[\"'“‘]?"
        rf"(?P<label>{alternation})[\"'”’]?(?P<after>{SCOPE_AFTER})?", re.I)
    plural = bool(PLURAL_SCOPE_RE.search(message))
    matches = []
    for m in found.finditer(message):
        label = next(l for l, pat in patterns.items() if pat.fullmatch(m.group("label")))
        if cue_before(m.group("before")) or m.group("after") or plural or " · " in label:
            matches.append((m, label))
    if not matches:
        return None
    values: list[str] = []
    for _, label in matches:
        values += [v for v in labels[label] if v not in values]
    rest = message
    for m, _ in reversed(matches):
        rest = rest[:m.start()] + " " + rest[m.end():]
    phrase = " and ".join(m.group("label") for m, _ in matches)
    return Scope(values, phrase, re.sub(r"\s+", " ", rest).strip(" ,;:—–-"))


# A label written as a category's name: words, acronyms or arXiv-style codes ("Security", "NLP",
# "recommender systems", "cs.CL") joined by spaces, "and", "&" or "/", or a full "Area · Category"
# label; no possessive ("Broca's area"). A cue noun after it is lower-case ("the Bay Area" is a
# name) and names a grouping, not a tag set ("the Penn Treebank tags").
LABEL_WORD = r"(?:[a-z][a-z-]*\.[A-Za-z][\w.-]*|[A-Za-z][\w+-]*)(?!['’])"  # codes: cs.CL, q-bio.NC
LABEL_WORDS = rf"{LABEL_WORD}(?:(?:\s+(?:and|&)\s+|\s*/\s*|\s+){LABEL_WORD}){{0,4}}"
GROUPING_AFTER = r"\s*\(?\s*(?:the\s+)?(?:categor(?:y|ies)|areas?|tracks?|sections?|subject areas?)\b\)?"
UNKNOWN_LABEL_RE = re.compile(
    rf"(?<![\w.'’])(?P<label>{LABEL_WORDS}){GROUPING_AFTER}|"
    rf"(?P<before>(?i:{SCOPE_BEFORE}))(?<![\w.'’])(?P<label2>{LABEL_WORDS})|"
    rf"(?<![\w.'’])(?P<label3>{LABEL_WORD}(?:\s+{LABEL_WORD}){{0,3}}\s*·\s*{LABEL_WORD}(?:\s+{LABEL_WORD}){{0,3}})")
LABEL_JOINERS = {"and", "&", "/", "·"}


# English function words: never part of a category's label ("in the", "of", "with").
FUNCTION_WORDS = set("""
a an the and or but if of in on at to for from by with without about into over under within
is are was were be been being do does did has have had can could should would will it its this
that these those there here what which who how any some all each every i me my we our you your us
""".split())


def label_span(text: str, at_end: bool) -> tuple[int, int]:
    """Where the label sits in `text`, at its end (or start), past any request or function words
    there: the words that are neither, with "and" / "&" / "/" / "·" kept between two of them
    ("in the Datasets and Benchmarks", "stat.ML in here", "Applications · Finance please").
    (0, 0) when there is none."""
    tokens = list(re.finditer(r"·|[^\s·]+", text))
    tokens = tokens[::-1] if at_end else tokens

    def content(i: int) -> bool:
        return _bare(tokens[i].group()) not in NOT_LABEL_WORDS

    skip = 0
    while skip < len(tokens) and not content(skip):
        skip += 1
    n = skip
    while n < len(tokens) and (content(n) or (
            tokens[n].group().lower() in LABEL_JOINERS and skip < n < len(tokens) - 1 and content(n + 1))):
        n += 1
    if n == skip:
        return 0, 0
    first, last = (tokens[n - 1], tokens[skip]) if at_end else (tokens[skip], tokens[n - 1])
    return first.start(), last.end()


def unknown_category(message: str) -> Optional[Scope]:
    """A request for a whole category that the collection lacks ("Which papers are in the NLP
    area?", "List the papers tagged cs.CL"; named_categories found none of its own): the label,
    and the message without its cue word, so that "area" or "tagged" is not taken for a topic
    term. Only when nothing but request words is left around the label: "Which paper in the
    Vision area uses diffusion?", "Broca's area" and "the CA1 area of the hippocampus" stay as
    written."""
    for m in UNKNOWN_LABEL_RE.finditer(message):
        if m.group("label2") and not cue_before(m.group("before")):
            continue  # "a Category Theory view"
        group = "label2" if m.group("label2") else "label" if m.group("label") else "label3"
        a, b = label_span(m.group(group), at_end=group != "label2")
        if a == b:
            continue
        a, b = m.start(group) + a, m.start(group) + b
        # the cue and the label go; what the label's words did not take stays in the message
        before, after = (message[:m.start()], message[b:]) if group == "label2" else (message[:a], message[m.end():])
        if only_request_words(before + " " + after):
            label = re.sub(r"\s*·\s*", " · ", message[a:b])
            rest = re.sub(r"\s+", " ", f"{before} {label} {after}")
            return Scope([], label, re.sub(r"\s+([?.!,:;])", r"\1", rest).strip(" ,;:—–-"))
    return None


# Words that ask about a collection as a whole ("Give me a quick tour of the whole set of
# papers", "tl;dr of all the papers pls"), beyond the request words; with one of SCOPE_WORDS and
# nothing else, a message asks for an overview of everything in scope.
OVERVIEW_WORDS = set("""
pls plz pull up see show tour whole set kind kinds sort sorts represented big picture describe
breakdown high-level level tl dr start opened open just how many much total roughly overall
browse look glance stuff things thing topic subjects fields field covered everything anything
contents content quick quickly got get here's where should could i'd i'm me my now
to it they listed like u hey new come across dump full list titles authors trend trends only
hi hello thanks thank lot fall falls belong belongs abstract abstracts
rough theme group groups grouped grouping cluster clusters clustered organize organise categorize categorise
""".split()) | set(SCOPE_NOUNS)
NOT_LABEL_WORDS = FUNCTION_WORDS | REQUEST_WORDS | OVERVIEW_WORDS  # around a label, never in it (label_span)
SCOPE_WORDS = {"collection", "corpus", "library", "paper", "papers", "everything", "set", "here", "database"}


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w'-]+", text.lower().replace("’", "'")) if re.search(r"\w", w)]


# "Tell me more about the survey one": words that point at a paper shown before, even when
# nothing was shown; such a message names something, it never asks for everything.
POINTING_WORDS = {"one", "ones", "first", "former", "latter", "other", "second", "third", "last"}
# a part made only of these points back at another part's paper ("and who wrote that one?")
POINTING_TERMS = POINTING_WORDS | {"paper", "papers", "work", "works", "study", "article", "method",
                                   "approach", "same", "also"}


def only_request_words(text: str) -> bool:
    """Nothing but the request's own words ("Summarize this collection", "Which papers are in
    the", "Can you pull up", "papers +"): the request names no topic."""
    words = _words(text)
    return not POINTING_WORDS & set(words) and all(
        w in REQUEST_WORDS or w in OVERVIEW_WORDS or w in STOPWORDS for w in words)


def asks_for_everything(text: str) -> bool:
    """A message about the collection itself ("How many papers are there, and what are they
    about?"), with no research topic in it."""
    return any(w in SCOPE_WORDS for w in _words(text)) and only_request_words(text)


def parse(message: str, history: list[Turn], mode: Optional[str] = None,
          describe: Callable[[str], str] = lambda pid: "", categories: Sequence[str] = (),
          read_intent: Callable[[str, Intent], Optional[Intent]] = lambda message, rules: None,
          read_asks: Callable[[str], Optional[str]] = lambda message: None,
          read_focus: Callable[[str], Optional[str]] = lambda message: None,
          authors: Callable[[str], list[str]] = lambda message: []) -> Query:
    """The typed query of one message in its conversation. `describe(paper_id)` gives a paper's
    text, for references by description ("the causal papers you mentioned"); `categories` are
    the collection's, for a category named as one ("the papers in the Robotics area");
    `read_intent(message, rules)` reads what the message asks for by meaning, given the phrase
    rules' reading (answer/intent.py; None: the rules decide); `read_asks(message)` reads what a
    follow-up asks about its paper where the rules read content (None: unsure, content);
    `read_focus(message)` reads whether the message asks about the paper in focus ("focus") or
    something new ("new"), by meaning (None: unsure), for references a pronoun or a noun makes;
    `authors(message)` gives the collection's authors it names (relevance.authors_referred)."""
    message = message.strip()
    if mode in INTENTS:
        intent: Intent = mode
    else:
        rules = detect_intent(plain(message))
        intent = read_intent(plain(message), rules) or rules
        if intent == "summary" and asks_for_a_paper_per_part(message):
            intent = "question"  # "who wrote the survey on X, and which paper does Y?": two questions
    refs = find_references(message, history, describe)
    if intent == "question" and refs and all(f.kind in PRONOUNS or only_a_noun(message, f) for f in refs):
        refs = _pointing(message, refs, read_focus(plain(message)), history)
    if intent == "question":
        # "put these side by side: problem, method" after two answers of one paper each: "these"
        # ("them", "those") is both; "they" stays the last paper's authors or the paper itself
        refs = _plural_after_one_paper_answers(refs, shown_lists(history), kinds=("all",))
    seen, unconfirmed = None, ""
    if intent in ("summary", "table"):
        intent, refs, seen, unconfirmed = _pointing_back(message, intent, refs, history, read_focus)
    described = side_sentences(message) if intent in ("question", "compare") else []
    told = [s for s in described if not s.endswith("?")]  # statements, not questions of their own
    if len(told) >= 2 and points_at_both(message):
        # "One paper does X. The other does Y. How do their stories line up?": a comparison of
        # the two papers described, which "their" points at (not at papers shown before)
        intent, refs = "compare", [f for f in refs if f.kind not in (*PRONOUNS, "both", "other")]
    scope = named_categories(message, categories) if intent in ("question", "summary") else None
    unknown = unknown_category(message) if intent in ("question", "summary") and not scope else None
    text = FORMAT_RE.sub(" ", scope.rest if scope else unknown.rest if unknown else message)
    if intent == "question" and not refs and (
            (scope and only_request_words(text)) or asks_for_everything(text) or unknown):
        intent = "summary"  # "What is in the Robotics area?", "What's here?": an overview
    if intent == "summary" and asks_how_a_set_differs(text):
        text = SET_DIFFERS_CLAUSE_RE.sub(" ", text)  # how they differ is asked of the topic's papers
    if unknown:
        topic, alternatives = unknown.phrase, []
    elif intent == "summary":
        topic, alternatives = topic_reading(text)
    else:
        topic, alternatives = question_core(text), []
    if intent == "summary" and not refs and only_request_words(topic):
        topic, alternatives = "", []  # the whole scope: the collection, or the categories named or filtered
    singular, plural = wanted(message)
    counts = bool(COUNT_AUTHORS_RE.search(message))
    q = Query(message, intent, topic, asks_authors=counts or bool(AUTHORS_RE.search(message)),
              counts_authors=counts, singular=singular, plural=plural,
              lists_papers=lists_papers(message),
              names=distinctive_tokens(plain(message), plus=True), phrases=capitalised_phrases(plain(message)),
              parts=[read_part(p) for p in split_parts(message)], categories=scope.categories if scope else [],
              scope=scope.phrase if scope else "", unknown_category=unknown.phrase if unknown else "",
              topic_alternatives=alternatives, question=message, allowance=question_allowance(message),
              words=phrase_words(message), authors=authors(message))
    q.parts, q.asks_date = dated_parts(message, q.parts, read_asks)
    # (a part pointing back keeps its words in the question searched and read: "How do they get
    # exact inference back?" says what the paper is about as much as the part before it)
    q.parts = pointing_parts(message, q.parts)
    searched = [p.text for p in q.parts if p.topic or not p.metadata]
    if q.asks_date and intent == "question" and not (scope or unknown) and 0 < len(searched) < len(q.parts):
        # "which paper does X, and what year was it published?": X is what is searched and read
        q.question = " ".join(searched)
        q.topic = question_core(q.question)
    for f in refs:
        q.references.extend(p for p in f.ids if p not in q.references)
        q.unresolved = q.unresolved or f.unresolved
    q.reference = refs[0].kind if refs else ""
    turns = shown_lists(history)
    asked = read_asks(plain(message)) if about_a_shown_paper(q, turns) else None
    if asked is not None and asked_by_rules(message) == "date":
        asked = "date"  # "which venue?", "when was it published?": the record's, whatever the model reads
    if asked is not None:  # read by meaning ("solo work or joint?"; "who proved the case they extend?")
        q.asks_authors, q.counts_authors = asked in ("authors", "authors_count"), asked == "authors_count"
        q.asks_date = q.asks_date or asked == "date"  # a part may ask it ("what did it show, and when was it out?")
        if asked != "date":
            q.parts = [Part(message, "" if q.asks_authors else question_core(message), *wanted(message),
                            q.asks_authors)]
        elif len(q.parts) == 1:  # "when did it come out?": the record's year and venue, nothing more
            q.parts = [Part(message, "", *wanted(message), True)]
    if not refs and turns and q.asks_authors and not any(part.topic for part in q.parts):
        # "number of authors?": a question about a paper that names none is about the one in focus
        q.references, q.reference = turns[0].paper_ids[:1], "it"
    both = _accumulated(turns, 2) if intent == "compare" and len(q.references) < 2 else []
    if len(both) == 2 and points_at_both(message) and len(described) < 2:
        # "how do they differ?" after two one-paper answers, also when "one …, the other …"
        # describes them ("how do they compare? one seems algebraic, the other inferential")
        q.references = both
    q.unconfirmed_summary = unconfirmed
    q.after_refusal = bool(refs) and turns[0].refused
    q.follow_up = follow_up_focus(q, history)
    beyond = ELSE_RE.search(message) if intent in ("question", "summary") else None
    # "besides that one" names what to leave out; otherwise a message that refers to a paper
    # asks about it ("does it beat the others?")
    if beyond and (not q.references or beyond.group("besides")):
        q.beyond_shown = list(dict.fromkeys(i for t in turns if not t.refused for i in t.paper_ids))
        q.references, q.reference, q.follow_up = [], "", []  # not about the papers shown: about others
        q.topic = _topic_pointed_at(message, history) or q.topic
    q.focus = read_focus(message) if q.follow_up else seen if q.references else None
    if intent == "compare":
        unreferred = _without(message, refs)
        q.targets, q.compared_against = compare_targets(unreferred), compared_against(unreferred)
        q.side_sentences = described
        if len(both) == 2 and not q.references and len(described) < 2 and not any(map(names_something, q.targets)):
            # "which is more theoretical? brief on each" after two papers shown: a comparison
            # that names nothing to compare compares the papers shown
            q.references, q.targets, q.reference = both, [], "both"
    if intent == "similar":
        q.paper_id, q.similar_target = paper_id_in(message), similar_target(message)
        q.similar_described = bool(q.similar_target) and not SIMILAR_RE.search(message)
    if intent == "table":
        q.table_topic, q.table_aspects = table_request(message)
        q.table_of_previous = asks_previous_papers(message)
        table_scope = named_categories(q.table_topic, categories)
        if table_scope:  # "a table of the papers in the LLM category": the category is a filter
            q.categories, q.scope = table_scope.categories, table_scope.phrase
            rest = table_scope.rest
            q.table_topic = "" if only_request_words(rest) else topic_of(rest)  # "": all of it
    return q


def _topic_pointed_at(message: str, history: list[Turn]) -> str:
    """The topic of the question before, when a question beyond the papers shown names none of
    its own ("who else works on this?", "other groups on the same problem?", "anything
    else?"); "" otherwise."""
    if [t for t in terms(ELSE_RE.sub(" ", message)) if t not in POINTING_TERMS | ACTIVITY_WORDS]:
        return ""
    previous = previous_user_message(history)
    return question_core(previous) if previous else ""


def previous_user_message(history: list[Turn]) -> str:
    return next((t.content for t in reversed(history) if t.role == "user"), "")


def names_something(side: str) -> bool:
    """Does a comparison's side name or describe something ("Top-W", "mode collapse", "the
    paper that unrolls …"), rather than being what is asked ("which is more theoretical")?"""
    return len(terms(side)) >= 2 or bool(distinctive_tokens(side))


def points_at_both(message: str) -> bool:
    """Does the message point at papers shown ("they", "them", "both", "those two")?"""
    return bool(pointers_to_both(message) or ALL_RE.search(message) or THEY_RE.search(message))


def pointers_to_both(message: str) -> list[re.Match]:
    """BOTH_RE's matches that point at two papers shown: not "both" as a correlative or as a
    determiner after a preposition (`_both_points_nowhere`)."""
    return [m for m in BOTH_RE.finditer(message) if not _both_points_nowhere(message, m)]


def _both_points_nowhere(message: str, m: re.Match) -> bool:
    if m.group(0).lower() != "both":
        return False
    words = []  # the words after "both", up to the end of its clause
    for token in message[m.end():].split()[:CORRELATIVE_WORDS + 1]:
        word = token.lower().strip("\"'“”()")
        words.append(word.rstrip(",.;:?!"))
        if word != words[-1]:
            break
    if words and words[0] == "of":
        return False  # "both of these"
    if "and" in words[1:]:
        return True  # "both the ODE and a discrete-time version"
    before = message[:m.start()].split()
    # "in both directions", not "in both papers"
    return bool(before) and before[-1].lower() in PREPOSITIONS and bool(words) and words[0] not in POINTING_TERMS


def one_topic_question(q: Query) -> bool:
    """A question of one topic that asks for no paper ("which paper …", "any work on …")."""
    return (q.intent == "question" and sum(bool(p.topic) for p in q.parts) <= 1
            and not q.singular and not q.plural)


def about_a_shown_paper(q: Query, turns: list[Turn]) -> bool:
    """A one-topic question that refers to a paper shown, or comes right after an answer that
    cited papers: it asks something about a paper in focus."""
    return one_topic_question(q) and (bool(q.references) or bool(turns) and not turns[0].refused)


def follow_up_focus(q: Query, history: list[Turn]) -> list[str]:
    """The paper a question may follow up on: the one the last answer cited, when the question
    is of one topic, asks for no paper and refers to none."""
    last = last_answer(history)
    if (not one_topic_question(q) or q.references or last is None or last.refused
            or len(last.paper_ids) != 1):
        return []
    return list(last.paper_ids)


def _without(message: str, refs: list[_Found]) -> str:
    """The message with its references blanked out (what is left names new things)."""
    out = message
    for f in sorted(refs, key=lambda f: -f.start):
        out = out[:f.start] + " " + out[f.end:]
    return out


# ----------------------------------------------------------------------------- more like this
# "more like the second one", "papers similar to it", "anything else like Top-W?",
# "closest papers to [2]". Only phrases that ask for neighbours of something: a question that
# merely uses "like" as a verb ("I'd like a summary") has no noun before it.
SIMILAR_RE = re.compile(
    r"\bmore\s+like\b|"
    r"\b(?:papers?|works?|anything|something|others?|ones|studies|articles?)\s+(?:else\s+)?"
    r"(?:similar\s+to|like)\b|"
    r"\bsimilar\s+(?:papers?|works?|ones|studies|articles?)\b|"
    r"\b(?:nearest|closest)\s+(?:papers?|neighbou?rs?)\s+(?:to|of)\b|\bneighbou?rs\s+of\b", re.I)
# what may follow the phrase without naming a paper: "more like this?", "… like that one"
DEICTIC = {"this", "that", "it", "one", "paper", "the", "a", "these", "those", "please", "else",
           "in", "collection", "here", "there", "to", "of", "any", "papers", "work", "ones"}
PAPER_ID_RE = re.compile(r"\bid[:=]?\s*([A-Za-z0-9][\w.:/-]{2,})", re.I)

# ----------------------------------------------------------------------------- literature tables
# "Make a table of the papers on X: method, data, main result", "tabulate them", "a literature
# table for …". "Compare A and B in a table" stays a comparison (it has its own table).
TABLE_RE = re.compile(
    r"\b(?:make|build|create|give|produce|draw|generate|show|prepare|put)\b[^.?!:]{0,30}?\btable\b|"
    r"\btable\s+(?:of|for|on|about|with)\b|\bliterature\s+table\b|\btabulate\b", re.I)
TABLE_LEAD_RE = re.compile(r"^\W*(?:of|for|on|about|with|covering|listing|comparing)\b", re.I)
ASPECT_SPLIT_RE = re.compile(r"\s*(?:,|;|/|\||\band\b|&)\s*", re.I)
DEFAULT_ASPECTS = ["problem", "method", "data", "result"]
# "the papers you cited", "those": the papers of the last answer, not a topic
PREVIOUS_PAPERS_RE = re.compile(
    rf"\b(?:papers?|ones|works?|studies)\s+{MENTIONED}\b|"
    r"^\W*(?:them|these|those|these papers|those papers|the above)\W*$", re.I)


# content words before "anything like …" that make it part of a question described in them:
# "<a planner that …>. Anything like that?" asks for a paper doing that, not for neighbours of
# the last answer's paper; "Is there anything similar to the KAN paper?" has none
SIMILAR_PRELUDE_TERMS = 4


def detect_new_intent(message: str) -> Optional[Intent]:
    """"similar" or "table" when the message asks for one, else None."""
    m = SIMILAR_RE.search(message)
    if m and len(terms(message[:m.start()])) < SIMILAR_PRELUDE_TERMS:
        return "similar"
    if TABLE_RE.search(message):
        return "table"
    return None


def similar_target(message: str) -> str:
    """What a "more like …" message names after the phrase ("more like Top-W?" → "Top-W"), ""
    when it names nothing ("anything else like this?")."""
    m = SIMILAR_RE.search(message)
    rest = message[m.end():] if m else message
    rest = re.sub(r"^\s*(?:to|of)\b", "", rest).strip(" ?!.,;:\"'“”")
    if not rest or all(_bare(w) in DEICTIC for w in rest.split()):
        return ""
    return rest


def paper_id_in(message: str) -> str:
    """An explicit paper id ("more like id: h6a909e7d1eee", what the page's button sends)."""
    m = PAPER_ID_RE.search(message)
    return m.group(1).rstrip(".,;:?!") if m else ""


def table_request(message: str) -> tuple[str, list[str]]:
    """(what the table is about, its aspects): "Make a table of the papers on causal inference:
    method, data" → ("causal inference", ["method", "data"]); aspects default to
    problem, method, data, result."""
    head, _, tail = message.partition(":")
    aspects = [a.strip(" .?!\"'“”").strip() for a in ASPECT_SPLIT_RE.split(tail)] if tail else []
    aspects = [a for a in dict.fromkeys(aspects) if a and len(a.split()) <= 6]
    m = TABLE_RE.search(head)
    about = TABLE_LEAD_RE.sub("", head[m.end():] if m else head).strip()
    return (topic_of(about) if about else ""), aspects or list(DEFAULT_ASPECTS)


def asks_previous_papers(message: str) -> bool:
    """"the papers you cited", "them": the table is of the last answer's papers."""
    head = message.partition(":")[0]
    m = TABLE_RE.search(head)
    about = TABLE_LEAD_RE.sub("", head[m.end():] if m else head)
    return bool(PREVIOUS_PAPERS_RE.search(about))
