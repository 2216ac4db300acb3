"""The `paper-assistant` command line: ingest, search, stats, ask (JSON shapes, stdin batches, routing)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assistant.cli import app
from assistant.index import Store
from conftest import make_settings, write_jsonl

PAPER_ASSISTANT = Path(sys.executable).parent / "paper-assistant"
HIT_KEYS = {"paper_id", "title", "authors", "category", "year", "score", "snippet", "url", "doi"}
CITATION_KEYS = {"paper_id", "title", "authors", "category", "year"}
BACKDOOR_Q = "Which paper studies backdoor attacks in federated learning?"

TINY = [
    {"id": "c-fl", "title": "Backdoors in federated learning", "authors": ["Alice Zhang"],
     "abstract": "Federated learning is vulnerable to backdoor attacks by malicious clients.",
     "category": "Social Aspects · Security", "year": 2021},
    {"id": "c-graph", "title": "Graph networks for molecules", "authors": ["Carol Diaz"],
     "abstract": "Graph neural networks predict molecular properties for chemistry.",
     "category": "Applications · Chemistry", "year": 2023},
    {"id": "c-robot", "title": "Tactile robot grasping", "authors": ["Dan Evans"],
     "abstract": "Robots learn to grasp objects from tactile sensing.",
     "category": "Applications · Robotics", "year": 2019},
]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run from an empty folder, with no PAPER_ASSISTANT_* settings from the caller."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("PAPER_ASSISTANT_"):
            monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture(scope="module")
def seed_store(seed_assistant) -> str:
    return str(seed_assistant.settings.store_dir)


def run(runner, *args, input=None):
    result = runner.invoke(app, [str(a) for a in args], input=input)
    return result


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def one_line(text: str) -> str:
    """Rich wraps long lines at the console width; undo it to look for a path in a message."""
    return "".join(text.splitlines())


def squash(text: str) -> str:
    """Without any whitespace: compares messages however rich wrapped them."""
    return "".join(text.split())


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def bad_jsonl(folder: Path) -> Path:
    path = folder / "bad.jsonl"
    path.write_text(json.dumps(TINY[0]) + "\n" + json.dumps(TINY[1]) + "\n" + '{"id": "x", "abstract": \n',
                    encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- ingest

def test_ingest_prints_counts(runner, in_tmp):
    path = write_jsonl(in_tmp / "tiny.jsonl", TINY)
    store = in_tmp / "store"
    result = ok(run(runner, "ingest", "--store", store, "--quiet", path))
    text = squash(result.stderr)
    assert squash("tiny.jsonl: 3 papers (3 new, 0 updated, 0 unchanged; 3 chunks embedded)") in text
    assert squash(f"store {store}: 3 papers, 3 chunks") in text
    again = ok(run(runner, "ingest", "--store", store, "--quiet", path))
    assert squash("3 papers (0 new, 0 updated, 3 unchanged; 0 chunks embedded)") in squash(again.stderr)
    # with the progress bar (the default) it still works and reports the same counts
    shown = ok(run(runner, "ingest", "--store", store, path))
    assert squash("3 unchanged; 0 chunks embedded") in squash(shown.stderr)


def test_bad_file_exits_2_with_file_and_line(runner, in_tmp):
    bad = bad_jsonl(in_tmp)
    store = in_tmp / "store"
    result = run(runner, "ingest", "--store", store, "--quiet", bad)
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an uncaught error
    assert f"{bad.name}:3:" in one_line(result.output)
    assert "Traceback" not in result.output
    assert Store(make_settings(store)).stats()["papers"] == 0  # lines 1-2 were not written
    # --skip-bad loads the good ones and lists the bad one
    skipped = ok(run(runner, "ingest", "--store", store, "--quiet", "--skip-bad", bad))
    text = squash(skipped.stderr)
    assert "2papers(2new" in text and "skipped" in text and f"{bad.name}:3:" in text
    assert Store(make_settings(store)).stats()["papers"] == 2
    # a missing file is a clean error too
    missing = run(runner, "ingest", "--store", store, "--quiet", in_tmp / "nope.jsonl")
    assert missing.exit_code == 2 and "nosuchfile" in squash(missing.output)


def test_console_script_bad_file_smoke(in_tmp):
    """The installed `paper-assistant` script: exit code 2, file:line, no traceback."""
    bad = bad_jsonl(in_tmp)
    proc = subprocess.run([str(PAPER_ASSISTANT), "ingest", "--store", str(in_tmp / "store"), "--quiet",
                           str(bad)], capture_output=True, text=True, timeout=120, cwd=in_tmp,
                          env={**os.environ, "COLUMNS": "400"})
    assert proc.returncode == 2, proc.stderr
    assert f"{bad}:3:" in proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert not (in_tmp / "vectorstore").exists()


# ----------------------------------------------------------------------------- search

def test_search_json_shape(runner, seed_store):
    result = ok(run(runner, "search", "--store", seed_store, "--json", "backdoor attacks in federated learning"))
    data = json.loads(result.stdout)
    assert set(data) == {"results"}
    assert 1 <= len(data["results"]) <= 10
    for r in data["results"]:
        assert set(r) == HIT_KEYS
        assert isinstance(r["paper_id"], str) and isinstance(r["title"], str)
        assert isinstance(r["authors"], list) and all(isinstance(a, str) for a in r["authors"])
        assert r["category"] is None or isinstance(r["category"], str)
        assert r["year"] is None or isinstance(r["year"], int)
        assert isinstance(r["score"], float) and isinstance(r["snippet"], str) and r["snippet"]
    assert data["results"][0]["authors"][0] == "zhixuan ma"
    assert len({r["paper_id"] for r in data["results"]}) == len(data["results"])


def test_search_k_and_category(runner, seed_store):
    data = json.loads(ok(run(runner, "search", "--store", seed_store, "--json", "-k", 3, "learning")).stdout)
    assert 1 <= len(data["results"]) <= 3
    data = json.loads(ok(run(runner, "search", "--store", seed_store, "--json", "-k", 20,
                             "--category", "General Machine Learning", "backdoor attacks")).stdout)
    assert data["results"]
    assert {r["category"] for r in data["results"]} == {"General Machine Learning · Causality"}
    data = json.loads(ok(run(runner, "search", "--store", seed_store, "--json",
                             "--category", "Social Aspects · Security",
                             "--category", "Applications · Robotics", "-k", 20, "learning")).stdout)
    assert {r["category"] for r in data["results"]} == {"Social Aspects · Security", "Applications · Robotics"}
    data = json.loads(ok(run(runner, "search", "--store", seed_store, "--json", "--author", "natarajan",
                             "learning")).stdout)
    assert [("Sriraam Natarajan" in r["authors"]) for r in data["results"]] == [True]
    data = json.loads(ok(run(runner, "search", "--store", seed_store, "--json", "--category", "Astrophysics",
                             "learning")).stdout)
    assert data == {"results": []}


def test_search_json_lines_from_stdin(runner, seed_store):
    queries = [{"id": "q1", "query": "backdoor attacks in federated learning"},
               {"id": 2, "query": "Sriraam Natarajan"},
               {"id": "q3", "query": "causal inference"}]
    stdin = "\n".join(json.dumps(q) for q in queries) + "\n\n"
    result = ok(run(runner, "search", "--store", seed_store, "--json", "-k", 3, input=stdin))
    lines = json_lines(result.stdout)
    assert [line["id"] for line in lines] == ["q1", 2, "q3"]
    for line in lines:
        assert set(line) == {"id", "results"}
        assert 1 <= len(line["results"]) <= 3
        assert all(set(r) == HIT_KEYS for r in line["results"])
    assert lines[0]["results"][0]["authors"][0] == "zhixuan ma"
    assert "Sriraam Natarajan" in lines[1]["results"][0]["authors"]


def test_search_json_carries_the_doi_and_url_as_citations_do(runner, in_tmp):
    records = [{**TINY[0], "doi": "doi:10.5555/fl.2021"}, {**TINY[1], "url": "https://example.org/g"},
               TINY[2]]
    store = in_tmp / "store"
    ok(run(runner, "ingest", "--store", store, "--quiet", write_jsonl(in_tmp / "t.jsonl", records)))
    found = json.loads(ok(run(runner, "search", "--store", store, "--json", "learning")).stdout)
    links = {r["paper_id"]: (r["doi"], r["url"]) for r in found["results"]}
    assert links == {"c-fl": ("10.5555/fl.2021", "https://doi.org/10.5555/fl.2021"),
                     "c-graph": (None, "https://example.org/g"), "c-robot": (None, None)}
    # the same fields as the citation of that paper
    answer = json.loads(ok(run(runner, "ask", "--store", store, "--json", "--backend", "none",
                               BACKDOOR_Q)).stdout)
    [cited] = [c for c in answer["citations"] if c["paper_id"] == "c-fl"]
    assert (cited["doi"], cited["url"]) == links["c-fl"]


def test_search_without_query_needs_json(runner, seed_store):
    result = run(runner, "search", "--store", seed_store, input="")
    assert result.exit_code == 2


def test_search_human_output(runner, seed_store):
    result = ok(run(runner, "search", "--store", seed_store, "-k", 2, "backdoor attacks in federated learning"))
    assert "1. Coupled Trigger Optimization" in result.stdout
    assert "zhixuan ma" in result.stdout


# ----------------------------------------------------------------------------- stats

def test_stats(runner, seed_store):
    text = ok(run(runner, "stats", "--store", seed_store)).stdout
    rows = {line.split(None, 1)[0]: line.split(None, 1)[1].strip() for line in text.splitlines() if line.strip()}
    assert rows["papers"] == "20"
    assert int(rows["chunks"]) > 20
    assert rows["embed_model"] == "onnx:all-MiniLM-L6-v2"
    assert rows["store"] == seed_store
    data = json.loads(ok(run(runner, "stats", "--store", seed_store, "--json")).stdout)
    assert data["papers"] == 20 and data["store"] == seed_store and data["chroma"] == "embedded"
    assert data["dim"] == 384


# ----------------------------------------------------------------------------- ask

def test_ask_json_shape(runner, seed_store):
    result = ok(run(runner, "ask", "--store", seed_store, "--json", "--backend", "none", BACKDOOR_Q))
    data = json.loads(result.stdout)
    assert {"answer", "intent", "citations", "retrieved"} <= set(data)
    assert data["intent"] == "question" and data["backend"] == "none"
    assert isinstance(data["answer"], str) and data["answer"]
    assert data["citations"] and data["citations"][0]["authors"][0] == "zhixuan ma"
    for c in data["citations"]:
        assert CITATION_KEYS <= set(c)
        assert f"[{c['number']}]" in data["answer"]
    assert all(set(r) == HIT_KEYS for r in data["retrieved"])
    assert {c["paper_id"] for c in data["citations"]} <= {r["paper_id"] for r in data["retrieved"]}


def test_ask_json_citations_carry_the_doi_and_url_from_the_corpus(runner, in_tmp):
    records = [{**TINY[0], "doi": "doi:10.5555/fl.2021"}, {**TINY[1], "url": "https://example.org/g"}]
    store = in_tmp / "store"
    ok(run(runner, "ingest", "--store", store, "--quiet", write_jsonl(in_tmp / "t.jsonl", records)))
    result = ok(run(runner, "ask", "--store", store, "--json", "--backend", "none", BACKDOOR_Q))
    [cited] = [c for c in json.loads(result.stdout)["citations"] if c["paper_id"] == "c-fl"]
    assert cited["doi"] == "10.5555/fl.2021" and cited["url"] == "https://doi.org/10.5555/fl.2021"


def test_ask_conversations_from_stdin(runner, seed_store):
    convs = [
        {"id": "c1", "turns": [BACKDOOR_Q, "Who wrote it?"]},
        {"id": "c2", "turns": ["Which paper is about quantum error correction?"]},
        {"id": "c3", "turns": [BACKDOOR_Q]},
    ]
    stdin = "".join(json.dumps(c) + "\n" for c in convs)
    result = ok(run(runner, "ask", "--store", seed_store, "--json", "--backend", "none", input=stdin))
    lines = json_lines(result.stdout)
    assert [line["id"] for line in lines] == ["c1", "c2", "c3"]
    for line in lines:
        assert {"id", "answer", "intent", "citations", "retrieved"} <= set(line)
    follow_up, out_of_corpus, single = lines
    # the last turn is answered, with the first as its context
    assert [c["authors"][0] for c in follow_up["citations"]] == ["zhixuan ma"]
    assert "Haichang Gao" in follow_up["answer"]
    assert out_of_corpus["citations"] == []
    assert single["citations"][0]["authors"][0] == "zhixuan ma"


def test_ask_turns_as_arguments(runner, seed_store):
    result = ok(run(runner, "ask", "--store", seed_store, "--json", "--backend", "none", BACKDOOR_Q,
                    "Who wrote it?"))
    first, second = json_lines(result.stdout)
    assert first["citations"][0]["authors"][0] == "zhixuan ma"
    assert "Haichang Gao" in second["answer"]


@pytest.mark.parametrize("question", ["", "   \t "], ids=["empty", "whitespace"])
def test_ask_an_empty_question_exits_2_saying_why(runner, seed_store, question):
    for args in ([question], ["--json", question], [BACKDOOR_Q, question]):
        result = run(runner, "ask", "--store", seed_store, "--backend", "none", *args)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
        assert "error: " in result.stderr and "the message is empty" in result.stderr
        assert result.stdout == ""  # nothing is answered, not even the good first turn
    assert squash("turn 2: the message is empty") in squash(result.stderr)  # which turn


def test_ask_a_question_over_the_limit_exits_2_naming_the_setting(runner, seed_store, monkeypatch):
    monkeypatch.setenv("PAPER_ASSISTANT_MAX_MESSAGE_CHARS", "40")
    question = "Which paper studies backdoor attacks in federated learning?"
    result = run(runner, "ask", "--store", seed_store, "--backend", "none", "--json", question)
    assert result.exit_code == 2 and result.stdout == ""
    assert squash(f"message is {len(question)} characters; the limit is 40 characters "
                  f"(setting `max_message_chars`") in squash(result.stderr)


def test_ask_jsonl_bad_items_get_an_error_and_the_others_an_answer(runner, seed_store):
    lines = [json.dumps({"id": "good-1", "turns": [BACKDOOR_Q]}),
             json.dumps({"id": "empty-last", "turns": [BACKDOOR_Q, "  "]}),
             "{not json",
             json.dumps({"id": "no-turns", "question": BACKDOOR_Q}),
             json.dumps({"id": "not-text", "turns": [BACKDOOR_Q, 42]}),
             json.dumps({"id": "good-2", "turns": [BACKDOOR_Q, "Who wrote it?"]})]
    result = run(runner, "ask", "--store", seed_store, "--json", "--backend", "none",
                 input="\n".join(lines) + "\n")
    assert result.exit_code == 2, result.output  # some input was bad, and the stderr says so
    assert "4 of 6 conversations had bad input" in one_line(result.stderr)
    out = json_lines(result.stdout)
    assert [line["id"] for line in out] == ["good-1", "empty-last", None, "no-turns", "not-text",
                                            "good-2"]
    errors = {line["id"]: line["error"] for line in out if "error" in line}
    assert errors["empty-last"] == {"message": "turn 2: the message is empty: write a question",
                                    "code": "empty_message"}
    assert errors[None]["code"] == "invalid_json" and "line 3" in errors[None]["message"]
    assert errors["no-turns"]["code"] == "invalid_item"
    assert errors["not-text"] == {"message": "turn 2: a turn must be text", "code": "invalid_item"}
    good_1, good_2 = out[0], out[5]
    assert good_1["citations"][0]["authors"][0] == "zhixuan ma"
    assert "Haichang Gao" in good_2["answer"]


def test_ask_out_of_corpus_cites_nothing(runner, seed_store):
    result = ok(run(runner, "ask", "--store", seed_store, "--json", "--preset", "extractive",
                    "Which paper is about quantum error correction?"))
    data = json.loads(result.stdout)
    assert data["citations"] == []
    assert data["abstained"] is True


# ----------------------------------------------------------------------------- routing

def test_store_option_routes_to_that_folder(runner, in_tmp, monkeypatch):
    path = write_jsonl(in_tmp / "tiny.jsonl", TINY)
    a, b = in_tmp / "a", in_tmp / "b"
    ok(run(runner, "ingest", "--quiet", "--store", a, path))
    assert (a / "chroma.sqlite3").exists() and (a / "manifest.json").exists()
    assert not (in_tmp / "vectorstore").exists()  # nothing went to the default store
    assert json.loads(ok(run(runner, "stats", "--json", "--store", a)).stdout)["papers"] == 3
    assert json.loads(ok(run(runner, "stats", "--json", "--store", b)).stdout)["papers"] == 0
    hits = json.loads(ok(run(runner, "search", "--json", "--store", a, "molecules")).stdout)["results"]
    assert hits[0]["paper_id"] == "c-graph"
    assert json.loads(ok(run(runner, "search", "--json", "--store", b, "molecules")).stdout) == {"results": []}
    # the environment routes too, and --store beats it
    monkeypatch.setenv("PAPER_ASSISTANT_STORE_DIR", str(a))
    assert json.loads(ok(run(runner, "stats", "--json")).stdout)["store"] == str(a)
    assert json.loads(ok(run(runner, "stats", "--json", "--store", b)).stdout)["store"] == str(b)


def test_chroma_url_routes_to_the_server(runner, in_tmp, chroma_server, monkeypatch):
    monkeypatch.setenv("PAPER_ASSISTANT_COLLECTION", "cli-test")
    path = write_jsonl(in_tmp / "tiny.jsonl", TINY)
    result = ok(run(runner, "ingest", "--quiet", "--chroma-url", chroma_server, "--store", in_tmp / "local", path))
    assert "3papers(3new" in squash(result.stderr)
    assert not (in_tmp / "local" / "chroma.sqlite3").exists()  # the vectors live on the server
    stats = json.loads(ok(run(runner, "stats", "--json", "--chroma-url", chroma_server)).stdout)
    assert stats["chroma"] == "server" and stats["store"] == chroma_server
    assert stats["papers"] == 3 and stats["collection"] == "cli-test"
    hits = json.loads(ok(run(runner, "search", "--json", "--chroma-url", chroma_server,
                             "tactile grasping")).stdout)["results"]
    assert hits[0]["paper_id"] == "c-robot"
    # the embedded store in the same folder is a different store
    assert json.loads(ok(run(runner, "stats", "--json", "--store", in_tmp / "local")).stdout)["papers"] == 0
    # an unreachable server is a clean error
    bad = run(runner, "stats", "--json", "--chroma-url", "http://127.0.0.1:9")
    assert bad.exit_code == 2 and isinstance(bad.exception, SystemExit)
    assert "cannotreachtheChromaserverathttp://127.0.0.1:9" in squash(bad.output)


# ----------------------------------------------------------------------------- store mismatch

def mismatched_store(folder: Path) -> Path:
    store = Store(make_settings(folder))
    store._set_meta(embed_model="onnx:some-older-model")  # as if built with another model
    return folder


def test_store_mismatch_is_a_clean_error(runner, in_tmp):
    store = mismatched_store(in_tmp / "old")
    result = run(runner, "stats", "--store", store)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    text = squash(result.output)
    assert "onnx:some-older-model" in text and "--rebuild" in text


def test_ingest_rebuild_recovers_a_mismatched_store(runner, in_tmp):
    store = mismatched_store(in_tmp / "old")
    path = write_jsonl(in_tmp / "tiny.jsonl", TINY)
    result = run(runner, "ingest", "--quiet", "--rebuild", "--store", store, path)
    assert result.exit_code == 0, result.output
    stats = json.loads(ok(run(runner, "stats", "--json", "--store", store)).stdout)
    assert stats["papers"] == 3 and stats["embed_model"] == "onnx:all-MiniLM-L6-v2"


def test_chat_is_a_conversation(runner, seed_store):
    """`chat` keeps the conversation: the follow-up resolves to the first answer's paper."""
    result = runner.invoke(app, ["chat", "--store", str(seed_store), "--backend", "none"],
                           input="Which paper is about Kolmogorov-Arnold Networks?\nWho wrote it?\n\n")
    assert result.exit_code == 0, result.output
    assert "Marius Kloft" in result.output  # the authors of the KAN paper, from the follow-up
    assert result.output.count("References") == 2


