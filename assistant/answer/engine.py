"""The answering engine: plan → retrieve → compose (structure + model prose) → ground.

`AnswerEngine.stream` yields events so every front end can show the papers found before the
model speaks: ("retrieved", [Hit]), then ("token", text)..., then ("final", Answer).
"""
from __future__ import annotations

import time
from typing import Iterator, Optional

from ..config import Settings
from ..llm.errors import BackendError
from ..retrieve import Retriever
from ..types import Answer, Citation, Filters, Turn
from . import compose
from .ground import Grounder, SentenceEmbeddings, Source
from .markers import MARKER_RE, parse_markers, renumber
from .plan import Planner, TurnPlan
from .relevance import Judge

Event = tuple[str, object]


class AnswerEngine:
    def __init__(self, settings: Settings, retriever: Retriever):
        self.settings = settings
        self.retriever = retriever
        self.store = retriever.store
        self.embed = SentenceEmbeddings(self.store.embedder)
        self.judge = Judge(self.store.corpus_stats, settings.relevance, embed=self.embed)
        self.planner = Planner(settings, retriever, self.judge, self.embed, rewriter=self._rewrite)
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
        plan = self.planner.plan(message, history, mode, filters, k)
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
                except BackendError as exc:  # a failing backend falls back to extracts
                    notices.append(f"The language model failed ({type(exc).__name__}: "
                                   f"{str(exc)[:120]}); showing extracts instead.")
                    prose = ""
        plan.notices.extend(notices)
        yield "final", self._finish(plan, plan.prefix, prose, timings, t0)

    def _get_llm(self, notices: list[str]):
        if self.settings.llm_backend == "none":
            return None
        if self._llm is None and self._llm_error is None:
            try:
                from ..llm import make_llm

                self._llm = make_llm(self.settings)
            except BackendError as exc:
                self._llm_error = f"{type(exc).__name__}: {exc}"
        if self._llm is None:
            notices.append(f"The language model is unavailable ({self._llm_error}); "
                           "showing extracts instead.")
        return self._llm

    def _rewrite(self, question: str) -> str:
        """The question in the terms a paper would use (≤ 40 tokens), or "" without a model."""
        llm = self._get_llm([])
        if llm is None:
            return ""
        from ..llm import stream_chat_text
        from ..prompts import render

        try:
            text = "".join(stream_chat_text(llm, [{"role": "user", "content": render("rewrite", question=question)}],
                                            max_tokens=40))
        except BackendError:
            return ""
        return text.strip().strip('"').split("\n")[0]

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
                    if plan.fallback:
                        label = "Extracts from the most relevant papers"
                        if self.settings.llm_backend != "none" and prose.strip():
                            plan.notices.append("The model's answer could not be verified "
                                                "against the abstracts; showing extracts.")
                        body = (prefix + "\n\n" if prefix else "") + f"{label}:\n{plan.fallback}"
                else:
                    prose_text = grounded.text + self._also_relevant(plan, grounded.used)
                    body = (prefix + "\n\n" if prefix else "") + plan.prose_heading + prose_text
            text, citations = self._cite(body, plan.sources, evidence)
        else:
            text, citations = body, []
        timings["total"] = time.perf_counter() - t0
        presented = [c.paper_id for c in citations] or [p.paper_id for p in plan.offered]
        return Answer(
            answer=text, intent=plan.intent, citations=citations, retrieved=plan.retrieved,
            abstained=plan.abstain, backend=self.settings.llm_backend, query=plan.query,
            notices=plan.notices, removed_citations=removed, unsupported_claims=unsupported,
            timings=timings, presented=presented,
        )

    @staticmethod
    def _also_relevant(plan: TurnPlan, used: list[int]) -> str:
        """Papers the planner chose but the model's prose left out still get a cited line."""
        if plan.intent != "question":
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
