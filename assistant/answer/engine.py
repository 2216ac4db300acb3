"""The answering engine: plan → retrieve → compose (structure + model prose) → ground.

`AnswerEngine.stream` yields events so every front end can show the papers found before the
model speaks: ("retrieved", [Hit]), then ("token", text)..., then ("final", Answer); while the
model is busy with other requests, ("waiting", ahead) (requests served before this one) comes
before the model's first token, at first and whenever it changes.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional

from ..config import Settings
from ..llm.errors import BackendError
from ..retrieve import Retriever
from ..types import Answer, Citation, Filters, Quote, Turn
from . import compose
from .evidence import SentenceEmbeddings
from .ground import GroundedText, Grounder
from .plan import Planner, TurnPlan
from .reading import Reader, default_model as default_reading_model
from .relevance import Judge
from .sides import SIDE_WORDS_TOKENS, copied_sides, copy_grammar
from .stream import CheckedProse, Numbering
from ..llm import make_llm, make_local_llm, stream_chat_events, stream_chat_text
from ..prompts import load_prompt, render

Event = tuple[str, object]


class AnswerEngine:
    def __init__(self, settings: Settings, retriever: Retriever, llm=None, embedder=None):
        """The parts are passed in so a caller (or a test) chooses them; None: the default.

        `llm`: the model that answers (a llama-index LLM); None: the one `settings.llm_backend`
        names, made on first use. With llm_backend "none" no model answers, whatever is given.
        `embedder`: embeds the sentences and questions that evidence, relevance and grounding
        compare (a llama-index BaseEmbedding); None: the store's, so one model session serves
        both retrieval and answering."""
        self.settings = settings
        self.retriever = retriever
        self.store = retriever.store
        # the vectors kept beside the store are the store's model's: only for its embedder
        self.embed = SentenceEmbeddings(embedder or self.store.embedder,
                                        disk=None if embedder else self.store.sentence_vectors())
        self.judge = Judge(self.store.corpus_stats, settings.relevance, embed=self.embed)
        self.planner = Planner(settings, retriever, self.judge, self.embed, rewriter=self._rewrite,
                               reader=self._reader, expander=self._expand, side_reader=self._side_words,
                               paper_reader=self._paper_words)
        self.grounder = Grounder(self.embed, settings.citation)
        self._llm = llm
        self._llm_error: Optional[str] = None
        self._reading: Optional[Reader] = None
        self._reading_llm = None  # the model behind the reader (it also writes the second look's abstract)
        self._reading_error: Optional[str] = None

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
        plan = None
        for kind, payload in self._planned(message, history, mode, filters, k):
            if kind == "reading":  # the candidates, shown while the model reads them
                yield "reading", payload
            else:
                plan = payload
        assert isinstance(plan, TurnPlan)
        turn = _StreamedTurn(plan, Numbering(plan.sources), {"plan": time.perf_counter() - t0}, t0)
        yield "retrieved", plan.retrieved
        if plan.prefix:
            yield turn.show(plan.prefix if plan.abstain else turn.numbering.apply(plan.prefix))
        if plan.prompt is not None and not plan.abstain:
            yield from self._prose(turn)
        yield "final", self._finish(turn)

    def _planned(self, *args) -> Iterator[Event]:
        """("reading", candidates) when the model is about to read them, then ("plan", TurnPlan).
        The planner runs in a worker thread so the candidates can be shown while it reads."""
        events: queue.Queue = queue.Queue()

        def work() -> None:
            try:
                events.put(("plan", self.planner.plan(*args, on_reading=lambda hits: events.put(("reading", hits)))))
            except BaseException as exc:  # raised again in the caller's thread
                events.put(("error", exc))

        threading.Thread(target=work, name="plan", daemon=True).start()
        while True:
            kind, payload = events.get()
            if kind == "error":
                raise payload
            yield kind, payload
            if kind == "plan":
                return

    def _prose(self, turn: "_StreamedTurn") -> Iterator[Event]:
        """The model's prose, released sentence by sentence once checked; the cited extracts
        when the model is unavailable, fails, or says nothing the abstracts support."""
        plan = turn.plan
        checked = CheckedProse(self.grounder, plan.sources, allowed=plan.allowance)
        llm = self._get_llm(plan.notices)
        if llm is not None and plan.lead:
            yield turn.show(turn.sep() + turn.numbering.apply(plan.lead))
        failed = False
        if llm is not None:
            try:
                for kind, delta in self._stream_llm(llm, plan.prompt, plan.max_tokens):
                    if kind == "waiting":
                        turn.timings.setdefault("waited_from", time.perf_counter() - turn.t0)
                        yield "waiting", delta
                        continue
                    turn.timings.setdefault("first_token", time.perf_counter() - turn.t0)
                    turn.timings["model_tokens"] = turn.timings.get("model_tokens", 0) + 1
                    yield from turn.sentences(checked.feed(delta))
                yield from turn.sentences(checked.close())
            except BackendError as exc:  # a failing backend falls back to extracts
                failed = True
                plan.notices.append(compose.model_failed(exc))
        turn.grounded = checked.result
        # A model that died mid-answer leaves a fragment: the extracts follow what was shown.
        if (failed or not checked.result.used) and plan.fallback:
            if llm is not None and checked.result.dropped and not failed:
                plan.notices.append(compose.UNVERIFIED)
            yield turn.show(turn.sep() + compose.EXTRACTS_HEADING + "\n" + turn.numbering.apply(plan.fallback))
        elif checked.result.used:
            also = self._also_relevant(plan, checked.result.used)
            if also:
                yield turn.show(turn.numbering.apply(also))

    def _get_llm(self, notices: list[str]):
        if self.settings.llm_backend == "none":
            return None
        if self._llm is None and self._llm_error is None:
            try:
                self._llm = make_llm(self.settings)
            except BackendError as exc:
                self._llm_error = f"{type(exc).__name__}: {exc}"
        if self._llm is None:
            notices.append(compose.model_unavailable(self._llm_error))
        return self._llm

    def _reader(self) -> Optional[Reader]:
        """The model that reads candidates before the assistant judges, per RelevancePolicy.reading
        ("auto": the answering model when it can read, i.e. the local model or an OpenAI-compatible
        server; "local": the packaged model whatever answers; "off": none, the gate alone)."""
        mode = self.settings.relevance.reading
        if mode == "off" or self._reading_error or (mode == "auto" and self.settings.llm_backend == "none"):
            return None
        if self._reading is None:
            try:
                llm = self._get_llm([]) if mode == "auto" else make_local_llm(self.settings)
            except BackendError as exc:
                llm, self._reading_error = None, str(exc)
            if llm is None or not hasattr(llm, "choice_probabilities"):
                self._reading_error = (self._reading_error or self._llm_error
                                       or "the model cannot read candidates")
                return None
            # the question's likelihood is read only when the shipped reading model weighs it
            likelihood = getattr(llm, "read_choice", None) if default_reading_model().likelihood else None
            self._reading = Reader(llm.choice_probabilities, self.embed, self.settings.relevance,
                                   read_choice=likelihood)
            self._reading_llm = llm
        return self._reading

    def _rewrite(self, question: str) -> str:
        """The question in the terms a paper would use (≤ 40 tokens), or "" without a model."""
        text = _written(self._get_llm([]), "rewrite", question, max_tokens=40)
        return text.strip('"').split("\n")[0]

    def _expand(self, question: str) -> str:
        """The abstract of a paper that would answer `question`, written by the model that reads
        candidates (for the second look: answer/plan.py), or "" when none can."""
        return _written(self._reading_model(), "expand", question,
                        max_tokens=self.settings.relevance.second_look_tokens)

    def _side_words(self, message: str) -> list[str]:
        """The words of a comparison request that name or describe each paper it compares, as
        the model that reads candidates copies them out (`sides.copied_sides` keeps only words
        the message has); [] when no model can."""
        return self._copied_words(message, exact=False)

    def _paper_words(self, message: str) -> list[str]:
        """The same for the papers a question asks about, copied under a grammar that admits only
        the message's own runs of words (`copy_grammar`) where the backend takes grammars."""
        return self._copied_words(message, exact=True)

    def _copied_words(self, message: str, exact: bool) -> list[str]:
        """prompts/sides.txt written by the model that reads candidates, under `copy_grammar`
        when `exact` and its backend takes grammars, each line kept as the message has it."""
        llm = self._reading_model()
        grammar = copy_grammar(message) if exact and getattr(llm, "grammars", False) else ""
        written = _written(llm, "sides", message, max_tokens=SIDE_WORDS_TOKENS, grammar=grammar)
        return copied_sides(written, message)

    def _reading_model(self):
        """The model that reads candidates (`_reader`), or None when none can."""
        return self._reading_llm if self._reader() is not None else None

    def _stream_llm(self, llm, prompt: str, max_tokens: int) -> Iterator[tuple[str, object]]:
        """("waiting", ahead)... while the model is busy, then ("text", delta)..."""
        messages = [{"role": "system", "content": load_prompt("system")},
                    {"role": "user", "content": prompt}]
        yield from stream_chat_events(llm, messages,
                                      max_tokens=min(max_tokens, self.settings.max_tokens))

    def _finish(self, turn: "_StreamedTurn") -> Answer:
        plan, grounded = turn.plan, turn.grounded
        citations = [] if plan.abstain else self._citations(turn)
        turn.timings["total"] = time.perf_counter() - turn.t0
        presented = [c.paper_id for c in citations] or [p.paper_id for p in plan.offered]
        return Answer(
            answer="".join(turn.shown), intent=plan.intent, citations=citations,
            retrieved=plan.retrieved, abstained=plan.abstain, backend=self.settings.llm_backend,
            query=plan.query, notices=plan.notices, removed_citations=grounded.removed_markers,
            unsupported_claims=grounded.unsupported, timings=turn.timings, presented=presented,
            table=self._table(turn),
        )

    @staticmethod
    def _table(turn: "_StreamedTurn"):
        """A literature table's rows, numbered as the shown text numbers them."""
        table = turn.plan.table
        if table is None or turn.plan.abstain:
            return None
        shown = {n: i for i, n in enumerate(turn.numbering.order, 1)}
        rows = [r.model_copy(update={"number": shown[r.number]}) for r in table.rows if r.number in shown]
        return table.model_copy(update={"rows": rows})

    @staticmethod
    def _citations(turn: "_StreamedTurn") -> list[Citation]:
        """Exactly the papers the shown text cites, numbered as shown."""
        by_n = {s.n: s for s in turn.plan.sources}
        out = []
        for shown, n in enumerate(turn.numbering.order, 1):
            src = by_n[n]
            evidence = turn.grounded.evidence.get(n) or (src.sentences[0] if src.sentences else "")
            quotes = [Quote(claim=v.plain(), evidence=v.evidence[n]) for v in turn.grounded.kept
                      if n in v.markers and n in v.evidence]
            out.append(Citation.from_paper(shown, src.paper, evidence=evidence, quotes=quotes))
        return out

    @staticmethod
    def _also_relevant(plan: TurnPlan, used: list[int]) -> str:
        """Papers the planner chose but the model's prose left out still get a cited line."""
        if plan.intent != "question":
            return ""  # summaries and comparisons already cite every paper in their structure
        rest = [s for s in plan.sources if s.n not in used]
        if not rest:
            return ""
        return f"\n\n{compose.ALSO_RELEVANT_HEADING}\n" + compose.extracts(rest, words=30)


