"""Sentence vectors kept beside the store: computed at ingest (or on first use), read back by
later questions and processes, so a question embeds only itself."""
from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from assistant.config import SEED_CORPUS
from assistant.corpus import read_papers
from assistant.embed import OnnxMiniLMEmbedding
from assistant.index import SENTENCES_FILE, SentenceVectors, paper_sentences
from assistant.library import PaperAssistant
from conftest import make_settings

QUESTION = "Which paper studies backdoor attacks in federated learning?"


def test_vectors_round_trip_and_another_model_starts_afresh(tmp_path):
    path = tmp_path / SENTENCES_FILE
    vectors = SentenceVectors(path, "onnx:model-a")
    a, b = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    vectors.put({"first sentence.": a, "second sentence.": b})
    again = SentenceVectors(path, "onnx:model-a").get(["second sentence.", "unknown."])
    assert list(again) == ["second sentence."] and np.array_equal(again["second sentence."], b)
    assert SentenceVectors(path, "onnx:model-b").get(["first sentence."]) == {}
    assert SentenceVectors(path, "onnx:model-a").count() == 0  # model-b's open cleared them


def test_a_folder_that_cannot_be_written_keeps_vectors_in_memory_only(tmp_path):
    if os.geteuid() == 0:
        folder = tmp_path / "a-file-not-a-folder"
        folder.write_text("x")  # mkdir fails under a file, even for root
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    vectors = SentenceVectors(folder / "sub" / SENTENCES_FILE, "onnx:m")
    vectors.put({"a.": np.ones(3, dtype=np.float32)})  # no error: nothing kept
    assert vectors.get(["a."]) == {} and vectors.count() == 0


class CountingEmbedder:
    """Counts the texts the store's embedding model is asked to embed."""

    def __init__(self, monkeypatch):
        self.texts: list[str] = []
        real = OnnxMiniLMEmbedding.embed_texts

        def counted(embedder, texts, batch_size=32):
            self.texts += list(texts)
            return real(embedder, texts, batch_size=batch_size)

        monkeypatch.setattr(OnnxMiniLMEmbedding, "embed_texts", counted)


@pytest.mark.parametrize("when", ["ingest", "on_use"])
def test_a_question_embeds_only_itself_once_the_sentences_are_kept(tmp_path, monkeypatch, when):
    settings = make_settings(tmp_path / "store", sentence_vectors=when)
    pa = PaperAssistant(settings)
    pa.ingest([SEED_CORPUS])
    kept = SentenceVectors(tmp_path / "store" / SENTENCES_FILE, "onnx:all-MiniLM-L6-v2")
    papers = read_papers(SEED_CORPUS)
    all_texts = {t for p in papers for t in paper_sentences(p)}
    assert kept.count() == (len(all_texts) if when == "ingest" else 0)
    first = pa.ask(QUESTION)
    assert kept.count() > 0
    counter = CountingEmbedder(monkeypatch)
    later = PaperAssistant(settings)  # a new process, as far as caches go
    again = later.ask(QUESTION)
    assert [c.paper_id for c in again.citations] == [c.paper_id for c in first.citations]
    assert again.answer == first.answer
    assert counter.texts and set(counter.texts) <= {QUESTION}, counter.texts[:5]


def test_memory_keeps_nothing_on_disk(tmp_path):
    pa = PaperAssistant(make_settings(tmp_path / "store", sentence_vectors="memory"))
    pa.ingest([SEED_CORPUS])
    pa.ask(QUESTION)
    assert not (tmp_path / "store" / SENTENCES_FILE).exists()
