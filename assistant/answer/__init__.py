"""The answering engine: plan → retrieve → compose (structure + model prose) → ground.

`AnswerEngine.stream` yields events so every front end can show the papers found before the
model speaks: ("retrieved", [Hit]), then ("token", text)..., then ("final", Answer).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional

from ..config import Settings
from ..retrieve import Retriever
from ..types import Answer, Citation, Filters, Hit, Intent, Paper, Turn
from . import compose
from .ground import Grounder, SentenceEmbeddings, Source, best_sentences, renumber, MARKER_RE, parse_markers
from .plan import (asks_for_authors, compare_targets, is_plural_question, is_singular_question,
                   ordinal_references, previous_focus, previous_user_message, refers_back)
from .query import detect_intent, topic_of
from .relevance import Judge, Judged, authors_named
from .themes import Theme, themes
from ..text import distinctive_tokens, normalise, terms

Event = tuple[str, object]


@dataclass
class TurnPlan:
    """What a turn will say: fixed, already-cited structure plus an optional prompt for prose."""

    intent: Intent
    query: str
    retrieved: list[Hit] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    prefix: str = ""  # pipeline-written, cited text shown before the model's prose
    prompt: Optional[str] = None  # None: no prose from the model for this turn
    prose_heading: str = ""
    fallback: str = ""  # cited extracts used when the model fails or says nothing supported
    abstain: bool = False
    notices: list[str] = field(default_factory=list)
    max_tokens: int = 160  # prose is a few sentences; a bound keeps the whole answer quick


class AnswerEngine:
    def __init__(self, settings: Settings, retriever: Retriever):
        self.settings = settings
        self.retriever = retriever
        self.store = retriever.store
        self.embed = SentenceEmbeddings(self.store.embedder)
        self.policy = settings.relevance
        self.judge = Judge(self.store.corpus_stats, self.policy, embed=self.embed)
        self.grounder = Grounder(self.embed, settings.min_support)
        self._llm = None
        self._llm_error: Optional[str] = None

    # ------------------------------------------------------------------ public
    def answer(self, message: str, history: list[Turn], mode: Optional[str] = None,
               filters: Optional[Filters] = None, k: Optional[int] = None) -> Answer:
        final = None
        for kind, payload in self.stream(message, history, mode, filters, k):
            if kind == "final":
                final = payload
        assert isinstance(final, Answer)
        return final

    def stream(self, message: str, history: list[Turn], mode: Optional[str] = None,
               filters: Optional[Filters] = None, k: Optional[int] = None) -> Iterator[Event]:
        t0 = time.perf_counter()
        plan = self.plan(message, history, mode, filters, k)
        timings = {"plan": time.perf_counter() - t0}
        yield "retrieved", plan.retrieved
        if plan.abstain:
            yield "token", plan.prefix
            yield "final", self._finish(plan, plan.prefix, "", timings, t0)
            return
        if plan.prefix:
            yield "token", plan.prefix + ("\n\n" if plan.prompt else "")
        prose, notices = "", []
        if plan.prompt is not None:
            llm = self._get_llm(notices)
            if llm is not None:
                heading = plan.prose_heading
                if heading:
                    yield "token", heading
                try:
                    for delta in self._stream_llm(llm, plan.prompt, plan.max_tokens):
                        if "first_token" not in timings:
                            timings["first_token"] = time.perf_counter() - t0
                        prose += delta
                        yield "token", delta
                except Exception as exc:  # any backend failure falls back to extracts
                    notices.append(f"The language model failed ({type(exc).__name__}: "
                                   f"{str(exc)[:120]}); showing extracts instead.")
                    prose = ""
        plan.notices.extend(notices)
        yield "final", self._finish(plan, plan.prefix, prose, timings, t0)

    # ------------------------------------------------------------------ planning
    def plan(self, message: str, history: list[Turn], mode: Optional[str],
             filters: Optional[Filters], k: Optional[int]) -> TurnPlan:
        message = message.strip()
        intent: Intent = mode if mode in ("question", "summary", "compare") else detect_intent(message)
        focus = self._focus_papers(message, history, want=2 if intent == "compare" else 1)
        if intent == "compare":
            return self._plan_compare(message, focus, filters)
        if intent == "summary":
            return self._plan_summary(message, filters, k, focus)
        return self._plan_question(message, history, focus, filters, k)

    def _focus_papers(self, message: str, history: list[Turn], want: int = 1) -> list[Paper]:
        """Papers of the previous answer(s) that this message refers back to."""
        ids = previous_focus(history, want)
        if not ids or not refers_back(message):
            return []
        papers = [p for p in (self.store.paper(i) for i in ids) if p is not None]
        picks = [papers[i] for i in ordinal_references(message) if i < len(papers)]
        if picks:
            return picks
        # a message that names something else ("compare it with Top-W") keeps "it" as focus,
        # and the named thing is resolved separately
        return papers

    def _plan_question(self, message, history, focus, filters, k) -> TurnPlan:
        k = k or self.settings.k
        if focus and not self._names_other_papers(message, focus):
            query = message
            sources = self._sources(focus, message)
            plan = TurnPlan("question", query, retrieved=[self._as_hit(p) for p in focus],
                            sources=sources)
            if asks_for_authors(message):
                plan.prefix = compose.authors_answer(sources)
                return plan
            plan.prompt = compose.question_prompt(message, sources,
                                                  previous=previous_user_message(history))
            plan.fallback = compose.extracts(sources)
            return plan
        hits, judged = self._judged(message, filters, max(k, self.policy.candidates))
        chosen = self.judge.choose(judged, singular=is_singular_question(message),
                                   plural=is_plural_question(message))
        plan = TurnPlan("question", message, retrieved=hits)
        if not chosen:
            return self._abstain(plan, message, judged)
        plan.sources = self._sources([j.paper for j in chosen], message)
        if asks_for_authors(message):
            plan.prefix = compose.authors_answer(plan.sources)
            return plan
        plan.prompt = compose.question_prompt(message, plan.sources)
        plan.fallback = compose.extracts(plan.sources)
        return plan

    def _plan_summary(self, message, filters, k, focus: list[Paper] = ()) -> TurnPlan:
        topic = topic_of(message)
        plan = TurnPlan("summary", topic)
        if focus and not terms(topic.replace("them", " ").replace("these", " ")):
            # "summarize them": the papers of the previous answer
            papers, matching = list(focus), len(focus)
            plan.retrieved = [self._as_hit(p) for p in papers]
        else:
            hits, judged = self._judged(topic, filters, max(k or 0, self.policy.summary_candidates))
            plan.retrieved = hits
            relevant = self.judge.relevant(judged)
            papers, matching = [j.paper for j in relevant[: self.policy.summary_max]], len(relevant)
            if not papers:
                return self._abstain(plan, topic, judged)
        grouped = self._themes(papers, topic)
        plan.sources = self._sources([p for t in grouped for p in t.papers], topic, n_sentences=1)
        by_id = {s.paper.paper_id: s for s in plan.sources}
        themed = [(t.name, [by_id[p.paper_id] for p in t.papers]) for t in grouped]
        plan.prefix = compose.summary_listing(topic, themed, matching, len(self.store.papers()))
        plan.prompt = compose.summary_prompt(topic, themed)
        plan.prose_heading = "**Synthesis.** "
        plan.max_tokens = 45 * len(themed)
        return plan

    def _themes(self, papers: list[Paper], topic: str) -> list[Theme]:
        vectors = self.store.paper_vectors([p.paper_id for p in papers])
        return themes(papers, vectors, topic, self.store.corpus_stats(),
                      self.settings.theme_similarity, self.settings.max_themes)

    def _plan_compare(self, message, focus, filters) -> TurnPlan:
        plan = TurnPlan("compare", message)
        papers: list[Paper] = list(focus)
        missing: list[str] = []
        for target in compare_targets(message):
            if any(self._names_paper(target, p) for p in papers):
                continue
            hits, judged = self._judged(target, filters, self.policy.candidates)
            plan.retrieved.extend(h for h in hits[:3] if h not in plan.retrieved)
            found = next((j.paper for j in self.judge.relevant(judged)
                          if j.paper.paper_id not in {p.paper_id for p in papers}), None)
            if found is None:
                missing.append(target)
            else:
                papers.append(found)
        papers = papers[: self.settings.compare_max]
        plan.retrieved = [self._as_hit(p) for p in papers] + [
            h for h in plan.retrieved if h.paper.paper_id not in {p.paper_id for p in papers}]
        if missing:
            plan.notices.append("Not found in this collection: " + ", ".join(f"“{m}”" for m in missing) + ".")
        if not papers:
            return self._abstain(plan, message, [])
        plan.sources = self._sources(papers, message, n_sentences=2)
        if len(papers) == 1:
            only = plan.sources[0]
            plan.prefix = (f"I can only find one of these in the collection, "
                           f"*{compose.short_name(only.paper)}* [{only.n}], so there is nothing to "
                           f"compare it with here.\n\n" + compose.extracts(plan.sources))
            return plan
        plan.prefix = compose.compare_table(plan.sources)
        plan.prompt = compose.compare_prompt(plan.sources)
        plan.prose_heading = "**Verdict.** "
        plan.max_tokens = 120
        return plan

    # ------------------------------------------------------------------ helpers
    def _judged(self, query: str, filters: Optional[Filters], n: int) -> tuple[list[Hit], list[Judged]]:
        """Candidates for `query` (plus every paper of an author it names), judged best first."""
        hits = self.retriever.search(query, k=n, filters=filters)
        hits += self._papers_of_named_authors(query, hits, filters)
        return hits, self.judge.judge(query, hits)

    def _papers_of_named_authors(self, message: str, hits: list[Hit],
                                 filters: Optional[Filters]) -> list[Hit]:
        """Every paper of an author the message names, even those retrieval ranked low."""
        have = {h.paper.paper_id for h in hits}
        allowed = self.store.allowed_papers(filters)
        extra = []
        stats = self.store.corpus_stats()
        for pid in sorted(stats.papers_by(authors_named(message, stats)) - have):
            paper = self.store.paper(pid)
            if paper is not None and (allowed is None or pid in allowed):
                extra.append(self._as_hit(paper))
        return extra

    def _names_paper(self, target: str, paper: Paper) -> bool:
        names = distinctive_tokens(target) or [target]
        text = normalise(paper.title + " " + paper.abstract)
        return any(normalise(n) in text for n in names)

    def _names_other_papers(self, message: str, focus: list[Paper]) -> bool:
        """Does the message name a method that none of the focus papers mentions?"""
        names = distinctive_tokens(message)
        return bool(names) and not any(self._names_paper(n, p) for n in names for p in focus)

    def _sources(self, papers: list[Paper], query: str, n_sentences: Optional[int] = None) -> list[Source]:
        n = n_sentences or self.settings.evidence_sentences
        return [Source(i + 1, p, best_sentences(p, query, self.embed, n))
                for i, p in enumerate(papers)]

    @staticmethod
    def _as_hit(paper: Paper) -> Hit:
        return Hit(paper=paper, score=1.0, snippet=paper.abstract[:300])

    def _abstain(self, plan: TurnPlan, topic: str, judged: list[Judged]) -> TurnPlan:
        """Nothing passed the gate: say so, cite nothing, name the closest papers."""
        plan.abstain = True
        plan.sources = []
        plan.prefix = compose.abstain_text(topic, [j.paper for j in judged[:2]])
        return plan

    def _get_llm(self, notices: list[str]):
        if self.settings.llm_backend == "none":
            return None
        if self._llm is None and self._llm_error is None:
            try:
                from ..llm import make_llm

                self._llm = make_llm(self.settings)
            except Exception as exc:
                self._llm_error = f"{type(exc).__name__}: {exc}"
        if self._llm is None:
            notices.append(f"The language model is unavailable ({self._llm_error}); "
                           "showing extracts instead.")
        return self._llm

    def _stream_llm(self, llm, prompt: str, max_tokens: int) -> Iterator[str]:
        from ..llm import stream_chat_text
        from ..prompts import load_prompt

        messages = [{"role": "system", "content": load_prompt("system")},
                    {"role": "user", "content": prompt}]
        yield from stream_chat_text(llm, messages,
                                    max_tokens=min(max_tokens, self.settings.max_tokens))

    def _finish(self, plan: TurnPlan, prefix: str, prose: str, timings: dict, t0: float) -> Answer:
        unsupported = removed = 0
        evidence: dict[int, str] = {}
        body = prefix
        if not plan.abstain:
            if plan.prompt is not None:
                grounded = self.grounder.check(prose, plan.sources) if prose.strip() else None
                if grounded is not None:
                    unsupported, removed = grounded.unsupported, grounded.removed_markers
                    evidence.update(grounded.evidence)
                if grounded is None or not grounded.used:
                    if plan.fallback and not prefix:
                        label = "Extracts from the most relevant papers"
                        if self.settings.llm_backend != "none" and prose.strip():
                            plan.notices.append("The model's answer could not be verified "
                                                "against the abstracts; showing extracts.")
                        body = f"{label}:\n{plan.fallback}"
                else:
                    prose_text = grounded.text + self._also_relevant(plan, grounded.used)
                    body = (prefix + "\n\n" if prefix else "") + plan.prose_heading + prose_text
            text, citations = self._cite(body, plan.sources, evidence)
        else:
            text, citations = body, []
        timings["total"] = time.perf_counter() - t0
        return Answer(
            answer=text, intent=plan.intent, citations=citations, retrieved=plan.retrieved,
            abstained=plan.abstain, backend=self.settings.llm_backend, query=plan.query,
            notices=plan.notices, removed_citations=removed, unsupported_claims=unsupported,
            timings=timings,
        )

    @staticmethod
    def _also_relevant(plan: TurnPlan, used: list[int]) -> str:
        """Papers the planner chose but the model's prose left out still get a cited line."""
        if plan.prefix:
            return ""  # summaries and comparisons already cite every paper in their structure
        rest = [s for s in plan.sources if s.n not in used]
        if not rest:
            return ""
        return "\n\nAlso relevant:\n" + compose.extracts(rest, words=30)

    def _cite(self, text: str, sources: list[Source], evidence: dict[int, str]) -> tuple[str, list[Citation]]:
        """Renumber markers by first appearance; citations are exactly what the text cites."""
        by_n = {s.n: s for s in sources}
        order: list[int] = []
        for group in MARKER_RE.findall(text):
            for n in parse_markers(group):
                if n in by_n and n not in order:
                    order.append(n)
        text = renumber(text, order)
        citations = []
        for new, old in enumerate(order, 1):
            src = by_n[old]
            ev = evidence.get(old) or (src.sentences[0] if src.sentences else "")
            citations.append(Citation.from_paper(new, src.paper, evidence=ev))
        return text, citations