def _written(llm, template: str, question: str, max_tokens: int, grammar: str = "") -> str:
    """What `llm` writes for the prompt `template` about `question` (a user turn alone, no system
    turn), stripped; "" without a model or when it fails. Greedy (temperature 0): what it writes
    decides which papers are searched for or compared, so one message must be read the same way
    every time (sampled at the answers' 0.1, the sides of one comparison came out differently
    from run to run)."""
    if llm is None:
        return ""
    try:
        options = {"grammar": grammar} if grammar else {}
        return "".join(stream_chat_text(llm, [{"role": "user", "content": render(template, question=question)}],
                                        max_tokens=max_tokens, temperature=0.0, **options)).strip()
    except BackendError:
        return ""


@dataclass
class _StreamedTurn:
    """One turn being streamed: its plan, what has been shown so far, and how it is numbered."""

    plan: TurnPlan
    numbering: Numbering
    timings: dict
    t0: float
    shown: list[str] = field(default_factory=list)
    grounded: GroundedText = field(default_factory=GroundedText)
    prose_started: bool = False

    def show(self, text: str) -> Event:
        self.shown.append(text)
        return "token", text

    def sep(self) -> str:
        return "\n\n" if self.shown else ""

    def sentences(self, checked: list[str]) -> Iterator[Event]:
        for sentence in checked:
            if not self.prose_started:
                self.prose_started = True
                yield self.show(self.sep() + self.plan.prose_heading + self.numbering.apply(sentence))
            else:
                yield self.show(" " + self.numbering.apply(sentence))
