"""Reference-manager exports: RIS (Zotero, Mendeley, EndNote) and CSL-JSON (Zotero, Mendeley)."""
from __future__ import annotations

from pathlib import Path

import pytest

from assistant.corpus import CorpusError, RecordError, detect_format, read_papers

DATA = Path(__file__).resolve().parent / "data"
RIS = DATA / "refs.ris"
CSL = DATA / "refs_csl.json"
ABSTRACT = "We study a problem. Our method works well on many benchmarks."


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def ris(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# -- RIS ------------------------------------------------------------------------------------------

def test_ris_fields_map_to_paper():
    fl, grasp = read_papers(RIS)
    assert detect_format(RIS) == "ris"
    assert fl.title == "Backdoor attacks on federated learning" and not fl.title_is_derived
    assert fl.authors == ["Alice Zhang", "John A. Doe Jr.", "OpenAI Research"]
    # the wrapped second line of AB is part of the abstract
    assert fl.abstract.endswith("a backdoor that survives aggregation.")
    assert fl.year == 2021
    assert fl.doi == "10.1234/fl.2021.7"
    assert fl.url == "https://example.org/fl-backdoors"
    assert fl.category == "federated learning, security"
    assert fl.venue == "Journal of Robust Learning"
    assert fl.source == "refs.ris:1"
    assert (grasp.title, grasp.authors, grasp.year) == ("Tactile grasping with graph networks", ["Dan Evans"], 2019)
    assert grasp.abstract.startswith("Robots learn to grasp") and grasp.source == "refs.ris:16"


def test_ris_date_tag_alone_gives_the_year(tmp_path):
    path = write(tmp_path / "a.ris", ris("TY  - JOUR", "TI  - T", f"AB  - {ABSTRACT}", "DA  - 2018/02/01", "ER  - "))
    assert [p.year for p in read_papers(path)] == [2018]


def test_ris_from_endnote_as_txt_is_sniffed(tmp_path):
    path = write(tmp_path / "endnote.txt", RIS.read_text())
    assert detect_format(path) == "ris"
    assert len(list(read_papers(path))) == 2


@pytest.mark.parametrize("text, line, reason", [
    (ris("TY  - JOUR", f"AB  - {ABSTRACT}"), 1, "record not closed: no 'ER  -' line before the end"),
    (ris("TY  - JOUR", f"AB  - {ABSTRACT}", "TY  - JOUR", f"AB  - {ABSTRACT}", "ER  -"), 1,
     "no 'ER  -' line before the next 'TY' at line 3"),
    (ris("AU  - Smith, J"), 1, "'AU' outside a record"),
    (ris("garbage here", "TY  - JOUR"), 1, "not an RIS line"),
    (ris("TY  - JOUR", "TI  - No abstract", "ER  - "), 1, "empty abstract"),
])
def test_ris_malformed_names_file_and_line(tmp_path, text, line, reason):
    path = write(tmp_path / "bad.ris", text)
    with pytest.raises(CorpusError) as info:
        list(read_papers(path))
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert reason in str(info.value)


def test_ris_skip_bad_keeps_the_good_records(tmp_path):
    text = ris("ER  -", "TY  - JOUR", "TI  - Good", f"AB  - {ABSTRACT}", "ER  -")
    errors: list[RecordError] = []
    papers = list(read_papers(write(tmp_path / "x.ris", text), skip_bad=True, errors=errors))
    assert [p.title for p in papers] == ["Good"]
    assert [(e.line, e.reason.split(" ")[0]) for e in errors] == [(1, "'ER'")]


# -- CSL-JSON -------------------------------------------------------------------------------------

def test_csl_json_fields_map_to_paper():
    causal, sparse = read_papers(CSL)
    assert detect_format(CSL) == "csljson"
    assert causal.paper_id == "http://zotero.org/users/local/x1/items/ABCD1234"
    assert causal.authors == ["Ann Lee", "Jan van den Berg", "The Causal Consortium"]
    assert causal.year == 2024
    assert causal.doi == "10.5555/causal.2024.1" and causal.url == "https://example.org/causal-lm"
    assert causal.venue == "Transactions on Causal Learning"
    assert causal.category == "causality, language models"
    assert causal.abstract.startswith("We use language models as priors")
    assert causal.source == "refs_csl.json:2"
    assert (sparse.paper_id, sparse.authors, sparse.year) == ("kim2020", ["Soo Kim"], 2020)


def test_plain_json_is_not_taken_for_csl(tmp_path):
    path = write(tmp_path / "plain.json", '[{"id": "1", "title": "T", "abstract": "x y z"}]')
    assert detect_format(path) == "json"


@pytest.mark.parametrize("item, reason", [
    ('{"id": "a", "abstract": "x", "issued": {"date-parts": 2020}}', "'issued.date-parts' must be"),
    ('{"id": "a", "abstract": "x", "issued": {"date-parts": [[2020]]}, "author": "Smith"}', "'author' must be a list"),
])
def test_csl_malformed_item_names_file_and_line(tmp_path, item, reason):
    path = write(tmp_path / "bad.json", '[\n  {"id": "ok", "abstract": "fine", "issued": {"date-parts": [[2020]]}},\n  '
                 + item + "\n]\n")
    assert detect_format(path) == "csljson"
    with pytest.raises(CorpusError) as info:
        list(read_papers(path))
    assert str(info.value).startswith(f"{path}:3: item a: ")
    assert reason in str(info.value)


def test_csl_invalid_json_names_the_line(tmp_path):
    path = write(tmp_path / "bad.json", '[\n {"issued": {"date-parts": [[2020]]},\n "title": }\n]')
    with pytest.raises(CorpusError, match=r"bad\.json:3: invalid JSON"):
        list(read_papers(path))
