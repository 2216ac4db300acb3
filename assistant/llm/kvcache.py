"""The in-process model's KV cache from one prompt to the next: what a prompt keeps of the work
done for earlier ones.

A prompt keeps the cache of the tokens it shares with the prompt before it. That is not much
when two kinds of prompt take turns, as a question's readings (the verdict prompt, under the
chat template's default system turn) and its answer (under the assistant's system prompt, ~150
tokens, over a second of CPU) do: each answer would evaluate its system turn again. So the cells of
each prompt's first turn (up to its first end-of-turn token) are kept aside as a snapshot of
the sequence, and a prompt that opens with a kept turn starts from it.

Written here because llama-cpp-python's own `LlamaCache` saves the whole context (with its
batch × vocabulary array of logits, ~300 MB for this model) under whole prompts; llama.cpp's
sequence state calls (`llama_state_seq_get_data` / `llama_state_seq_set_data`) move just the
cells of one sequence, a few MB for a system turn.
"""
from __future__ import annotations

import ctypes
import threading
import weakref
from collections import OrderedDict
from typing import Any, Optional, Sequence

from ..text import common_prefix

OPENINGS_KEPT = 4  # first turns kept per model (the readings' and the answers' are two)
SEQUENCE = 0  # llama-cpp-python evaluates every prompt in sequence 0


def first_turn_end(llama: Any, prompt: list[int]) -> int:
    """The length of the prompt's first turn, through its first end-of-turn token; 0 when it
    has none before its last token (a raw completion prompt)."""
    import llama_cpp

    vocab = llama._model.vocab
    for i, token in enumerate(prompt[:-2]):
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            return i + 1
    return 0


class Openings:
    """Snapshots of the KV cells of prompts' first turns, the most recently used kept."""

    def __init__(self, capacity: int = OPENINGS_KEPT):
        self.capacity = capacity
        self._kept: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def start(self, llama: Any, prompt: list[int], shared: int, end: Optional[int] = None) -> int:
        """Put the cache in the state the prompt's opening (`end` tokens; by default its first
        turn) leaves it in, when that saves evaluating it: restored from a snapshot, or evaluated
        now and kept. Returns how many of the prompt's tokens the cache then holds (`shared` when
        nothing was done)."""
        end = first_turn_end(llama, prompt) if end is None else end
        if end <= shared:
            return shared
        turn = tuple(prompt[:end])
        if turn in self._kept and self._restore(llama, turn):
            return end
        # evaluated whole, from an empty sequence (a refused restore leaves it empty anyway): an
        # opening's cells are then the same whatever came before it (see reuse_prefix)
        llama.n_tokens = 0
        llama.eval(prompt[:end])
        self._keep(llama, turn)
        return end

    def _keep(self, llama: Any, turn: tuple[int, ...]) -> None:
        import llama_cpp

        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, SEQUENCE)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, SEQUENCE)
        if not written:
            return
        self._kept[turn] = bytes(buffer[:written])
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)

    def _restore(self, llama: Any, turn: tuple[int, ...]) -> bool:
        """Replace the sequence's cells by the snapshot's; False (snapshot dropped) if
        llama.cpp refuses it."""
        import llama_cpp

        state = self._kept[turn]
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(state), SEQUENCE):
            del self._kept[turn]
            llama.n_tokens = 0  # the sequence was cleared before the read failed
            return False
        self._kept.move_to_end(turn)
        llama.input_ids[: len(turn)] = turn
        llama.n_tokens = len(turn)
        return True


_OPENINGS: "weakref.WeakKeyDictionary[Any, Openings]" = weakref.WeakKeyDictionary()
_OPENINGS_LOCK = threading.Lock()


def openings_of(llama: Any) -> Openings:
    """The snapshots kept for this model (used only under its generation lock)."""
    with _OPENINGS_LOCK:
        found = _OPENINGS.get(llama)
        if found is None:
            found = _OPENINGS[llama] = Openings()
        return found


def reuse_prefix(llama: Any, prompt: list[int], openings: Optional[Openings] = None,
                 opening: Optional[int] = None, scored: Sequence[int] = ()) -> Optional[list[float]]:
    """Keep the KV cache of the tokens this prompt shares with the last one, or start from a
    kept first turn (`Openings`), and evaluate the rest but its last token.

    `opening`: keep nothing past the prompt's first `opening` tokens (kept as a snapshot like a
    first turn), so the rest is always evaluated in one piece. llama.cpp's logits for a prompt
    vary with where its evaluation was split, so a probability the assistant thresholds is
    computed the same way whatever the model read before (docs/benchmarks.md has the figures).

    `scored`: positions of prompt tokens whose log-probability given the tokens before them is
    returned (in order); None when one of them lies in the reused cache or is the last token."""
    shared = common_prefix(llama.input_ids[: llama.n_tokens], prompt[:-1])
    openings = openings if openings is not None else openings_of(llama)
    if opening is not None:
        shared = min(shared, opening)
    shared = openings.start(llama, prompt, shared, opening)
    llama.n_tokens = shared  # eval drops the KV cache from here on
    if not scored or min(scored) <= shared or max(scored) >= len(prompt) - 1:
        llama.eval(prompt[shared:-1])
        return None
    # the logits at position i - 1 predict token i
    rows = eval_keeping_logits(llama, prompt[shared:-1], [i - 1 - shared for i in scored])
    return [float(rows[i - 1 - shared][prompt[i]]) for i in scored]


def eval_keeping_logits(llama: Any, tokens: list[int], kept: Sequence[int]) -> dict[int, Any]:
    """Llama.eval(tokens) (same batches, same cells), also asking llama.cpp for the logits at
    the positions `kept` (indices into tokens); returns each as log-probabilities over the
    vocabulary. Written here because Llama.eval keeps either every position's logits (a
    context-sized array, ~2.4 GB for this vocabulary) or none."""
    import numpy as np

    wanted = set(kept)
    rows: dict[int, Any] = {}
    llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
    for start in range(0, len(tokens), llama.n_batch):
        batch = tokens[start: start + llama.n_batch]
        n_past = llama.n_tokens
        llama._batch.set_batch(batch=batch, n_past=n_past, logits_all=False)
        for k in range(len(batch)):
            if start + k in wanted:
                llama._batch.batch.logits[k] = True
        llama._ctx.decode(llama._batch)
        outputs = [k for k in range(len(batch)) if llama._batch.batch.logits[k]]
        logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(len(outputs), llama.n_vocab()))
        for row, k in enumerate(outputs):
            if start + k in wanted:
                values = logits[row].astype(np.float64)
                rows[start + k] = values - np.logaddexp.reduce(values)
        llama.input_ids[n_past: n_past + len(batch)] = batch
        llama.n_tokens += len(batch)
    llama._requires_eval = False
    return rows
