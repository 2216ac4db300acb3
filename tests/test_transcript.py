"""assistant/transcript.py: a conversation saved, resumed and rendered as Markdown."""
from __future__ import annotations

import json

import pytest

from assistant.conversation import extend
from assistant.transcript import (Transcript, TranscriptError, check_transcript, load_transcript,
                                  save_transcript, transcript_markdown)
from assistant.types import Answer, Citation, Paper

QUESTIONS = ["Which paper studies backdoor attacks in federated learning?", "Who wrote it?",
             "Compare Top-W with Verbalized Sampling."]


@pytest.fixture(scope="module")
def talk(seed_assistant) -> Transcript:
    """Three real exchanges on the seed corpus: a question, a follow-up, a comparison."""
    transcript = Transcript()
    for question in QUESTIONS:
        transcript = transcript.add(question, seed_assistant.ask(question, transcript.turns()))
    return transcript


def test_the_history_is_what_the_fronts_build(seed_assistant, talk):
    history = []
    for exchange in talk.exchanges:
        history = extend(history, exchange.question, exchange.as_answer())
    assert talk.turns() == history
    assert talk.exchanges[1].citations[0].paper_id == talk.exchanges[0].presented[0]  # "it"


def test_markdown_holds_every_turn_and_every_cited_paper_once(talk):
    md = transcript_markdown(talk)
    body, references = md.split("## References")
    for exchange in talk.exchanges:
        assert exchange.question in body
    cited = {c.paper_id: c for e in talk.exchanges for c in e.citations}
    assert len(cited) == 3  # the backdoor paper (twice), Top-W and Verbalized Sampling
    lines = [line for line in references.splitlines() if line.strip()]
    assert len(lines) == len(cited)
    for number, line in enumerate(lines, 1):
        paper = next(c for pid, c in cited.items() if f"id: {pid}" in line)
        assert line.startswith(f"[{number}] ") and paper.authors[0] in line
    # an answer's own [1] and [2] become the conversation's numbers: the comparison's papers
    # come after the backdoor paper, which is [1] in both of the first two answers
    compare = body.split(QUESTIONS[2])[1]
    assert "Top-W [2]" in compare and "[3]" in compare and "[1]" not in compare


def test_references_carry_year_link_and_doi(talk):
    paper = Paper(paper_id="p-doi", title="Gradient Surgery for Routing", authors=["Ada Lovelace"],
                  abstract="We study routing collapse.", year=2024, doi="10.5555/gs.2024",
                  url="https://example.org/gs")
    answer = Answer(answer="Gradient surgery keeps routing balanced [1].", intent="question",
                    citations=[Citation.from_paper(1, paper, "We study routing collapse.")])
    md = transcript_markdown(talk.add("What is gradient surgery?", answer))
    line = next(x for x in md.splitlines() if "id: p-doi" in x)
    assert line.startswith("[4] Ada Lovelace (2024). *Gradient Surgery for Routing*.")
    assert "https://example.org/gs" in line and "https://doi.org/10.5555/gs.2024" in line
    assert "keeps routing balanced [4]." in md


def test_save_then_load_gives_the_same_conversation(talk, tmp_path):
    path = tmp_path / "talk.json"
    save_transcript(path, talk)
    assert load_transcript(path) == talk
    assert list(tmp_path.iterdir()) == [path]  # the temporary file was renamed, none is left
    assert transcript_markdown(Transcript()).startswith("# Conversation")


@pytest.mark.parametrize("text, said", [
    ('{"format": "paper-assistant conversation",\n "exchanges": [,]}', ":2:16: not valid JSON"),
    ("", ":1:1: not valid JSON"),
    ('{"exchanges": []}', 'no "format"'),
    ('{"format": "paper-assistant conversation", "version": 9, "exchanges": []}',
     "written by a newer paper-assistant (version 9"),
    ('{"format": "paper-assistant conversation", "exchanges": [{"question": "q", "answer": "a", '
     '"intent": "poem"}]}', "exchanges.0.intent"),
], ids=["bad-json", "empty", "no-format", "too-new", "bad-intent"])
def test_an_unreadable_file_says_where_and_stays_as_it_is(tmp_path, text, said):
    path = tmp_path / "talk.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load_transcript(path)
    assert str(err.value).startswith(str(path)) and said in str(err.value)
    assert path.read_text("utf-8") == text


def test_missing_or_binary_files_are_refused(tmp_path):
    with pytest.raises(TranscriptError, match="no such file"):
        load_transcript(tmp_path / "absent.json")
    binary = tmp_path / "talk.json"
    binary.write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(TranscriptError, match="not UTF-8 text"):
        load_transcript(binary)
    with pytest.raises(TranscriptError, match="not a paper-assistant conversation"):
        check_transcript(json.loads("[1, 2]"), "the browser's copy")
