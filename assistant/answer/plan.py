"""Planning a turn: which papers it rests on and the structure of its answer, per intent.

The default local model neither abstains nor picks papers reliably on its own, so the
decisions that make an answer correct are made here: what the message refers to (query.py),
which papers are about it (relevance.py), and the cited structure (compose.py). The model only
writes prose over the papers chosen, which grounding then checks.

The planner reads the typed `Query`, never the message's words: the message as written goes
only to what reads it by meaning (the reading model, the model that copies a comparison's
sides, the sentence embedder) and to the prose prompt.
"""
from __future__ import annotations

import threading
from itertools import product
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from ..config import Settings
from ..retrieve import Retriever
from ..similar import find_similar
from ..text import acronym, distinctive_tokens, has_words, terms
from ..types import Filters, Hit, Intent, LiteratureTable, Paper, TableRow, Turn
from . import compose
from .cases import other_cases
from .evidence import SentenceEmbeddings, Source, evidence_for, safe_sentences
from .intent import asks_model, best, default_model as intent_model, focus_model, message_vectors
from .query import Query, parse, previous_user_message, rules_then_model, shown_lists
from .reading import MAY_ANSWER, Read, Reader
from .relevance import POSSESSIVE_RE, Judge, Judged, authors_named, authors_referred
from .sides import describes_a_paper_here, stand_ins
from .table import table_cells, table_markdown
from .naming import (ASIDE_RE, abbreviates_head, acronyms_in, content_words, dated, defines, holds_title,
                     is_name, named_in_abstract, names_paper, names_title, new_terms, only_a_name,
                     title_has_all, title_names, writes, writes_name_of, written_as_name)
from .themes import Theme, central, kmeans, target_groups, theme_name, themes



@dataclass
class TurnPlan:
    """What a turn will say: fixed, already-cited structure plus an optional prompt for prose."""

    intent: Intent
    query: str
    retrieved: list[Hit] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    prefix: str = ""  # pipeline-written, cited text shown before the model's prose
    lead: str = ""  # which papers the prose rests on, shown at once when a model will write it
    prompt: Optional[str] = None  # None: no prose from the model for this turn
    prose_heading: str = ""
    fallback: str = ""  # cited extracts used when the model fails or says nothing supported
    abstain: bool = False
    offered: list[Paper] = field(default_factory=list)  # a refusal's closest papers, as choices
    notices: list[str] = field(default_factory=list)
    max_tokens: int = 160  # prose is a few sentences; a bound keeps the whole answer quick
    table: Optional[LiteratureTable] = None  # a literature table's rows (numbered by source n)
    # the stems the prose may use without its source: the question's (Query.allowance)
    allowance: frozenset[str] = frozenset()


@dataclass
class PartsFound:
    """What the parts of a question of several parts found: their papers, the parts that found
    none, and everything retrieved."""
    papers: list[Paper] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    retrieved: list[Hit] = field(default_factory=list)