# ----------------------------------------------------------------------------- chat --save/--resume

KAN_Q = "Which paper is about Kolmogorov-Arnold Networks?"


def test_chat_saves_then_resumes_the_conversation(runner, seed_store, tmp_path):
    """`chat --save` writes the conversation after each answer; `chat --resume` continues it:
    the follow-up refers to the resumed answer's paper, and `--markdown` exports every turn."""
    saved, md = tmp_path / "conversation.json", tmp_path / "conversation.md"
    ok(run(runner, "chat", "--store", seed_store, "--backend", "none", "--save", saved,
           input=f"{KAN_Q}\n\n"))
    data = json.loads(saved.read_text("utf-8"))
    assert data["format"] == "paper-assistant conversation" and data["version"] == 1
    [first] = data["exchanges"]
    kan = first["citations"][0]
    assert first["question"] == KAN_Q and "Marius Kloft" in kan["authors"]
    assert first["presented"][0] == kan["paper_id"]

    result = ok(run(runner, "chat", "--store", seed_store, "--backend", "none", "--resume", saved,
                    "--save", saved, "--markdown", md, input="Who wrote it?\n\n"))
    assert squash(f"resumed 1 exchange from {saved}") in squash(result.output)
    assert "Marius Kloft" in result.output  # "it" is the resumed answer's paper
    first_again, second = json.loads(saved.read_text("utf-8"))["exchanges"]
    assert first_again == first  # the resumed exchange is kept as it was
    assert second["question"] == "Who wrote it?"
    assert [c["paper_id"] for c in second["citations"]] == [kan["paper_id"]]
    text = md.read_text("utf-8")
    assert KAN_Q in text and "Who wrote it?" in text and "## References" in text
    assert f"id: {kan['paper_id']}" in text and "Marius Kloft" in text


