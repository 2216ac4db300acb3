"""assistant/conversation.py: what every front hands the library (turns, mode, filters)."""
from __future__ import annotations

import pytest

from assistant.conversation import (AnswerMemory, InputError, extend, history_messages,
                                    make_filters, parse_mode, turns_from_messages)
from assistant.types import Answer, Citation, Turn

CAUSALITY = "General Machine Learning · Causality"


def test_filters_from_what_the_fronts_collect():
    assert make_filters() is None
    assert make_filters([], [], None, None) is None
    assert make_filters([], [], "", " ") is None  # the page's empty year boxes
    assert make_filters(None, None, 0, None) is None  # 0: any year
    f = make_filters([CAUSALITY], "Josse; Kloft", "2020", None)  # the page: text boxes
    assert f.categories == [CAUSALITY] and f.authors == ["Josse", "Kloft"] and f.year_min == 2020
    f = make_filters(CAUSALITY, ["Josse"], None, 2024)  # the CLI and /v1: lists and numbers
    assert f.categories == [CAUSALITY] and f.authors == ["Josse"] and f.year_max == 2024
    with pytest.raises(InputError, match="a year must be a number"):
        make_filters([], [], "last year", None)


def test_modes():
    assert parse_mode(None) is None and parse_mode("auto") is None
    assert parse_mode("compare") == "compare"
    with pytest.raises(InputError, match="mode must be one of"):
        parse_mode("poem")


def test_messages_become_turns():
    memory = AnswerMemory()
    memory.remember("Recalled answer [1].", Answer(answer="Recalled answer [1].", intent="question",
                                                   presented=["p9"]))
    memory.remember("Nothing found.", Answer(answer="Nothing found.", intent="question",
                                             abstained=True, presented=["c1", "c2"]))
    turns = turns_from_messages([
        {"role": "system", "content": "ignored"},
        {"role": "user", "content": [{"type": "text", "text": "Which "}, {"type": "text", "text": "paper?"},
                                     {"type": "image_url", "image_url": "x"}], "paper_ids": ["u"]},
        {"role": "assistant", "content": "A [1].", "citations": [{"paper_id": "p1"}, {"x": 1}]},
        {"role": "assistant", "content": "B [1].", "paper_ids": ["p2"]},
        {"role": "assistant", "content": "Recalled answer  [1]."},
        {"role": "assistant", "content": "Nothing found."},
        Turn(role="user", content="as is"),
    ], recall=memory.recall)
    assert [(t.role, t.content, t.paper_ids) for t in turns] == [
        ("user", "Which paper?", []), ("assistant", "A [1].", ["p1"]),
        ("assistant", "B [1].", ["p2"]), ("assistant", "Recalled answer  [1].", ["p9"]),
        ("assistant", "Nothing found.", ["c1", "c2"]), ("user", "as is", [])]
    assert [t.refused for t in turns] == [False, False, False, False, True, False]
    with pytest.raises(InputError):
        turns_from_messages(["not a message"])


def test_a_conversation_grows_by_one_exchange():
    answer = Answer(answer="It is [1].", intent="question",
                    citations=[Citation(number=1, paper_id="p1", title="T", authors=[])])
    history = extend([], "What is it?", answer)
    assert history == [Turn(role="user", content="What is it?"),
                       Turn(role="assistant", content="It is [1].", paper_ids=["p1"])]
    assert history_messages(history)[1] == {"role": "assistant", "content": "It is [1].",
                                            "paper_ids": ["p1"]}