class Planner:
    def __init__(self, settings: Settings, retriever: Retriever, judge: Judge,
                 embed: SentenceEmbeddings, rewriter: Optional[Callable[[str], str]] = None,
                 reader: Optional[Callable[[], Optional[Reader]]] = None,
                 expander: Optional[Callable[[str], str]] = None,
                 side_reader: Optional[Callable[[str], list[str]]] = None,
                 paper_reader: Optional[Callable[[str], list[str]]] = None):
        self.settings = settings
        self.side_reader = side_reader  # the model's copy of the words naming each compared paper
        self.paper_reader = paper_reader  # the same under a grammar: only the message's words
        self.rewriter = rewriter  # the model's rewrite of a question into a paper's terms
        self.expander = expander  # the abstract the model writes for a question (second look)
        self.reader = reader  # the model that reads candidates (reading.py), made on first need
        self.policy = settings.relevance
        self.retriever = retriever
        self.store = retriever.store
        self.judge = judge
        self.embed = embed
        self._local = threading.local()

    def plan(self, message: str, history: list[Turn], mode: Optional[str],
             filters: Optional[Filters], k: Optional[int],
             on_reading: Optional[Callable[[list[Hit]], None]] = None) -> TurnPlan:
        """The turn's plan; `on_reading(candidates)` is called before the model reads them, so a
        front can show them meanwhile."""
        self._local.on_reading = on_reading  # per thread: concurrent requests plan side by side
        self._local.vectors = {}  # the message's MiniLM vector, embedded once for both readings
        with self.store.request():  # the store's revision is read once for the whole plan
            return self._plan(message, history, mode, filters, k)

    def _plan(self, message: str, history: list[Turn], mode: Optional[str],
              filters: Optional[Filters], k: Optional[int]) -> TurnPlan:
        categories = sorted(self.store.corpus_stats().categories)
        q = parse(message, history, mode, describe=self._describe, categories=categories,
                  read_intent=self._read_intent, read_asks=self._read_asks,
                  read_focus=self._read_focus,
                  authors=lambda text: authors_referred(text, self.store.corpus_stats()))
        plan = self._route(q, history, scoped(filters, q), k)
        plan.allowance = q.allowance
        if q.unknown_category:  # "the NLP area" in a collection without one: say how it was read
            plan.notices.append(compose.unknown_category(q.unknown_category, categories,
                                                         self.policy.categories_listed))
        return plan

    def _read_intent(self, message: str, rules: Intent) -> Optional[Intent]:
        """What the message asks for, as Settings.intent says to read it, given the phrase
        rules' reading `rules` (None: the rules' reading stands)."""
        if self.settings.intent == "rules":
            return None
        intent, p = best(intent_model(), self._message_vector(message), message)
        if self.settings.intent == "model":
            return intent
        confidence = self.settings.intent_confidence
        if confidence is None:
            confidence = intent_model().provenance.get("confidence", 0.0)
        return rules_then_model(message, rules, intent, p, confidence, self.settings.intent_overrule)

    def _read_asks(self, message: str) -> Optional[str]:
        """What a follow-up asks about its paper, read by meaning (answer/intent.py), when the
        model is sure enough (its fitted confidence) and Settings.intent lets models read."""
        if self.settings.intent == "rules":
            return None
        asked, p = best(asks_model(), self._message_vector(message), message)
        return asked if p >= asks_model().provenance.get("confidence", 0.0) else None

    def _message_vector(self, message: str) -> np.ndarray:
        """The message's packaged-MiniLM vector, embedded once per plan (both the intent and
        the follow-up readings are fitted on it)."""
        vectors = getattr(self._local, "vectors", None)
        if vectors is None:
            return message_vectors([message], self.embed.embedder)[0]
        if message not in vectors:
            vectors[message] = message_vectors([message], self.embed.embedder)[0]
        return vectors[message]

    def _route(self, q: Query, history: list[Turn], filters: Optional[Filters],
               k: Optional[int]) -> TurnPlan:
        focus = [p for p in (self.store.paper(i) for i in q.references) if p is not None]
        if q.unresolved:
            return self._unresolved(q, history)
        if q.after_refusal and q.reference in ("it", "they", "all", "both"):
            taken = self._taken_after_refusal(q, history, focus)
            if not taken:
                return self._after_refusal(q, history, focus)
            meant = replace(q, references=[p.paper_id for p in taken], after_refusal=False)
            plan = self._route(meant, history, filters, k)
            plan.prefix = "\n\n".join(t for t in (compose.taken_as_meant(taken), plan.prefix) if t)
            return plan
        if q.intent == "similar":  # more like this (below)
            return self._similar(q, history, focus, filters)
        if q.intent == "table":  # literature tables (below)
            return self._table(q, history, focus, filters, k)
        if q.intent == "compare":
            return self._compare(q, focus, filters, self._shown(history))
        if q.intent == "summary":
            return self._summary(q, focus, filters, k)
        return self._question(q, history, focus, filters, k)

    # ------------------------------------------------------------------ intents
    def _question(self, q: Query, history, focus: list[Paper], filters, k) -> TurnPlan:
        if (focus and q.unconfirmed_summary
                and not self._may_answer(q.message, focus[0], self.policy.follow_up_threshold)):
            return self._summary(replace(q, intent="summary", topic=q.unconfirmed_summary, references=[],
                                         focus=None, unconfirmed_summary=""), [], filters, k)
        if focus and not self._names_other_papers(q, focus, filters):
            plan = TurnPlan("question", q.message, retrieved=[as_hit(p) for p in focus])
            return self._about(plan, q, focus, previous=previous_user_message(history))
        if sum(bool(part.topic) for part in q.parts) > 1:  # "which paper does X, and who wrote the one on Y?"
            found = self._part_papers(q, filters, k)
            if found.papers:
                return self._parts(q, found)
            # no part found a paper: the message may be one question cut at a clause ("…, and how
            # long it stays in each state is random"), so it is asked whole before it is refused
        # "anything else on X?", "which papers do X?": every (other) paper on X, as a summary's
        listing = bool(q.beyond_shown) or q.lists_papers
        hits, judged = self._beyond_shown(q, *self._judged(q.topic, filters, max(k or 0, self.policy.candidates),
                                                           topic=listing))
        followed = self._followed_up(q, judged, filters)
        if followed is not None:
            plan = TurnPlan("question", q.message, retrieved=[as_hit(followed)])
            return self._about(plan, q, [followed], previous=previous_user_message(history))
        if listing and not q.beyond_shown and any(j.author_match for j in judged):
            listing = False  # "which papers did Itai Shapira write?": the author's, as a question's
        if listing:  # members as a summary's are, by their own reading (no lead over the others)
            chosen, reading = self._topic_members(q.topic, judged)
        else:
            chosen, reading = self._chosen(q.question, judged, q.singular, q.plural,
                                           sure=self._named_alone(q, judged))
        # a listing's candidates were read against its topic, as a summary's: a second look reads
        # against the question, with a lead over the others, which a listing does not judge by
        if not chosen and reading is not None and not listing and self.policy.second_look_papers > 0:
            hits, chosen, reading = self._second_look(q, filters, hits, judged, reading)
        if not chosen and reading is None and self._worth_rewriting(judged):
            hits, chosen = self._rewritten(q, filters, hits)
        papers = [j.paper for j in chosen]
        if not q.singular:  # "What does SQLNet add on top of Seq2SQL?": the papers it names, too
            papers = self._with_referred(papers, q, judged, filters)
        if not papers and not q.singular and reading is not None and self.policy.read_sides:
            papers = self._read_sides(q, reading, filters)
        if len(papers) > len(chosen):
            hits = papers_first(papers, hits)
        plan = TurnPlan("question", q.message, retrieved=hits)
        if not papers:
            return self._refuse(plan, q, judged, filters, reading)
        return self._about(plan, q, papers)

    @staticmethod
    def _beyond_shown(q: Query, hits: list[Hit], judged: list[Judged]) -> tuple[list[Hit], list[Judged]]:
        """The candidates without the papers the message asks beyond ("anything else on X?")."""
        if not q.beyond_shown:
            return hits, judged
        shown = set(q.beyond_shown)
        return ([h for h in hits if h.paper.paper_id not in shown],
                [j for j in judged if j.paper.paper_id not in shown])

    def _named_alone(self, q: Query, judged: list[Judged]) -> Optional[float]:
        """The gate's p for its best candidate, when a question about one paper names that paper
        and no other candidate (every name it writes names the best candidate, by its title or as
        a name its abstract presents as its own) and the gate accepts it: the paper is then taken
        unread ("What is Top-W?": reading three candidates would only confirm what the title
        says). None otherwise: the usual bar (`_chosen`)."""
        if q.plural or not (q.names and judged) or judged[0].p < self.judge.threshold:
            return None
        best = judged[0].paper
        if all([j.paper for j in self._named(name, judged, by_initials=False)] == [best] for name in q.names):
            return judged[0].p
        return None

    def _with_referred(self, papers: list[Paper], q: Query, judged: list[Judged],
                       filters) -> list[Paper]:
        """The papers that answer a question answered with one paper or none, and the papers of
        the collection it refers to, when it refers to two or more ("Does Zywina's theorem
        contain Koymans and Pagano's result?", "What does SQLNet add on top of Seq2SQL?"): a
        question that names two papers here asks about both, whatever words relate them. One
        paper named is not enough: "Is there an extension of K-FAC to recurrent networks?" names
        the work it builds on, not a paper it asks about. Up to Settings.compare_max."""
        if len(papers) >= 2:
            return papers
        referred = self._referred(q, judged, filters)
        if len(referred) < 2:
            return papers
        extra = [p for p in referred if p not in papers]
        return (papers + extra)[: self.settings.compare_max]

    def _read_sides(self, q: Query, reading: Read, filters) -> list[Paper]:
        """The papers of a question the reading refused because two papers answer it alike
        ("could Meta Context Engineering's evolved context files stand in for DualGraph's outline
        memory …?": neither stands out from the other, and the reading model weighs how far a
        paper stands out); RelevancePolicy.read_sides. The model copies out the words naming or
        describing each paper the message is about, under a grammar (`paper_reader`). A copy is
        the paper it names, else (unless it is a bare name) the paper its own search ranks
        first, when that is one of the read papers the model said may answer, and when the copy
        resolves to it as a comparison's side does (`_side_options`). [] unless two copies find
        two different papers so: a question about one paper keeps its refusal."""
        may = {j.paper.paper_id for j in reading.read if j.features["yes"] >= MAY_ANSWER}
        if len(may) < 2 or self.paper_reader is None:
            return []
        found: dict[str, tuple[Paper, tuple]] = {}  # side: its paper, and the side's search
        for side in self.paper_reader(q.message):
            searched = self._found_named(side, filters)
            (_, judged), named = searched
            # a bare name ("WGAN-GP") is the paper that spells it, never the nearest one
            first = named[:1] or ([] if only_a_name(side) else judged[:1])
            if first and first[0].paper.paper_id in may and all(first[0].paper != p for p, _ in found.values()):
                found[side] = (first[0].paper, searched)
        if len(found) < 2:
            return []
        # each side's paper is what the side names or what the model reads the side as, as a
        # comparison's side is ("speculative decoding" finds Top-W first, but is not Top-W)
        papers = [paper for side, (paper, searched) in found.items()
                  if paper in [j.paper for j in self._side_options(side, filters, found=searched)[0]]]
        return papers[: self.settings.compare_max] if len(papers) >= 2 else []

    def _referred(self, q: Query, judged: list[Judged], filters) -> list[Paper]:
        """The papers a message refers to by name or by author, in that order, one per name
        and per author: a name a paper has as its own (`_named`, not by initials: its title's, or
        one its abstract introduces) and written in few abstracts (RelevancePolicy.name_papers); a
        capitalised phrase that names one paper so and that few of the papers found for it write
        ("the Dynamic Coattention Network"; not "Generative Adversarial Networks", though one
        title starts so); one of the best candidates whose own name the message writes
        (`writes_name_of`: "the matrix capsules EM routing paper"); and an author's paper the
        message's candidates rank best (their other papers are not what it refers to)."""
        found: list[Paper] = []
        stats = self.store.corpus_stats()
        for name in dict.fromkeys(POSSESSIVE_RE.sub("", n) for n in q.names):  # "DualGraph's": DualGraph
            if not self._rare(name):
                continue  # a term of the field, not one paper's name
            paper = next((j.paper for j in self._found_named(name, filters, by_initials=False)[1]), None)
            if paper is not None and paper not in found:
                found.append(paper)
        for phrase in q.phrases:  # "the Dynamic Coattention Network": when it names one paper only
            (_, judged_phrase), named_phrase = self._found_named(phrase, filters, by_initials=False)
            if sum(writes(j.paper, phrase) for j in judged_phrase) > self.policy.phrase_papers:
                continue  # many papers write it: the field's words ("Generative Adversarial Networks")
            named = {j.paper.paper_id: j.paper for j in named_phrase}
            if len(named) == 1 and (paper := next(iter(named.values()))) not in found:
                found.append(paper)
        for j in judged[: self.policy.referred_candidates]:  # "the matrix capsules EM routing paper"
            if j.paper not in found and writes_name_of(q.words, j.paper, self._rare):
                found.append(j.paper)
        for author in q.authors:
            by = stats.papers_by([author])
            paper = next((j.paper for j in judged if j.paper.paper_id in by), None)
            if paper is not None and paper not in found:
                found.append(paper)
        return found

    def _rare(self, name: str) -> bool:
        """Is `name` written in few abstracts (RelevancePolicy.name_papers), so that it may be
        one paper's name ("Glow", "DualGraph"), not a term of the field ("Attention", "LSTM")?"""
        return self.store.corpus_stats().papers_using(name) <= self.policy.name_papers

    def _followed_up(self, q: Query, judged: list[Judged], filters) -> Optional[Paper]:
        """The paper of the last answer, when a question that names none is about it: retrieval
        ranks it first for the question, or, unless the gate is sure of another paper, the focus
        model reads the message as asking about the paper in focus, or the LLM reads the paper as
        answering at `follow_up_threshold` (a new topic's own paper ranks first, and the LLM reads
        the previous paper lower: benchmarks/calibrate_focus.py). None: a new question. (A reading
        of "new" decides nothing here: "EM/F1 on SQuAD? single model and ensemble pls" reads so
        and follows up on its paper, which the LLM reads as answering.)"""
        paper = self.store.paper(q.follow_up[0]) if q.follow_up else None
        if paper is None or self._names_other_papers(q, [paper], filters):
            return None
        allowed = self.store.allowed_papers(filters)
        if allowed is not None and paper.paper_id not in allowed:
            return None
        if judged and judged[0].paper.paper_id == paper.paper_id:
            return paper
        if judged and judged[0].p >= self.judge.threshold:
            return None  # the gate is sure of another paper: a new question, nothing to read
        if q.focus == "focus":  # "how big is the training data?"
            return paper
        return paper if self._may_answer(q.message, paper, self.policy.follow_up_threshold) else None

    def _read_focus(self, message: str) -> Optional[str]:
        """"focus" or "new" when the focus model reads the message so at RelevancePolicy.
        follow_up_focus, else None (unsure, or Settings.intent leaves reading to the rules)."""
        p, at = self._focus_reading(message)
        return None if p is None else "focus" if p >= at else "new" if p <= 1 - at else None

    def _focus_reading(self, message: str) -> tuple[Optional[float], float]:
        """The focus model's probability that the message asks about the paper in focus (None
        when Settings.intent leaves reading to the rules), and the probability it must reach."""
        at = self.policy.follow_up_focus
        if at is None:
            at = focus_model().provenance.get("threshold", 1.0)
        if self.settings.intent == "rules":
            return None, at
        label, p = best(focus_model(), self._message_vector(message), message)
        return (p if label == "focus" else 1 - p), at

    def _chosen(self, question: str, judged: list[Judged], singular: bool, plural: bool,
                sure: Optional[float] = None) -> tuple[list[Judged], Optional[Read]]:
        """The papers that answer a question, and the model's reading when it read them. `sure`:
        the gate probability at which the best candidate is taken unread (default: the policy's
        reading_sure, or the gate's threshold when that is None). A paper that treats another
        case than the question states ("dimension 2 or 3" for "d ≥ 4": cases.other_cases) answers
        it for neither."""
        reading = self._read(question, judged, sure or self.policy.reading_sure or self.judge.threshold)
        if reading is not None:  # the model read the candidates: the reading judges
            return self.judge.choose(same_case(question, reading.accepted), singular, plural,
                                     reading.threshold), reading
        return self.judge.choose(same_case(question, judged), singular, plural), None

    def _parts(self, q: Query, found: PartsFound) -> TurnPlan:
        """A question of several parts about different papers, each part with its own topic
        retrieved and judged on its own (`_part_papers`, which found at least one paper): the
        answer covers the papers found for all of them, and a part that found nothing is named in
        a notice. (When no part finds a paper, `_question` asks the message whole.) A part that
        only points back ("and who wrote it?") needs no search."""
        plan = TurnPlan("question", q.message, retrieved=papers_first(found.papers, found.retrieved))
        plan = self._about(plan, q, found.papers)
        if found.missing:
            plan.notices.append(compose.parts_not_found(found.missing))
        return plan

    def _part_papers(self, q: Query, filters, k) -> PartsFound:
        """What each part of a question of several parts found."""
        found = PartsFound()
        for part in (p for p in q.parts if p.topic):
            hits, judged = self._judged(part.topic, filters, max(k or 0, self.policy.candidates))
            chosen, _ = self._chosen(part.text, judged, part.singular or not part.plural, part.plural)
            found.retrieved += [h for h in hits if h not in found.retrieved]
            found.papers += [j.paper for j in chosen if j.paper not in found.papers]
            if not chosen:
                found.missing.append(part.text)
        return found

    def _read(self, question: str, judged: list[Judged], sure: float) -> Optional[Read]:
        """The model's reading of the best candidates, unless the gate is sure of the best one
        (its p reaches `sure`), no model can read, or the floor refuses: then the gate alone
        judges."""
        if not judged or judged[0].p >= sure:
            return None
        reader = self._reader_for(judged, judged[: self.policy.reading_papers])
        return reader.read(question, judged) if reader is not None else None

    def _read_topic(self, topic: str, judged: list[Judged]) -> Optional[Read]:
        """A summary's best candidates read against its topic: the reading decides their
        membership (None: no model can read, or the floor refuses; the gate alone judges)."""
        papers = self.policy.summary_reading_papers
        if papers <= 0:
            return None
        reader = self._reader_for(judged, judged[:papers])
        if reader is None:
            return None
        return reader.read_topic(topic, judged, papers, self.policy.summary_reading_threshold,
                                 self.policy.summary_reading_gate_weight, self.policy.summary_member_threshold)

    def _reader_for(self, judged: list[Judged], shown: list[Judged]) -> Optional[Reader]:
        """The model that will read these candidates, once the listener (the page, /v1) has
        been told which (`shown`) it reads; None when no model can read or the floor refuses."""
        reader = self.reader() if self.reader is not None else None
        if reader is None or not reader.worth_reading(judged):
            return None
        notify = getattr(self._local, "on_reading", None)
        if notify is not None:
            notify([j.hit for j in shown])
        return reader

    def _second_look(self, q: Query, filters, hits: list[Hit], judged: list[Judged],
                     reading: Read) -> tuple[list[Hit], list[Judged], Read]:
        """Before refusing a question the model read: candidates worded like a paper. The model
        writes the abstract of a paper that would answer it (HyDE), and the best papers for the
        question with that abstract which were not read yet are read against the question itself.
        A far paraphrase shares no words with its paper, so its paper is often not among the
        first candidates at all; the written abstract is in a paper's words. The abstract only
        proposes candidates: what they are judged on is the model's reading of each against the
        question, with the gate's p for the question (0 below its candidates), never on how
        close they are to the written text."""
        text = self.expander(q.topic) if self.expander is not None else ""
        if not terms(text):
            return hits, [], reading
        seen = {j.paper.paper_id for j in reading.read}
        gate = {j.paper.paper_id: j for j in judged}
        found = self.retriever.search(f"{q.topic} {text}", k=self.policy.candidates, filters=filters)
        new = [h for h in found if h.paper.paper_id not in seen][: self.policy.second_look_papers]
        more = [gate.get(h.paper.paper_id) or Judged(h, 0.0) for h in new]
        reader = self._reader_for(judged, more) if more else None
        again = reader.read_more(q.question, reading, more) if reader is not None else None
        if again is None:
            return hits, [], reading
        retrieved = hits + [h for h in new if h.paper.paper_id not in gate]
        chosen = self.judge.choose(same_case(q.question, again.accepted), q.singular, q.plural, again.threshold)
        return papers_first([j.paper for j in chosen], retrieved), chosen, again

    def _worth_rewriting(self, judged: list[Judged]) -> bool:
        return (self.policy.rewrite and self.rewriter is not None and bool(judged)
                and judged[0].p >= self.policy.rewrite_floor)

    def _rewritten(self, q: Query, filters, hits: list[Hit]) -> tuple[list[Hit], list[Judged]]:
        """Paraphrase recall: ask again in the terms a paper would use, through the same gate."""
        text = self.rewriter(q.topic)
        if not terms(text):
            return hits, []
        new_hits, judged = self._judged(text, filters, self.policy.candidates)
        chosen = self.judge.choose(same_case(q.question, judged), singular=q.singular, plural=False)
        return (new_hits, chosen) if chosen else (hits, [])

    def _about(self, plan: TurnPlan, q: Query, papers: list[Paper], previous: str = "") -> TurnPlan:
        """Answer every part of the question from these papers."""
        parts = [p.text for p in q.parts]
        plan.sources = self._sources(papers, parts)
        content = [p.text for p in q.parts if not p.metadata]
        record = [compose.authors_answer(plan.sources, count=q.counts_authors)] if q.asks_authors else []
        record += [compose.date_answer(plan.sources)] if q.asks_date else []
        if record:
            plan.prefix = " ".join(record)
        if not content:
            return plan
        plan.prompt = compose.question_prompt(content, plan.sources, previous=previous)
        plan.lead = "" if plan.prefix else compose.lead(plan.sources)
        plan.fallback = compose.extracts(plan.sources)
        plan.notices += compose.unanswered_parts(content, plan.sources)
        return plan

    def _summary(self, q: Query, focus: list[Paper], filters, k) -> TurnPlan:
        plan = TurnPlan("summary", q.topic)
        if focus and (q.focus == "focus" or not new_terms(q.topic, focus)):
            # "summarize them", "put them side by side: what kind of X is each doing?", "summarize
            # both, and which of them …": earlier papers
            plan.retrieved = [as_hit(p) for p in focus]
            return self._themed(plan, self._themes(list(focus), q.topic), q.topic, compose.shown_listing)
        if not q.topic:  # "Summarize this collection", "Which papers are in the Robotics area?"
            return self._overview(plan, q, filters)
        q, searched = self._topic_found(q, filters, max(k or 0, self.policy.summary_candidates))
        if not q.topic:  # the topic clause found nothing; another asks for the whole collection
            return self._overview(plan, q, filters)
        plan.query = q.topic
        hits, judged = self._beyond_shown(q, *searched)
        plan.retrieved = hits
        relevant, reading = self._topic_members(q.topic, judged)
        papers, matching = [j.paper for j in relevant[: self.policy.summary_max]], len(relevant)
        if not papers:
            return self._refuse(plan, q, judged, filters, reading)
        grouped = self._themes(papers, q.topic)
        total = len(self.store.papers())
        return self._themed(plan, grouped, q.topic, lambda themed: compose.summary_listing(
            q.topic, themed, matching, total, q.scope))

    def _topic_found(self, q: Query, filters, k: int) -> tuple[Query, tuple[list[Hit], list[Judged]]]:
        """The query with the topic the collection has papers on, and that topic's search: when
        the clause read as the topic points back at another ("… What's in here that touches
        it?") and its own words find no paper the gate would list in a summary, the first other
        clause whose best candidate the gate would cite ("federated learning"); when it finds no
        paper the gate would cite and another clause asks for the whole collection ("can you sort
        all the papers here into rough themes? just short names under each heading"), the topic
        "" (the caller gives an overview). Each clause is searched once."""
        searched = self._judged(q.topic, filters, k, topic=True)
        best = _best_p(searched)
        if best < self.judge.summary_threshold:
            for other in (t for t in q.topic_alternatives if t):
                found = self._judged(other, filters, k, topic=True)
                if _best_p(found) >= self.judge.threshold:
                    return replace(q, topic=other, topic_alternatives=[]), found
        if "" in q.topic_alternatives and best < self.judge.threshold:
            return replace(q, topic="", topic_alternatives=[]), searched
        return q, searched

    def _topic_members(self, topic: str, judged: list[Judged]) -> tuple[list[Judged], Optional[Read]]:
        """A topic's papers (a summary's, a topic table's) and the model's reading of its best
        candidates, which decides theirs; the gate alone (no reading) when no model reads."""
        reading = self._read_topic(topic, judged)
        if reading is None:
            return self.judge.members(judged), None
        return self._read_members(reading, judged), reading

    def _read_members(self, reading: Read, judged: list[Judged]) -> list[Judged]:
        """A summary's papers once the model read its best candidates: those it said yes to, then
        the unread ones at the summary threshold; none when it said yes to none (nothing is on it)."""
        if not reading.accepted:
            return []
        read = {j.paper.paper_id for j in reading.read}
        rest = [j for j in self.judge.relevant(judged, self.judge.summary_threshold)
                if j.paper.paper_id not in read]
        return list(reading.accepted) + rest

    def _overview(self, plan: TurnPlan, q: Query, filters) -> TurnPlan:
        """Everything in scope (the collection, or the categories named or filtered), grouped
        into themes; beyond `summary_max` papers, the most central few of each theme."""
        allowed = self.store.allowed_papers(filters)
        ids = sorted(self.store.papers()) if allowed is None else sorted(allowed)
        if not ids:
            return self._refuse(plan, q, [], filters)
        scope = q.scope or ("the papers filtered" if allowed is not None else "this collection")
        grouped, sizes = self._overview_themes(ids, scope)
        plan.retrieved = [as_hit(p) for t in grouped for p in t.papers]
        total = len(self.store.papers())
        return self._themed(plan, grouped, scope, lambda themed: compose.overview_listing(
            q.scope, allowed is not None, themed, len(ids), total, sizes))

    def _overview_themes(self, ids: list[str], scope: str) -> tuple[list[Theme], list[int]]:
        """The scope's themes and how many papers each holds. Up to `summary_max` papers: all of
        them, grouped as a summary's are. Beyond: k-means themes of all of them (the collection
        map's clustering, on the stored paper vectors), each shown by its `overview_per_theme`
        most central papers and named from its `overview_name_papers` most central."""
        if len(ids) <= self.policy.summary_max:
            grouped = self._themes([self.store.paper(i) for i in ids], scope)
            return grouped, [len(t.papers) for t in grouped]
        vectors = self.store.paper_vectors(ids)
        groups = kmeans(vectors, target_groups(len(ids), self.settings.max_themes))
        core_size = self.settings.overview_name_papers
        # only the papers shown and named are read (the paper table is on disk)
        cores = [[self.store.paper(ids[r])
                  for r in central(vectors, np.flatnonzero(groups == g), core_size).tolist()]
                 for g in range(int(groups.max()) + 1)]
        stats, share = self.store.corpus_stats(), self.settings.overview_name_share
        named = [Theme(theme_name(core, [p for other in cores if other is not core for p in other],
                                  scope, stats, min_share=share), core[: self.policy.overview_per_theme])
                 for core in cores]
        return named, np.bincount(groups).tolist()

    def _themed(self, plan: TurnPlan, grouped: list[Theme], topic: str,
                listing: Callable[[list[tuple[str, list[Source]]]], str]) -> TurnPlan:
        """A summary's answer: sources numbered theme by theme, the listing written by
        `listing(themed)`, and a prompt for one sentence per theme, restating its first paper."""
        plan.sources = self._sources([p for t in grouped for p in t.papers], [topic], per_part=1,
                                     own=True)
        by_id = {s.paper.paper_id: s for s in plan.sources}
        themed = [(t.name, [by_id[p.paper_id] for p in t.papers]) for t in grouped]
        plan.prefix = listing(themed)
        papers = compose.prose_papers(themed, self.settings.summary_prose_papers)
        plan.prompt = compose.summary_prompt(papers)
        plan.prose_heading = compose.PROSE_HEADING
        plan.max_tokens = 45 * len(papers)
        return plan

    def _shown(self, history: list[Turn]) -> set[str]:
        """The papers the conversation's recent answers showed (the focus a described target is
        resolved against first)."""
        turns = shown_lists(history)[: self.policy.focus_turns]
        return {pid for turn in turns for pid in turn.paper_ids}

    def _compare(self, q: Query, focus: list[Paper], filters, shown: set[str] = frozenset()) -> TurnPlan:
        plan = TurnPlan("compare", q.message)
        # a side naming a paper the conversation already points at is that paper; sides of
        # this message may share a name ("the geometric Littlewood-Offord paper" vs "the
        # polynomial Littlewood-Offord problem") and are each resolved on their own
        targets = [t for t in q.targets if not any(names_paper(t, p) for p in focus)]
        papers, missing, retrieved = self._sides(targets, focus, filters, shown, q.compared_against)
        # a side that is only a name ("DDPM", "LoRA") no abstract of the collection writes is
        # absent: the message's other words say what to compare on ("… for image generation?
        # How does DDIM sample in far fewer steps?"), never which papers stand in for it
        named_absent = any(self._never_written(t) for t in missing)
        if len(papers) < 2 and len(focus) < 2 and len(q.side_sentences) >= 2 and not named_absent:
            # sides told in sentences of their own ("One paper does X. The other does Y."),
            # which the phrase reading may have cut elsewhere: taken when they find more papers
            found = self._sides(q.side_sentences, focus, filters, shown)
            if len(found[0]) > len(papers):
                papers, missing, retrieved = found
        if len(papers) < 2 and not focus and q.topic:
            # a comparison asked as a question ("Would MCE make DualGraph's hand-built memory
            # unnecessary?"), whose sides no phrase marks: the papers it names, or whose authors
            # it names, as a question's are (`_referred`), when they are two or more
            found = self._referred(q, self._judged(q.topic, filters, self.policy.candidates)[1], filters)
            if len(found) >= 2:
                papers, missing, retrieved = found, [], papers_first(found, retrieved)
        if ((len(papers) < 2 or missing) and len(focus) < 2 and not q.compared_against
                and self.side_reader is not None):
            # the phrase reading found fewer than two papers, or a side that names none: the
            # model copies out the words naming each paper ("Both the sycophancy paper and the
            # mode-collapse / typicality-bias paper …"), taken when they find two papers or more. Not
            # for "how does A compare to B", whose B (often work from elsewhere) keeps a
            # question's bar: its sides are read by structure
            sides = [s for s in self.side_reader(q.message) if not any(names_paper(s, p) for p in focus)]
            standing = stand_ins(missing, [t for t in targets if t not in missing], sides) if papers else {}
            if missing and len(standing) == len(missing):
                # the phrase reading found some sides: they stay, and a copy stands in only for
                # each side found nowhere ("the capsule paper that uses EM routing" keeps its
                # paper; "the original dynamic routing one" becomes "Dynamic Routing")
                sides = [standing.get(t, t) for t in targets]
            found = self._sides(sides, focus, filters, shown)
            if len(found[0]) >= 2 and (len(found[0]) > len(papers) or not found[1]):
                papers, missing, retrieved = found  # never one paper: that is no comparison
        if len(papers) < 2 and not focus and len(targets) == 1 and q.plural:
            # "There are two safe-RL papers built on Lyapunov functions. How do they differ?": one
            # description of both sides; its two best papers, as a summary's members, are the sides
            found = self._pair(targets[0], filters)
            if found:
                papers, missing, retrieved = found, [], papers_first(found, retrieved)
        if len(papers) < 2 and not focus and not named_absent:
            # "Is there X? Also, what do they find about Y vs Z?": a comparison word inside a
            # question of several parts, each describing something ("how do they differ
            # conceptually" does not); each part answered on its own when that finds two papers
            # or more ("BERT vs GPT-2: what differs, and how are they used?" finds none)
            asked = replace(q, parts=[p for p in q.parts if p.topic and describes_a_paper_here(p.topic)])
            parted = self._part_papers(asked, filters, None) if len(asked.parts) > 1 else PartsFound()
            if len(parted.papers) >= 2 and len(parted.papers) > len(papers):
                return self._parts(asked, parted)
        papers = papers[: self.settings.compare_max]
        plan.retrieved = papers_first(papers, retrieved)
        if missing:
            plan.notices.append(compose.not_found(missing))
        if not papers:
            return self._refuse(plan, q, [], filters)
        plan.sources = self._sources(papers, [q.message], per_part=2, own=True)
        if len(papers) == 1:
            plan.prefix = compose.only_one(plan.sources[0], missing) + "\n\n" + compose.extracts(plan.sources)
            return plan
        plan.prefix = compose.compare_table(plan.sources)
        plan.prompt = compose.compare_prompt(plan.sources)
        plan.prose_heading = compose.PROSE_HEADING  # one checked sentence per paper, no verdict
        plan.max_tokens = 120
        return plan

    def _never_written(self, side: str) -> bool:
        """Is the side only a name ("DDPM", "GPT-2") that no paper of the collection writes?"""
        stats = self.store.corpus_stats()
        return only_a_name(side) and not any(stats.papers_using(w) for w in distinctive_tokens(side))

    def _pair(self, description: str, filters) -> list[Paper]:
        """The two papers one description of both sides fits best, read as a summary's members
        are; [] unless two are: a second paper below the members' bar would be a guess."""
        _, judged = self._judged(description, filters, self.policy.summary_candidates, topic=True)
        members, _ = self._topic_members(description, judged)
        return [j.paper for j in members[:2]] if len(members) >= 2 else []

    def _sides(self, targets: list[str], focus: list[Paper], filters, shown: set[str],
               against: str = "") -> tuple[list[Paper], list[str], list[Hit]]:
        """The papers of a comparison (those in focus, then one per side found), the sides
        found nowhere, and what retrieval returned for them. `against`: a side the message
        compares with rather than says is here ("how does A compare to B": B)."""
        # "how do those two differ in scope?": when the message points at two or more earlier
        # papers, those are the sides, and what else it says is what to compare them on; only a
        # paper it names ("… with Top-W") joins them, never one found by description
        names_only = len(focus) >= 2
        options, kept, retrieved = [], [], []
        for target in targets:
            side = _Side(target, self._found_named(target, filters), not focus and target != against)
            accepted, hits = self._side_options(target, filters, names_only, side.asserted, side.searched)
            if names_only and not accepted:
                continue
            kept.append(side)
            options.append(accepted)
            retrieved.extend(h for h in (hits if accepted else hits[:2]) if h not in retrieved)
        found = assign_sides(options, taken={p.paper_id for p in focus}, shown=shown)
        found = self._sides_taken(kept, options, found, focus, filters, names_only)
        papers = list(focus) + [j.paper for j in found if j is not None]
        return papers, [side.target for side, j in zip(kept, found) if j is None], retrieved

    def _sides_taken(self, sides: list["_Side"], options: list[list[Judged]], found: list[Optional[Judged]],
                     focus: list[Paper], filters, names_only: bool) -> list[Optional[Judged]]:
        """`found` with each side left out because every paper it may be went to another side
        looked for again without those papers: "Compare the PixelCNN++ tweaks paper with the
        original conditional PixelCNN one": "PixelCNN" names PixelCNN++ first, which the first side
        took; without it, the side is the paper its words describe (*Conditional Image Generation
        with PixelCNN Decoders*), judged as a described side is. The side's search is not run
        again: its candidates are filtered."""
        taken = {p.paper_id for p in focus} | {j.paper.paper_id for j in found if j is not None}
        found = list(found)
        for i, (side, opts, j) in enumerate(zip(sides, options, found)):
            if j is not None or not opts or not {o.paper.paper_id for o in opts} <= taken:
                continue
            target, ((hits, judged), named) = side.target, side.searched
            rest = ((hits, [c for c in judged if c.paper.paper_id not in taken]),
                    [n for n in named if n.paper.paper_id not in taken])
            again, _ = self._side_options(target, filters, names_only, side.asserted, found=rest)
            # a name both papers write names the one whose title has it ("PixelCNN": *Conditional
            # Image Generation with PixelCNN Decoders*); "double DQN" is no paper that only uses DQN
            names = distinctive_tokens(ASIDE_RE.sub("", target))
            found[i] = next((o for o in again if o.paper.paper_id not in taken
                             and all(has_words(o.paper.title, n) for n in names)), None)
            if found[i] is not None:
                taken.add(found[i].paper.paper_id)
        return found

    def _side_options(self, target: str, filters, names_only: bool = False,
                      asserted: bool = True, found: Optional[tuple] = None) -> tuple[list[Judged], list[Hit]]:
        """The papers one side of a comparison may be, best first: the paper the side names
        (`_named`) alone, else (unless `names_only`) those the relevance judgement accepts.
        `asserted`: the message describes the side as a paper here ("compare the paper that X
        with the one that Y"), not as what an earlier paper is compared with ("do they compare
        against deep network classifiers?"). `found`: the side's `_found_named`, when the caller
        has searched it already."""
        (hits, judged), named = found or self._found_named(target, filters)
        if named:  # the paper it names first, alone: a later one is a looser reading of the name
            return named[:1], [named[0].hit]
        if names_only or only_a_name(target):  # "GPT-2" that no candidate spells is not here, however near
            return [], hits
        # a side described in other words: the model reads the best candidates when the gate is
        # unsure, as for a question. The user's word that the paper exists lowers the bar: with
        # no model to read, membership (the summary threshold) is enough; with a reading, its
        # best paper at the described-side threshold (not for a work cited from elsewhere)
        accepted, reading = self._chosen(target, judged, singular=False, plural=True,
                                         sure=self.judge.threshold)
        if not accepted and reading is None:
            accepted = self.judge.relevant(judged, self.judge.summary_threshold)
        elif not accepted and asserted and describes_a_paper_here(target):
            accepted = [j for j in reading.read[:1] if j.p >= self.policy.described_side_threshold]
        return accepted[: self.policy.side_options], [j.hit for j in accepted]

    def _found_named(self, name: str, filters, by_initials: bool = True
                     ) -> tuple[tuple[list[Hit], list[Judged]], list[Judged]]:
        """The search for a name (its acronyms spelt out: `_spelled_out`) and the candidates it
        names (`_named`)."""
        hits, judged = self._judged(self._spelled_out(name), filters, self.policy.candidates)
        return (hits, judged), self._named(name, judged, by_initials)

    def _named(self, target: str, judged: list[Judged], by_initials: bool = True) -> list[Judged]:
        """The candidates a side names, from the first of these ways to name a paper that finds
        one: its title, the title's head, the method name the title starts with, the head
        written with acronyms or spelt whole by one ("SAC" for "Soft Actor-Critic: …"), or a side
        that writes the whole title inside a remark; for a side written as a name, a title that
        holds all its words, acronyms spelt out as the collection defines them ("semi-supervised
        GCN"); an abstract that presents the name as its own and spells out its acronym ("We
        propose Efficient Neural Architecture Search (ENAS)"); the initials of the title's first
        words ("Exploring Neural Architecture Search for …" spells ENAS too, by chance); an
        abstract that presents the name. A year or venue the side gives ("Equality of
        opportunity (the 2016 … paper)") puts the papers of that year or venue first.
        `by_initials` False: not by initials, which a field's own terms spell too ("LLM" for
        "Large language models often …")."""
        bare = ASIDE_RE.sub("", target)
        # a one-word name before a remark ("ENAS (searching for a path inside …)") is that name;
        # "least squares GANs (LSGAN)" is not "least squares GANs" alone
        introduced = named_in_abstract(target, judged) or (
            named_in_abstract(bare.strip(), judged) if len(bare.split()) == 1 else [])
        ways = (
            lambda: [j for j in judged if title_names(target, j.paper, initials=False)
                     or holds_title(target, j.paper) or abbreviates_head(target.strip(), j.paper.title)],
            lambda: ([j for j in judged if title_has_all(self._side_words(target), j.paper)]
                     if written_as_name(bare) and len(content_words(bare)) >= 2 else []),
            lambda: [j for j in introduced if defines(target, j.paper)],
            lambda: [j for j in judged if title_names(target, j.paper)] if by_initials else [],
            lambda: introduced,
        )
        named = next((found for way in ways if (found := way())), [])
        return sorted(named, key=lambda j: not dated(target, j.paper))

    def _side_words(self, side: str) -> list[str]:
        """The side's content words, each acronym replaced by the words of its long form."""
        stats = self.store.corpus_stats()
        out = []
        for word in ASIDE_RE.sub("", side).split():
            spelled = stats.long_form(word) if acronym(word) else ""
            out.extend(content_words(spelled or word))
        return out

    def _spelled_out(self, side: str) -> str:
        """A side that is a name, with each acronym it writes spelt out as the collection's
        abstracts define it ("Bayesian MAML" → "Bayesian MAML (model-agnostic meta-learning)"):
        a paper whose title spells the name out ("Bayesian Model-Agnostic Meta-Learning") is
        then found by its words, which the acronym alone does not share. A description keeps
        its own words ("distributed SGD where each worker …"): spelt-out words would outweigh them."""
        if not is_name(ASIDE_RE.sub("", side)):
            return side
        stats = self.store.corpus_stats()
        spelled = [stats.long_form(a) for a in acronyms_in(side)]
        spelled = [s for s in dict.fromkeys(spelled) if s and s not in side.lower()]
        return f"{side} ({'; '.join(spelled)})" if spelled else side

    # ------------------------------------------------------------------ refusals
    def _refuse(self, plan: TurnPlan, q: Query, judged: list[Judged], filters,
                reading: Optional[Read] = None) -> TurnPlan:
        """Nothing was accepted: say so, cite nothing, offer the closest papers as choices. Papers
        the model read are described as they were judged (_verdict);
        unread ones are only the nearest, with the nearest one's sentence closest to the question."""
        plan.abstain = True
        plan.sources = []
        offered = reading.read if reading is not None else judged
        plan.offered = [j.paper for j in offered[: self.policy.offered]]
        filtered = filters is not None and not filters.is_empty()
        outside = self._relevant_outside(q, filters) if filtered else []
        empty = not judged and self.store.corpus_stats().n_docs == 0
        nearest = ""
        if reading is None and plan.offered and q.topic:
            nearest = (evidence_for(plan.offered[0], [q.topic], self.embed, 1) or [""])[0]
        verdicts = None if reading is None else [self._verdict(j, reading) for j in offered[: len(plan.offered)]]
        cases = other_cases(q.question, plan.offered) if q.intent != "summary" else None
        plan.prefix = compose.refusal(q.intent, q.topic, plan.offered, filtered, outside, empty,
                                      verdicts=verdicts, nearest=nearest, beyond_shown=bool(q.beyond_shown),
                                      other_cases=cases)
        return plan

    def _verdict(self, judged: Judged, reading: Read) -> str:
        """What a refusal may say of a paper the model read: "may" answer (the combined judgement
        is near the bar to cite it), "unlikely" (the model said yes, the judgement is far from
        the bar) or "no" (the model said no)."""
        if judged.p >= self.policy.may_answer_share * reading.threshold:
            return "may"
        return "unlikely" if judged.features["yes"] >= MAY_ANSWER else "no"

    def _relevant_outside(self, q: Query, filters: Filters) -> list[Paper]:
        """With filters set: papers the filters excluded that would have answered."""
        _, judged = self._judged(q.topic, None, self.policy.candidates, topic=q.intent == "summary")
        allowed = self.store.allowed_papers(filters) or set()
        return [j.paper for j in self.judge.relevant(judged) if j.paper.paper_id not in allowed][:3]

    def _after_refusal(self, q: Query, history: list[Turn], offered: list[Paper]) -> TurnPlan:
        """"What did they test it on?" after a refusal that offered papers: "it" (or "they", its
        authors) is the first one when the model, reading it against the refused question, says it may answer (as the
        refusal said: the reading is the same); the answer says which paper it took. Otherwise
        "it" is not one paper yet: the closest are offered as choices."""
        asked = previous_user_message(history)
        if q.reference in ("it", "they") and offered and asked and self._may_answer(asked, offered[0]):
            first = offered[0]
            plan = self._about(TurnPlan("question", q.message, retrieved=[as_hit(first)]), q, [first],
                               previous=asked)
            plan.prefix = "\n\n".join(t for t in (compose.taken_as_it(first), plan.prefix) if t)
            return plan
        return self._offer(q, offered)

    def _taken_after_refusal(self, q: Query, history: list[Turn], focus: list[Paper]) -> list[Paper]:
        """The papers "those two", "both" or "them" means after a refusal, or [] (the closest
        papers are offered again as choices). A comparison's "those two": the papers the last two
        questions asked for (`_asked_for`). "Summarize them", "a table of those": every paper the
        refusal offered, the list the user points at (not a question's "those": "do they report
        scores on those games?")."""
        if q.intent == "compare" and q.reference in ("both", "all"):
            return self._asked_for(history, 2)
        offered = [p.paper_id for p in self._last_shown(history)]
        if (q.reference == "all" and q.intent != "question" and len(offered) >= 2
                and [p.paper_id for p in focus] == offered):
            return focus
        return []

    def _asked_for(self, history: list[Turn], n: int) -> list[Paper]:
        """The papers the last `n` questions asked for, earliest first: an answer's one cited
        paper, or a refusal's first offered paper when the model reads it as possibly answering
        that question (as the refusal said); [] when a question had neither."""
        papers: list[Paper] = []
        asked = [(history[i - 1].content, t) for i, t in enumerate(history)
                 if i and t.role == "assistant" and history[i - 1].role == "user"]
        for question, turn in reversed(asked):
            paper = self._asked_in(question, turn)
            if paper is None:
                return []
            if paper not in papers:
                papers.insert(0, paper)
            if len(papers) == n:
                return papers
        return []

    def _asked_in(self, question: str, turn: Turn) -> Optional[Paper]:
        """The paper one answered `question` asked for (`_asked_for`), or None."""
        if turn.refused:
            first = self.store.paper(turn.paper_ids[0]) if turn.paper_ids else None
            return first if first is not None and self._may_answer(question, first) else None
        return self.store.paper(turn.paper_ids[0]) if len(turn.paper_ids) == 1 else None

    def _may_answer(self, question: str, paper: Paper, at: float = MAY_ANSWER) -> bool:
        """The model's reading: may `paper` answer `question` (yes-probability ≥ `at`)? False
        when no model reads."""
        reader = self.reader() if self.reader is not None else None
        return reader is not None and reader.may_answer(question, paper, at)

    def _offer(self, q: Query, offered: list[Paper]) -> TurnPlan:
        """"Who wrote it?" after a refusal: "it" is not one paper; offer the closest as choices."""
        plan = TurnPlan(q.intent, q.message, abstain=True, offered=offered)
        plan.prefix = compose.choices(offered)
        return plan

    def _unresolved(self, q: Query, history: list[Turn]) -> TurnPlan:
        shown = next((t.paper_ids for t in reversed(history) if t.role == "assistant" and t.paper_ids), [])
        offered = [p for p in (self.store.paper(i) for i in shown) if p is not None]
        plan = TurnPlan(q.intent, q.message, abstain=True, offered=offered)
        plan.prefix = compose.unresolved(q.unresolved, offered)
        return plan

    # ------------------------------------------------------------------ helpers
    def _judged(self, query: str, filters: Optional[Filters], n: int,
                topic: bool = False) -> tuple[list[Hit], list[Judged]]:
        """Candidates for `query` (plus every paper of an author it names), judged best first."""
        hits = self.retriever.search(query, k=n, filters=filters)
        hits += self._papers_of_named_authors(query, hits, filters)
        return hits, self.judge.judge(query, hits, topic=topic)

    def _papers_of_named_authors(self, message: str, hits: list[Hit],
                                 filters: Optional[Filters]) -> list[Hit]:
        """Every paper of an author the message names, even those retrieval ranked low."""
        have = {h.paper.paper_id for h in hits}
        allowed = self.store.allowed_papers(filters)
        stats = self.store.corpus_stats()
        extra = []
        for pid in sorted(stats.papers_by(authors_named(message, stats)) - have):
            paper = self.store.paper(pid)
            if paper is not None and (allowed is None or pid in allowed):
                extra.append(as_hit(paper))
        return extra

    def _names_other_papers(self, q: Query, focus: list[Paper], filters: Optional[Filters]) -> bool:
        """Does the message name another paper of the collection: a name that none of the focus
        papers mentions (as a name, or in another form: "GPUs" for an abstract's
        "GPU-friendly") and that a paper here has as its title or presents as its own ("does it
        beat GraphSAGE?")? A name no paper here is ("open models like Llama / Qwen", a dataset)
        leaves the question on the papers it refers to."""
        if not q.names or any(names_paper(n, p) or mentions(n, p) for n in q.names for p in focus):
            return False
        return any(self._is_a_paper_here(n, filters) for n in q.names)

    def _is_a_paper_here(self, name: str, filters: Optional[Filters]) -> bool:
        """Is `name` a paper of the collection: its title (or title head, or acronym), or a name
        an abstract presents as its own?"""
        _, judged = self._judged(name, filters, self.policy.candidates)
        return any(title_names(name, j.paper) for j in judged) or bool(named_in_abstract(name, judged))

    def _sources(self, papers: list[Paper], parts: list[str], per_part: Optional[int] = None,
                 own: bool = False) -> list[Source]:
        """Numbered sources whose evidence answers every part of the question (`own`: from the
        lines in each paper's own voice, for a summary's or comparison's sentence per paper)."""
        n = per_part or self.settings.evidence_sentences
        return [Source(i + 1, p, evidence_for(p, parts, self.embed, n, own)) for i, p in enumerate(papers)]

    def _themes(self, papers: list[Paper], topic: str) -> list[Theme]:
        vectors = self.store.paper_vectors([p.paper_id for p in papers])
        return themes(papers, vectors, topic, self.store.corpus_stats(),
                      self.settings.theme_similarity, self.settings.max_themes)

    def _describe(self, paper_id: str) -> str:
        paper = self.store.paper(paper_id)
        return f"{paper.title} {paper.category or ''} {paper.abstract}" if paper else ""

    # ------------------------------------------------------------------ more like this
    def _similar(self, q: Query, history: list[Turn], focus: list[Paper], filters) -> TurnPlan:
        """The paper the message points at, cited, and its nearest papers with their links."""
        plan = TurnPlan("similar", q.message)
        source, named = self._similar_source(q, history, focus, filters)
        if source is None:
            plan.abstain = True
            plan.offered = focus if len(focus) > 1 else self._last_shown(history)
            plan.prefix = compose.which_paper(plan.offered, named)
            return plan
        found = self._neighbours(source, filters)
        plan.sources = [Source(1, source, safe_first(source))] + [
            Source(i + 2, r.paper, [r.link]) for i, r in enumerate(found)]
        plan.retrieved = [as_hit(source)] + [Hit(paper=r.paper, score=r.score, snippet=r.link) for r in found]
        scored = [(s, r.score) for s, r in zip(plan.sources[1:], found)]
        plan.prefix = compose.similar_listing(plan.sources[0], scored)
        return plan

    def _similar_source(self, q: Query, history: list[Turn], focus: list[Paper],
                        filters) -> tuple[Optional[Paper], str]:
        """(the one paper a "more like …" means, or None; the name it gave that found nothing).
        An explicit id, else the reference ("the second one", "it"), else a name ("Top-W"),
        else the last answer's paper when it showed exactly one ("more like this"). A name is
        what follows the phrase asking for neighbours, or, when the intent model read the
        request in words no phrase lists ("work akin to the Top-W paper"), a name the message
        writes that names a paper here as its own (`_found_named`, as a question's names) and that
        few abstracts write (RelevancePolicy.name_papers), else the one paper the message
        describes, chosen as a question's paper is."""
        by_id = self.store.paper(q.paper_id) if q.paper_id else None
        if by_id is not None:
            return by_id, ""
        if focus:
            return (focus[0], "") if len(focus) == 1 else (None, "")
        target = q.similar_target
        if not target:
            shown = self._last_shown(history)
            return (shown[0], "") if len(shown) == 1 else (None, "")
        papers = self.store.papers()
        # a title named after the phrase ("more like Top-W"); a whole message is no title's name
        titled = None if q.similar_described else next(
            (pid for pid, title in papers.titles() if names_title(target, title)), None)
        if titled is not None:
            return papers[titled], ""
        for name in q.names:
            if not self._rare(name):
                continue  # a term of the field ("LSTM"), not one paper's name
            named = self._found_named(name, filters, by_initials=False)[1]
            if named:
                return named[0].paper, ""
        if q.similar_described:  # the paper the message describes, judged as a question's is
            chosen, _ = self._chosen(q.question, self._judged(q.topic, filters, self.policy.candidates)[1],
                                     singular=True, plural=False)
            return (chosen[0].paper, "") if chosen else (None, target)
        options, _ = self._side_options(target, filters)
        found = options[0].paper if options else None
        return found, "" if found else target

    def _neighbours(self, source: Paper, filters):
        """The nearest papers to `source`; with filters, the nearest the filters allow."""
        k, allowed = self.settings.similar_k, self.store.allowed_papers(filters)
        want = k if allowed is None else k * 4  # room for the neighbours the filters drop
        found = find_similar(self.store, self.embed, source.paper_id, want, self.settings.similar_candidates)
        return [r for r in found if allowed is None or r.paper.paper_id in allowed][:k]

    def _last_shown(self, history: list[Turn]) -> list[Paper]:
        turns = shown_lists(history)
        ids = turns[0].paper_ids if turns else []
        return [p for p in (self.store.paper(i) for i in ids) if p is not None]

    # ------------------------------------------------------------------ literature tables
    def _table(self, q: Query, history: list[Turn], focus: list[Paper], filters, k) -> TurnPlan:
        """One row per paper (the papers referred to, named, or about the topic), one cell per
        aspect, each cell quoted from the paper's abstract."""
        topic, aspects = q.table_topic, q.table_aspects
        plan = TurnPlan("table", topic or q.message)
        papers, matching = self._table_papers(q, topic, history, focus, filters, k, plan)
        in_scope = len(papers)
        if not papers:
            if plan.abstain:
                return plan
            return self._refuse(plan, replace(q, intent="summary", topic=topic or q.message), [], filters)
        papers = papers[: self.settings.table_max]
        rows, plan.sources = [], []
        for i, p in enumerate(papers, 1):
            cells = table_cells(p, aspects, self.embed, self.settings.table_min_score,
                                self.settings.table_cell_words, self.settings.table_cue_bonus)
            quoted = [c.sentence for c in cells if c.sentence] or safe_first(p)
            plan.sources.append(Source(i, p, list(dict.fromkeys(quoted))))
            rows.append(TableRow(number=i, paper_id=p.paper_id, title=p.title, cells=[c.text for c in cells]))
        plan.table = LiteratureTable(topic=topic if matching else "", aspects=aspects, rows=rows)
        names = {p.paper_id: compose.short_name(p) for p in papers}
        whole_scope = whole_category(q, focus)
        plan.prefix = (compose.table_intro(topic if matching else "", len(rows), matching,
                                           len(self.store.papers()),
                                           scope=q.scope if whole_scope else "", in_scope=in_scope)
                       + "\n\n" + table_markdown(plan.table, names))
        return plan

    def _table_papers(self, q: Query, topic: str, history: list[Turn], focus: list[Paper], filters,
                      k, plan: TurnPlan) -> tuple[list[Paper], int]:
        """(papers, how many match the topic: 0 when they were referred to or named). The same
        relevance path as a summary when the table is about a topic."""
        if focus:
            plan.retrieved = [as_hit(p) for p in focus]
            return list(focus), 0
        if whole_category(q, focus):
            allowed = self.store.allowed_papers(filters) or set()
            papers = [self.store.paper(i) for i in sorted(allowed)]
            plan.retrieved = [as_hit(p) for p in papers]
            return papers, 0
        if q.table_of_previous or not topic:
            shown = self._last_shown(history)
            if not shown:
                plan.abstain = True
                plan.prefix = (compose.choices([]) if q.table_of_previous
                               else compose.TABLE_NEEDS_PAPERS)
            plan.retrieved = [as_hit(p) for p in shown]
            return shown, 0
        named = self._named_papers(q.sides)
        if named:
            plan.retrieved = [as_hit(p) for p in named]
            return named, 0
        hits, judged = self._judged(topic, filters, max(k or 0, self.policy.summary_candidates), topic=True)
        plan.retrieved = hits
        relevant, reading = self._topic_members(topic, judged)  # a summary's selection
        if not relevant:
            self._refuse(plan, replace(q, intent="summary", topic=topic), judged, filters, reading)
        return [j.paper for j in relevant], len(relevant)

    def _named_papers(self, sides: list[str]) -> list[Paper]:
        """"Top-W, Verbalized Sampling and DualGraph": the papers whose titles the sides name,
        when every side names one (else the topic is a topic)."""
        papers = self.store.papers()
        titles = list(papers.titles())
        found = [next((pid for pid, title in titles if names_title(side, title)), None) for side in sides]
        if not sides or not all(found):
            return []
        return [papers[pid] for pid in dict.fromkeys(found)]