CORRUPT = '{"format": "paper-assistant conversation",\n "version": 1,\n "exchanges": [oops]\n}\n'


@pytest.mark.parametrize("content, where, said", [
    (CORRUPT, ":3:16:", "not valid JSON"),  # the line and column of "oops"
    ('[{"question": "a list, not a conversation"}]', ":", "not a paper-assistant conversation"),
    ('{"format": "paper-assistant conversation", "exchanges": [{"answer": "no question"}]}',
     ":", "exchanges.0.question"),
], ids=["bad-json", "not-a-conversation", "missing-field"])
def test_chat_resume_refuses_a_bad_file_and_leaves_it_as_it_is(runner, seed_store, tmp_path,
                                                                content, where, said):
    path = tmp_path / "conversation.json"
    path.write_text(content, encoding="utf-8")
    result = run(runner, "chat", "--store", seed_store, "--backend", "none", "--resume", path,
                 "--save", path, input=f"{KAN_Q}\n\n")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert squash(f"error: {path}{where}") in squash(result.stderr)
    assert squash(said) in squash(result.stderr)
    assert path.read_text("utf-8") == content  # nothing asked, nothing written
    assert list(tmp_path.iterdir()) == [path]


def test_chat_save_never_overwrites_a_file_it_did_not_read(runner, seed_store, tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"mine": true}\n', encoding="utf-8")
    result = run(runner, "chat", "--store", seed_store, "--backend", "none", "--save", path,
                 input=f"{KAN_Q}\n\n")
    assert result.exit_code == 2, result.output
    assert squash(f"{path} already exists") in squash(result.stderr)
    assert path.read_text("utf-8") == '{"mine": true}\n'
    missing = run(runner, "chat", "--store", seed_store, "--resume", tmp_path / "none.json")
    assert missing.exit_code == 2 and squash("none.json: no such file") in squash(missing.stderr)
