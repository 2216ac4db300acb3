"""The packaged MiniLM ONNX embedder: shape, normalisation, meaning, the 256-token limit, batching."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from assistant.config import Settings
from assistant.embed import (MINILM_DIM, MINILM_MAX_TOKENS, OnnxMiniLMEmbedding, count_tokens,
                             embed_texts, make_embedder, minilm_tokenizer, model_signature)

# Ten everyday words that are each one word-piece: a text of N of them is exactly N tokens,
# so "the first K tokens" of it is simply its first K words.
WORDS = ["apple", "river", "mountain", "green", "table", "window", "music", "paper", "light", "stone",
         "garden", "winter", "horse", "bread", "cloud", "doctor", "street", "summer", "glass", "ocean"]


def words_text(n: int) -> str:
    # a non-periodic sequence so that truncated and full texts have different word statistics
    return " ".join(WORDS[(i * 7 + i // 20) % len(WORDS)] for i in range(n))


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedding:
    emb = make_embedder(Settings())
    assert isinstance(emb, OnnxMiniLMEmbedding)
    return emb


def cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_single_word_pieces():
    for w in WORDS:
        assert count_tokens(w) == 1, w


def test_vectors_are_384d_unit_float32(embedder):
    texts = ["Federated learning is vulnerable to backdoor attacks.", "short", words_text(300)]
    vecs = embedder.embed_texts(texts)
    assert vecs.shape == (3, MINILM_DIM) == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # the llama-index interface gives the same vectors
    q = np.asarray(embedder.get_query_embedding(texts[0]), dtype=np.float32)
    t = np.asarray(embedder.get_text_embedding(texts[0]), dtype=np.float32)
    assert q.shape == (384,)
    np.testing.assert_allclose(q, vecs[0], atol=1e-5)
    np.testing.assert_allclose(t, vecs[0], atol=1e-5)
    assert embedder.embed_texts([]).shape == (0, 384)


def test_similar_texts_are_closer_than_unrelated(embedder):
    a, b, c = embedder.embed_texts([
        "Backdoor attacks against federated learning systems.",
        "A poisoning attack that plants a backdoor in federated training.",
        "A recipe for baking sourdough bread at home.",
    ])
    assert cos(a, b) > cos(a, c) + 0.2
    assert cos(a, b) > cos(b, c) + 0.2


def test_count_tokens():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    # counting never truncates: a 300-token text counts 300, not 256 or 128
    assert count_tokens(words_text(300)) == 300
    assert count_tokens(words_text(600)) == 600
    # and counting leaves the tokenizer truncating for embedding afterwards
    assert len(minilm_tokenizer().encode(words_text(300)).ids) == MINILM_MAX_TOKENS == 256


def test_truncation_at_256_tokens_not_128(embedder):
    full_text = words_text(300)
    assert count_tokens(full_text) == 300
    full, first128, first254, first200 = embedder.embed_texts([
        full_text,
        words_text(128),
        words_text(254),  # 254 + [CLS] + [SEP] = 256: exactly what the model sees of the full text
        words_text(200),
    ])
    # tokens beyond 128 still count ...
    assert np.abs(full - first128).max() > 1e-3
    assert cos(full, first128) < 0.9999
    assert np.abs(full - first200).max() > 1e-3
    # ... but nothing beyond 256 does
    np.testing.assert_allclose(full, first254, atol=1e-5)


def test_batch_equals_single(embedder):
    texts = [
        "short",
        "Federated learning (FL) is vulnerable to backdoor attacks.",
        words_text(40),
        "Large language models often exhibit increased sycophantic behaviour when users push back.",
        words_text(120),
    ]
    single = np.stack([embedder.embed_texts([t])[0] for t in texts])
    for batch_size in (2, 32):
        batched = embedder.embed_texts(texts, batch_size=batch_size)
        np.testing.assert_allclose(batched, single, atol=1e-4)
    # reversed input order: results follow the input, not the length-sorted order
    rev = embedder.embed_texts(texts[::-1], batch_size=2)
    np.testing.assert_allclose(rev[::-1], single, atol=1e-4)
    # the llama-index batch interface and the module helper agree too
    li = np.asarray(embedder.get_text_embedding_batch(texts), dtype=np.float32)
    np.testing.assert_allclose(li, single, atol=1e-4)
    np.testing.assert_allclose(embed_texts(embedder, texts, batch_size=4), single, atol=1e-4)


def test_make_embedder_caches_and_validates():
    s = Settings()
    assert make_embedder(s) is make_embedder(Settings())
    assert model_signature(s) == "onnx:all-MiniLM-L6-v2"
    from assistant.embed import EmbeddingError, OpenAICompatibleEmbedding

    with pytest.raises(EmbeddingError, match="all-MiniLM-L6-v2"):
        make_embedder(Settings(embed_model="some-other-model"))
    # the OpenAI-compatible backend is created without connecting anywhere
    remote = make_embedder(Settings(embed_backend="openai", embed_model="x",
                                    embed_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(remote, OpenAICompatibleEmbedding)
    assert model_signature(Settings(embed_backend="openai", embed_model="x")) == "openai:x"


def test_count_tokens_does_not_disturb_embedding_in_other_threads():
    long_text = words_text(600)
    stop = threading.Event()

    def keep_counting():
        while not stop.is_set():
            count_tokens(long_text)

    counter = threading.Thread(target=keep_counting, daemon=True)
    counter.start()
    try:
        lengths = [len(minilm_tokenizer().encode_batch([words_text(300), "short"])[0].ids)
                   for _ in range(40)]
    finally:
        stop.set()
        counter.join(timeout=10)
    assert set(lengths) == {MINILM_MAX_TOKENS}