def scoped(filters: Optional[Filters], q: Query) -> Optional[Filters]:
    """The request's filters, plus the categories the message names as such when the request
    sets none (the page's or the API's own category filter wins)."""
    if not q.categories or (filters is not None and filters.categories):
        return filters
    return (filters or Filters()).model_copy(update={"categories": q.categories})


def as_hit(paper: Paper) -> Hit:
    return Hit(paper=paper, score=1.0, snippet=paper.abstract[:300])


def whole_category(q: Query, focus: list[Paper]) -> bool:
    """A table of every paper of the category the message named ("a table of the papers in the
    LLM category"), not of a topic, of papers pointed at, or of the last answer's papers."""
    return bool(q.categories) and not q.table_topic and not focus and not q.table_of_previous


@dataclass
class _Side:
    """One side of a comparison while its paper is chosen: its words, their search
    (`Planner._found_named`), and whether the message says it is a paper here."""

    target: str
    searched: tuple
    asserted: bool


def assign_sides(options: list[list[Judged]], taken: set[str],
                 shown: set[str] = frozenset()) -> list[Optional[Judged]]:
    """One paper per side, never the same paper twice, chosen jointly: the most sides found,
    then the most papers the conversation has shown (a described side means one of those when
    one of them fits), then the highest summed probability. "The sampling paper" and "the
    mode-collapse paper" may both rank Verbalized Sampling first; taking it for the first side
    would leave the second with nothing, so the first side takes its next accepted paper (Top-W). Exhaustive: a
    comparison has a handful of sides with a few options each."""
    best: tuple[tuple[int, int, float], list[Optional[Judged]]] = ((-1, 0, 0.0), [])
    for combo in product(*[[*opts, None] for opts in options]):
        ids = [j.paper.paper_id for j in combo if j is not None]
        if len(set(ids)) < len(ids) or taken & set(ids):
            continue
        score = (len(ids), len(shown & set(ids)), sum(j.p for j in combo if j is not None))
        if score > best[0]:
            best = (score, list(combo))
    return best[1] or [None] * len(options)


def papers_first(papers: list[Paper], hits: list[Hit]) -> list[Hit]:
    """The papers an answer rests on, in order, then the other papers retrieval found."""
    chosen = {p.paper_id for p in papers}
    return [as_hit(p) for p in papers] + [h for h in hits if h.paper.paper_id not in chosen]


def mentions(name: str, paper: Paper) -> bool:
    """Does the paper's text contain the name in its singular form, inside a longer word too?"""
    stem = name.lower().removesuffix("s") if len(name) > 3 else name.lower()
    return stem in f"{paper.title} {paper.abstract}".lower()


def same_case(question: str, judged: list[Judged]) -> list[Judged]:
    """The candidates that do not treat another case than the question states (cases.other_cases)."""
    cases = other_cases(question, [j.paper for j in judged])
    return [j for j, case in zip(judged, cases) if case is None]


def safe_first(paper: Paper) -> list[str]:
    """The abstract's first sentence: a cited paper's evidence when nothing more specific is."""
    return safe_sentences(paper)[:1] or [paper.abstract]


def _best_p(searched: tuple[list[Hit], list[Judged]]) -> float:
    """The gate's probability for the best candidate of a search (0 when it found none)."""
    judged = searched[1]
    return judged[0].p if judged else 0.0
