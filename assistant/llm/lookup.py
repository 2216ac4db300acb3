"""Prompt-lookup decoding for the in-process model: the same text, fewer decoding steps.

An answer restates lines of the sources it was given, so the tokens that follow the last few it
wrote are usually in its prompt already. Each step looks up the last `ngram` tokens in the
prompt and the text so far, proposes the `draft` tokens that followed them there, and has the
model score the pending token and the proposal in one batch (on a CPU, scoring a few tokens at
once costs little more than one: docs/benchmarks.md). A token is sampled from the model's own
distribution at each position, exactly as one step at a time would; a proposed token is kept
only while it equals the sampled one, so the output follows the same distribution (greedy
decoding gives the very same text) and only the number of steps changes.

Written here because llama-cpp-python's own speculative path (``draft_model=``) keeps the
logits of every prompt token (``logits_all``): a (context × vocabulary) array of floats and the
output layer run over every prompt token, which would slow each reading and each prompt.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from .kvcache import reuse_prefix


@dataclass(frozen=True)
class Sampling:
    """llama.cpp's default chain as llama-cpp-python applies it: top-k, top-p, min-p, then the
    temperature (0: the most likely token)."""

    temperature: float = 0.1
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05

    def pick(self, logits: np.ndarray, rng: np.random.Generator) -> int:
        if self.temperature <= 0:
            return int(np.argmax(logits))
        k = min(self.top_k, logits.size)
        top = np.argpartition(-logits, k - 1)[:k]
        top = top[np.argsort(-logits[top], kind="stable")]
        values = logits[top].astype(np.float64)
        p = np.exp(values - values[0])
        p /= p.sum()
        keep = int(np.searchsorted(np.cumsum(p), self.top_p) + 1)  # smallest set reaching top_p
        keep = max(1, min(keep, int((p >= self.min_p * p[0]).sum())))
        scaled = values[:keep] / self.temperature
        q = np.exp(scaled - scaled.max())
        return int(top[rng.choice(keep, p=q / q.sum())])


def propose(tokens: list[int], ngram: int, draft: int) -> list[int]:
    """The `draft` tokens that followed the latest earlier occurrence of the last `ngram` tokens
    (then of shorter n-grams, down to one); none when nothing matches."""
    last = len(tokens)
    for n in range(min(ngram, last - 1), 0, -1):
        tail = tokens[last - n:]
        for start in range(last - n - 1, -1, -1):
            if tokens[start + n - 1] == tail[-1] and tokens[start:start + n] == tail:
                return list(tokens[start + n:start + n + draft])
    return []


class _Text:
    """Token bytes to text deltas: whole UTF-8 characters only, and nothing of a stop string
    (text that might begin one is held back until it cannot)."""

    def __init__(self, stop: Sequence[str]):
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.stop = [s for s in stop if s]
        self.held = ""
        self.stopped = False

    def add(self, piece: bytes) -> str:
        self.held += self.decoder.decode(piece)
        for s in self.stop:
            at = self.held.find(s)
            if at >= 0:
                self.stopped = True
                out, self.held = self.held[:at], ""
                return out
        keep = max((len(s) - 1 for s in self.stop), default=0)
        cut = len(self.held)
        for n in range(min(keep, len(self.held)), 0, -1):
            if any(s.startswith(self.held[-n:]) for s in self.stop):
                cut = len(self.held) - n
                break
        out, self.held = self.held[:cut], self.held[cut:]
        return out

    def end(self) -> str:
        out, self.held = self.held + self.decoder.decode(b"", final=True), ""
        return "" if self.stopped else out


def _is_end(llama: Any, token: int) -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(llama._model.vocab, token))


def _step(llama: Any, batch: list[int]) -> np.ndarray:
    """Evaluate `batch` after the cached tokens (the cache holds nothing beyond them: `reuse_prefix`
    and `_keep` see to it); the logits at each of its positions."""
    llama._batch.set_batch(batch=batch, n_past=llama.n_tokens, logits_all=True)
    llama._ctx.decode(llama._batch)
    rows = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(len(batch), llama.n_vocab()))
    return rows.copy()


def _keep(llama: Any, tokens: list[int]) -> None:
    """Record `tokens` as cached after the current ones and drop the cache beyond them."""
    n = llama.n_tokens
    llama.input_ids[n:n + len(tokens)] = tokens
    llama.n_tokens = n + len(tokens)
    llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)


def _tokens(llama: Any, prompt: list[int], max_tokens: int, sampling: Sampling, ngram: int,
            draft: int, rng: np.random.Generator) -> Iterator[int]:
    """The reply's tokens, at most `max_tokens`, until an end-of-generation token; several per
    model step when the proposal is kept. The cache holds what was yielded but the last token."""
    reuse_prefix(llama, prompt)
    llama._requires_eval = True  # the context's logits are ours from here on
    seen = list(prompt)
    pending = prompt[-1]  # the latest token, not yet in the cache
    while (left := max_tokens - (len(seen) - len(prompt))) > 0:
        room = min(draft, left - 1, llama.n_ctx() - llama.n_tokens - 1)
        proposal = propose(seen, ngram, room) if room > 0 else []
        logits = _step(llama, [pending] + proposal)
        sampled: list[int] = []
        for row in range(len(proposal) + 1):
            sampled.append(sampling.pick(logits[row], rng))
            if row == len(proposal) or sampled[-1] != proposal[row]:
                break
        _keep(llama, [pending] + sampled[:-1])  # the proposed tokens kept; the last is pending
        for token in sampled:
            if _is_end(llama, token):
                return
            seen.append(token)
            yield token
        pending = sampled[-1]


def generate(llama: Any, prompt: list[int], *, max_tokens: int, sampling: Sampling,
             stop: Sequence[str] = (), ngram: int = 3, draft: int = 3,
             seed: Optional[int] = None) -> Iterator[str]:
    """Text deltas of the reply to `prompt` (tokens), ending at an end-of-generation token, a
    stop string or `max_tokens`; `draft` 0 decodes one token a step. The model's KV cache and
    ``input_ids`` stay consistent, so the next prompt reuses the shared prefix."""
    if not 0 < len(prompt) < llama.n_ctx():
        raise ValueError(f"a prompt of {len(prompt)} tokens does not fit the model's context "
                         f"of {llama.n_ctx()}")
    max_tokens = min(max_tokens, llama.n_ctx() - len(prompt))  # as llama-cpp-python does
    text = _Text(stop)
    rng = np.random.default_rng(seed)
    for token in _tokens(llama, prompt, max_tokens, sampling, ngram, draft, rng):
        delta = text.add(llama.detokenize([token]))
        if delta:
            yield delta
        if text.stopped:
            break
    tail = text.end()
    if tail:
        yield tail
