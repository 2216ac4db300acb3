"""One settings object for the whole product (env prefix PAPER_ASSISTANT_), with named presets.

Every front end builds a `Settings` and hands it to the library; nothing else reads the
environment, except the OpenAI backends, which fall back to the usual OPENAI_* variables.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Offline by default: no library may reach a model hub or phone home at run time.
# Set here, at import of the package's settings, so it holds for every entry point.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
SEED_CORPUS = DATA_DIR / "seed_corpus.txt"

# Where `serve` listens unless told otherwise; `ask` and `chat` look for a running server there.
SERVE_HOST = "127.0.0.1"
SERVE_PORT = 7860
API_KEY_ENV = "PAPER_ASSISTANT_API_KEY"  # the bearer token `serve` requires and the CLI sends


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paper-assistant"


class RelevancePolicy(BaseModel):
    """How the calibrated relevance model's probabilities become decisions (answer/relevance.py).

    Env: PAPER_ASSISTANT_RELEVANCE__THRESHOLD=0.6 and so on."""

    threshold: Optional[float] = Field(
        None, description="Probability a paper needs to be cited. None: the threshold shipped with "
                          "the model, chosen on held-out pairs for at most 2% answered "
                          "out-of-corpus questions (benchmarks/calibrate_relevance.py).")
    candidates: int = Field(20, description="Papers retrieved and judged for a question.")
    second_ratio: float = Field(
        0.8, description="A second paper joins a singular-or-unspecified question's answer when its "
                         "probability is at least this share of the best one's.")
    max_papers: int = Field(3, description="Papers an ordinary question's answer may cite.")
    max_papers_plural: int = Field(5, description="Papers a question asking for papers may cite.")
    offered: int = Field(2, description="Closest papers a refusal offers as choices (never cited).")
    name_papers: int = Field(
        5, description="A name written in more abstracts than this is a term of the field (\"LSTM\", "
                       "\"GAN\"), not one paper's: a question that writes it refers to no paper by it.")
    referred_candidates: int = Field(
        5, description="A question's best candidates whose own name it writes (a title's head, a short "
                       "title's words) count as papers it refers to.")
    phrase_papers: int = Field(
        2, description="A capitalised phrase that more of the papers found for it write than this is "
                       "the field's words (\"Large Language Models\"), not one paper's name.")
    focus_turns: int = Field(
        3, description="Recent answers whose papers a comparison's described sides are resolved "
                       "against first (the conversation's focus).")
    described_side_threshold: float = Field(
        0.1, description="A comparison side described in words (three content words or more, not a "
                         "work cited such as 'Ioffe & Szegedy 2015'): the best paper the model read is that side when its "
                         "combined probability reaches this, below the question threshold, because the "
                         "message says the paper is here (benchmarks/calibrate_sides.py).")
    follow_up_threshold: float = Field(
        0.9, description="A question that names no paper and asks for none, right after an answer about "
                         "one paper, is about that paper when retrieval ranks it first for the question or "
                         "the model reads it at this yes-probability (benchmarks/calibrate_focus.py).")
    follow_up_focus: Optional[float] = Field(
        None, description="The same question is about that paper, unread, when the focus model "
                          "(answer/intent.py: does the message ask about the paper in focus or "
                          "something new?) reads it so at this probability. None: the one fitted with "
                          "it (benchmarks/fit_focus.py); above 1: the model is not used.")
    side_options: int = Field(
        3, description="Accepted papers each side of a comparison may be, among which the sides are "
                       "assigned jointly (answer/plan.py assign_sides).")
    categories_listed: int = Field(
        12, description="A message names a category the collection lacks ('the NLP area'): the note "
                        "saying so lists the collection's categories when there are at most this many.")
    read_sides: bool = Field(
        False, description="Before refusing a question that does not ask for one paper and that the model "
                           "read two papers or more as possibly answering, the model copies the words naming "
                           "each paper it is about, and two read papers they find answer it (answer/plan.py "
                           "_read_sides). Off by default (docs/relevance.md says why).")
    second_look_papers: int = Field(
        0, description="When the model has read the best candidates of a question and none answers it, "
                       "it writes the abstract of a paper that would, and this many papers closest to the "
                       "question with that abstract, not read yet, are read too before refusing "
                       "(answer/plan.py _second_look); 0: no second look (the default; docs/relevance.md "
                       "says why).")
    second_look_tokens: int = Field(
        120, description="Length, in tokens, of the abstract the model writes for the second look.")
    rewrite: bool = Field(
        False, description="Before refusing, ask the model to rewrite the question in a paper's "
                           "terms and judge again (off by default: it gains as many false answers as right ones; "
                           "docs/relevance.md).")
    rewrite_floor: float = Field(0.03, description="Only questions whose best paper reaches this "
                                                   "probability are rewritten.")
    reading: Literal["auto", "local", "off"] = Field(
        "auto", description="Before refusing, the model reads the best candidates against the question "
                            "and the assistant judges (answer/reading.py). auto: with the in-process "
                            "local model or an OpenAI-compatible backend; local: always, with the "
                            "packaged model (loads it); off: the similarity gate alone.")
    reading_floor: float = Field(
        0.0, description="Gate probability the best candidate needs to be read; below it the question "
                          "is refused unread, as plainly unrelated.")
    reading_papers: int = Field(
        3, description="Best candidates the model reads, one at a time (about 2 s each on two cores); "
                       "the shipped reading model is fitted with as many (benchmarks/calibrate_reading.py).")
    reading_sentences: int = Field(
        3, description="Sentences of a candidate's abstract the model reads: those closest to the question.")
    may_answer_share: float = Field(
        0.6, description="A refusal says a paper the model read may answer the question when the "
                         "combined judgement gives it at least this share of the probability it needs "
                         "to be cited; a paper read yes below it is said to be unlikely to answer "
                         "(the small model says yes to most papers near the topic).")
    reading_sure: Optional[float] = Field(
        0.9, description="Gate probability at which a question's best candidate is cited unread "
                         "(a paper by an author the question names has 1.0). Below it the model "
                         "reads, even above the gate's threshold: a question about a case the "
                         "nearest paper does not treat shares most of its words. None: the gate's "
                         "own threshold. A comparison's side described in words is read only "
                         "below the gate's threshold.")
    summary_threshold: Optional[float] = Field(
        None, description="Probability a paper needs to join a summary whose best paper passed "
                          "`threshold`. None: the one shipped with the model, chosen for recall "
                          "(best F2) on held-out summary topics.")
    summary_reading_papers: int = Field(
        4, description="A summary's best candidates the model reads against its topic (about 2.5 s "
                       "each on two cores); the reading decides their membership, the gate the rest's; 0: the gate alone.")
    summary_reading_threshold: float = Field(
        0.77, description="Membership one read paper needs for a summary to hold any (is its topic "
                          "in the collection?): sigmoid(logit(yes) + "
                          "summary_reading_gate_weight * logit(gate p)) (answer/reading.py topic_proba; "
                          "both chosen on labelled summary topics by benchmarks/calibrate_summary_reading.py).")
    summary_member_threshold: float = Field(
        0.68, description="Membership the other read papers need once one reached "
                          "`summary_reading_threshold` (the topic is in the collection; which papers "
                          "belong to it?), on the same scale; chosen with it.")
    summary_reading_gate_weight: float = Field(
        0.3, description="How much the gate's p leans on a read paper's membership of a summary topic.")
    summary_candidates: int = Field(80, description="Papers retrieved and judged for a summary.")
    summary_max: int = Field(40, description="Papers a summary may cite.")
    overview_per_theme: int = Field(
        3, description="An overview of more papers than `summary_max` (\"Summarize this collection\", "
                       "\"the papers in the math.CO category\") cites this many of each theme, the "
                       "most central ones.")


class CitationPolicy(BaseModel):
    """When a paper backs a sentence of the model's prose (answer/ground.py). Chosen on
    blind-labelled sentences of the local model (benchmarks/calibrate_support.py: fitted on the
    seed and ml_conf answers, checked on the arXiv math ones).

    Env: PAPER_ASSISTANT_CITATION__MIN_SUPPORT=0.35 and so on."""

    min_support: float = Field(0.2, description="Score (half lexical overlap, half embedding "
                                                "similarity) the claim needs with one sentence of the paper.")
    min_content: float = Field(0.6, description="Share of the claim's content words (beyond the "
                                                "question's and the answer's framing) the paper must contain.")
    content_sentences: int = Field(1, description="The claim's content words must be found in this "
                                                  "many of the paper's evidence sentences (its best for "
                                                  "the claim) with its metadata line; 0: anywhere in them.")
    margin: float = Field(0.05, description="A second marker stays only if its paper backs the "
                                            "sentence within this of the best paper's score.")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAPER_ASSISTANT_", extra="ignore",
                                      env_nested_delimiter="__")

    # -- store
    store_dir: Path = Path("vectorstore")
    chroma_url: Optional[str] = None  # http://HOST:PORT of a `chroma run` server
    collection: str = "papers"

    # -- embeddings
    embed_backend: Literal["onnx", "openai"] = "onnx"
    embed_model: str = "all-MiniLM-L6-v2"
    embed_base_url: Optional[str] = None
    embed_api_key: Optional[str] = None
    embed_batch_size: int = 8  # small length-sorted batches: fastest and leanest on CPU (benchmarks/ingest.py)
    embed_threads: int = 0  # 0: onnxruntime decides (all cores)
    ingest_batch_papers: int = Field(
        64, ge=1, description="Papers written to the store at a time while ingesting: how often "
        "progress is reported, and what an interrupted ingest loses at most (it resumes from there).")

    sentence_vectors: Literal["ingest", "on_use", "memory"] = Field(
        "on_use", description="When the vectors of each paper's title and sentences (what "
                              "answering compares with the question) are computed: the first "
                              "time a question needs them, or all at ingest (about as long again "
                              "as embedding the chunks); both keep them in sentences.sqlite in "
                              "the store folder. `memory`: per process only.")

    # -- chunking: windows of whole sentences that fit the embedding model's 256-token limit
    chunk_tokens: int = 200
    chunk_overlap_tokens: int = 40

    # -- retrieval
    k: int = 5
    fusion_candidates: int = 50  # chunks taken from each side (BM25, dense) before fusion
    fusion: Literal["convex", "rrf"] = "convex"
    hybrid_alpha: float = 0.6  # weight of the dense side in convex fusion (benchmarks/retrieval.py)
    # use the weight `eval --tune` stored beside the store (fusion.json) instead of hybrid_alpha
    tuned_fusion: bool = True
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    paper_weight: float = Field(
        0.5, description="Weight of the paper side in hybrid search: each paper's mean chunk "
                         "vector (its whole abstract) against the question, blended with the "
                         "best chunk's fused score (convex fusion) or added as a third ranking "
                         "(RRF); 0 turns the paper side off (docs/search.md).")
    paper_candidates: int = Field(50, description="Papers the paper side proposes to fusion.")

    # -- more like this (assistant/similar.py)
    similar_k: int = 5
    # chunks nearest the source paper taken from the vector index before regrouping per paper;
    # several chunks of one paper can fill it, so it is kept well above k
    similar_candidates: int = 50

    # -- literature tables ("make a table of the papers on X: method, data"; answer/table.py)
    table_max: int = 12  # rows: more papers than fit a screen-wide table are a summary's job
    table_cell_words: int = 20  # a cell is a phrase, not the abstract; longer sentences are cut to a clause
    # a cell's score: cosine (MiniLM) between an abstract sentence and the aspect's description,
    # plus table_cue_bonus when the sentence has the aspect's cue words ("dataset", "we propose");
    # below table_min_score the cell is "—": an abstract that never mentions data should say so,
    # not quote its best guess (0.3: papers without experiments get "—" for data on the seed corpus)
    table_min_score: float = 0.3
    table_cue_bonus: float = 0.25  # cue words are firmer evidence than MiniLM's cosine here

    # -- the map of the collection (assistant/map.py; the page's Map tab, `paper-assistant map`)
    map_max_points: int = Field(
        5000, description="Papers the page's map draws at most. Beyond it the map shows the same "
                          "share of every theme (a seeded sample, and says so) plus the papers to "
                          "highlight; layout and themes are still computed from every paper. "
                          "5000 points are about 0.6 MB of page data (benchmarks/map.py).")
    map_max_clusters: int = Field(
        12, description="Themes the map is coloured by at most (about sqrt(papers/2) below it).")
    map_after_ingest: bool = Field(
        True, description="Build the map (and cache it with the store) at the end of every "
                          "ingest, so the page's Map tab opens at once; otherwise on first use. "
                          "After an upload on the page it is built in the background.")
    map_layout: Literal["tsne", "pca"] = Field(
        "tsne", description="How papers are placed: t-SNE keeps each paper's nearest papers next "
                            "to it (openTSNE; PCA below 50 papers or without it); PCA is a "
                            "linear projection, faster but mixing unrelated papers.")
    map_threads: int = Field(
        2, ge=1, description="Threads of the t-SNE layout (the same map whatever the number).")

    # -- eval: known-item search on the user's own corpus (assistant/evaluate.py)
    eval_sample: int = 100  # papers asked for
    eval_seed: int = 0  # same seed, same papers and queries: runs are comparable
    eval_min_words: int = 8  # a shorter abstract sentence ("We evaluate on X.") fits any paper
    eval_cutoffs: list[int] = [1, 5, 10]  # recall@c for each; MRR counts ranks up to the largest
    tune_alphas: list[float] = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # dense weights `--tune` tries

    # -- reading a message (answer/query.py, answer/intent.py)
    intent: Literal["rules", "model", "rules_then_model"] = Field(
        "rules_then_model", description="What a message asks for (question, summary, compare, "
        "similar, table): query.py's phrase rules, the fitted intent model over the message's "
        "MiniLM vector and words (answer/intent.py), or the rules where they name an intent and the model "
        "where they do not (their default, question).")
    intent_confidence: Optional[float] = Field(
        None, description="The intent model's probability at which it reads a message the rules "
                          "leave at question (rules_then_model). None: the one fitted with it.")
    intent_overrule: float = Field(
        0.97, ge=0.0, le=1.0,
        description="The intent model's probability at which its reading overrules the phrase "
                    "rules' summary, comparison, \"more like\" or table (rules_then_model): words of "
                    "a topic the rules take for a request (\"survey-style reports\", \"e.g. tumour vs "
                    "normal\"). Near certain: the rules' words mostly do ask for what they read.")
    # -- answering
    llm_backend: Literal["local", "openai", "none"] = "local"
    model_path: Optional[Path] = None  # any GGUF; default: the packaged Qwen2.5-Coder-1.5B
    model_cache_dir: Path = Field(default_factory=default_cache_dir)
    llm_model: Optional[str] = None  # model name for the OpenAI-compatible backend
    llm_base_url: Optional[str] = None
    llm_api_key: Optional[str] = None
    llm_timeout: float = 120.0
    max_tokens: int = 320
    temperature: float = 0.1
    n_ctx: int = 4096
    n_threads: int = 0  # 0: all cores
    lookup_draft: int = Field(
        3, ge=0, le=16, description="Tokens the local model is offered per step from the text it "
        "was given (prompt-lookup decoding, llm/lookup.py): the same answer in fewer steps. "
        "0: one token a step.")
    # Several users on the local model: N > 0 serves it with llama.cpp's own llama-server, started
    # as a child process with N parallel slots (continuous batching; each gets llm_server_slot_ctx tokens),
    # used through the OpenAI-compatible client; requests beyond the slots wait in a visible
    # queue. 0: in-process llama-cpp-python, one generation at a time. None (the default): `serve`
    # uses `serve_parallel` slots when llama-server is built (`make run` builds it) and the
    # backend is local, in-process otherwise; one-user commands (ask, chat, eval) in-process.
    llm_server_parallel: Optional[int] = Field(None, ge=0, le=64)
    llm_server_slot_ctx: int = Field(
        1536, ge=512, description="Tokens of context each llama-server slot keeps for one request, "
        "prompt and answer. Each slot's cache is memory held for the server's life, so this is "
        "sized to the prompts the assistant writes (a few hundred tokens of evidence; "
        "docs/scale.md); a longer request is refused with a clear error, not cut.")
    serve_parallel: int = Field(
        8, ge=0, le=64, description="llama-server slots `serve` gives the local model by default "
                                    "(docs/scale.md: 8 users at once, side by side with in-process).")
    serve_shutdown_grace: float = Field(
        3.0, ge=0, le=600, description="Seconds `serve` waits after Ctrl-C or SIGTERM for open "
        "requests to finish before it stops them. An open page keeps an event stream open for as "
        "long as it is shown, so without a limit `serve` would not stop while a browser has it open.")
    theme_similarity: float = 0.45  # a summary's themes: groups of papers at least this similar (cosine)
    max_themes: int = 6
    # a summary's prose: one sentence per theme about its first paper, then the next papers of
    # the themes in turn until there are at least this many sentences
    summary_prose_papers: int = 3
    # an overview of more than summary_max papers names each k-means theme from its most central
    # papers, by phrases that recur in this share of them (a summary's themes need half: a theme
    # of hundreds is broader)
    overview_name_papers: int = 20
    overview_name_share: float = 1 / 3
    compare_max: int = 4
    evidence_sentences: int = 2  # sentences of each paper given to the model (time to first token)
    relevance: RelevancePolicy = Field(default_factory=RelevancePolicy)
    citation: CitationPolicy = Field(default_factory=CitationPolicy)

    # -- HTTP API (/v1): limits on what one request may carry, so a hostile or broken client
    # gets a 4xx instead of tying up the embedder and the model for minutes
    api_max_request_bytes: int = 1_000_000  # whole request body; a long chat is a few KB
    api_max_messages: int = 200  # messages in one request (the engine only reads the recent ones)

    # -- what one message may be, on every front (CLI, page, /v1; conversation.check_message)
    max_message_chars: int = Field(
        4000, ge=1, description="Characters a user's message may have (a question, a turn of `ask`, the "
                                "page's box, a user message to /v1). A longer one is refused with an "
                                "error naming this limit, not searched: a question is a few sentences, "
                                "and the language model's context must still hold the papers.")

    def resolved_llm_api_key(self) -> Optional[str]:
        return self.llm_api_key or os.environ.get("OPENAI_API_KEY")

    def resolved_llm_base_url(self) -> Optional[str]:
        return self.llm_base_url or os.environ.get("OPENAI_BASE_URL")

    def resolved_llm_model(self) -> str:
        return self.llm_model or os.environ.get("OPENAI_MODEL") or "gpt-4o-mini"

    def identity(self) -> dict:
        """What an answer depends on beyond the question: the store (an absolute folder or the
        Chroma server's URL), its collection, and the language model. A server reports its own
        (GET /v1/info) so the CLI uses it only for the store and model the CLI would use."""
        store = (self.chroma_url.rstrip("/") if self.chroma_url
                 else str(Path(self.store_dir).expanduser().resolve()))
        return {"store": store, "collection": self.collection, "backend": self.llm_backend,
                "model": self._model_identity()}

    def _model_identity(self) -> str:
        if self.llm_backend == "local":
            if self.model_path is None:
                return "packaged"
            return str(Path(self.model_path).expanduser().resolve())
        if self.llm_backend == "openai":  # the host only: a base URL may carry credentials
            host = urlsplit(self.resolved_llm_base_url() or "https://api.openai.com").hostname
            return f"{self.resolved_llm_model()} @ {host}"
        return ""


PRESETS: dict[str, dict] = {
    # The offline default: packaged MiniLM embeddings, packaged Qwen2.5-Coder-1.5B.
    "default": {},
    # Retrieval only: extracts of the relevant papers, no language model at all.
    "extractive": {"llm_backend": "none"},
    # OpenAI (or any compatible server through PAPER_ASSISTANT_LLM_BASE_URL / OPENAI_BASE_URL).
    "openai": {"llm_backend": "openai"},
}


def load_settings(preset: str = "default", **overrides) -> Settings:
    """Settings from a preset, then the environment, then explicit overrides (None ignored)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    preset_values = {k: v for k, v in PRESETS[preset].items()
                     if f"PAPER_ASSISTANT_{k.upper()}" not in os.environ}
    values = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**{**preset_values, **values})
