"""Tests for assistant.corpus: every format, every kind of bad record, streaming, stable ids."""
from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path

import pytest

from assistant.corpus import CorpusError, RecordError, content_id, derive_title, detect_format, read_papers

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "assistant" / "data" / "seed_corpus.txt"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

ABSTRACT = "We study a problem. Our method works well on many benchmarks and is simple to use."


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def seed_papers():
    return list(read_papers(SEED))


def by_first_author(papers, name):
    return next(p for p in papers if p.authors and p.authors[0] == name)


# -- the seed listing ---------------------------------------------------------------------------

def test_seed_listing_has_twenty_papers(seed_papers):
    assert len(seed_papers) == 20
    assert detect_format(SEED) == "listing"


def test_seed_first_paper_authors_and_category(seed_papers):
    first = seed_papers[0]
    assert first.authors == ["Puyu Wang", "Junyu Zhou", "Philipp Liznerski", "Marius Kloft"]
    assert first.category == "Deep Learning · Theory"
    assert first.abstract.startswith("Kolmogorov--Arnold Networks (KANs) have recently emerged")
    assert first.source == "seed_corpus.txt:3"  # the category line, after the "论文检索" header


def test_seed_papers_without_category_line(seed_papers):
    assert by_first_author(seed_papers, "Sherry Yang").category is None
    uncategorised = {p.authors[0] for p in seed_papers if p.category is None}
    assert uncategorised == {"Sherry Yang", "Sahil Sidheekh", "Zhengwu Yang"}
    assert by_first_author(seed_papers, "Zhuofan Shi").category == "Deep Learning · Large Language Models"
    chem = by_first_author(seed_papers, "Martin Andrae")
    assert chem.category == "Applications · Chemistry, Physics, and Earth Sciences"


def test_seed_et_al_marker_is_dropped_and_names_kept(seed_papers):
    robotics = by_first_author(seed_papers, "Yu Qi")
    assert len(robotics.authors) == 10
    assert robotics.authors[-1] == "Shiji Xin"
    assert by_first_author(seed_papers, "Zhengwu Yang").authors[-1] == "Yanjun Ma"
    assert not any("等" in name for p in seed_papers for name in p.authors)


def test_seed_lowercase_and_joined_names_are_authors(seed_papers):
    assert by_first_author(seed_papers, "zhixuan ma").authors[1] == "Haichang Gao"
    assert "jianfengyang" in by_first_author(seed_papers, "Zhengwu Yang").authors


def test_seed_derived_titles(seed_papers):
    for paper in seed_papers:
        assert paper.title_is_derived
        assert 10 <= len(paper.title) <= 100, paper.title
        assert not paper.title.startswith("论文")
    labels = [p.title for p in seed_papers]
    assert len(set(labels)) == 20
    for name in ("Top-W", "Proteus", "DualGraph", "Meta Context Engineering", "Verbalized Sampling",
                 "BEAR", "DAISI", "SPATIA", "CTO-VPA", "LightYourFace-160K", "Voronoi tessellations"):
        assert any(name in label for label in labels), name


def test_seed_ids_are_content_hashes_and_stable(seed_papers):
    again = list(read_papers(SEED))
    assert [p.paper_id for p in again] == [p.paper_id for p in seed_papers]
    assert len({p.paper_id for p in seed_papers}) == 20
    first = seed_papers[0]
    # The listing has no titles: the hash covers the (empty) own title and the abstract, so
    # changing the label heuristic never changes ids.
    expected = "h" + hashlib.sha1(f"\n{first.abstract}".encode()).hexdigest()[:12]
    assert first.paper_id == expected == content_id("", first.abstract)


def test_seed_with_windows_line_endings(tmp_path):
    path = tmp_path / "seed_crlf.txt"
    path.write_bytes(SEED.read_bytes().replace(b"\n", b"\r\n"))
    papers = list(read_papers(path))
    assert len(papers) == 20
    assert papers[0].paper_id == content_id("", papers[0].abstract)


# -- derived titles -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "abstract, expected",
    [
        ("Graphs are everywhere. We propose FooNet, a message-passing network that scales to "
         "billions of edges. It works.", "FooNet: message-passing network"),
        ("Retrieval is hard. We introduce the Sparse Dense Retriever (SDR), which mixes both.",
         "Sparse Dense Retriever (SDR)"),
        ("Benchmarks saturate. To address this, we present a new benchmark called HardBench.",
         "HardBench: benchmark"),
    ],
)
def test_derived_title_names_the_introduced_method(abstract, expected):
    assert derive_title(abstract) == expected


def test_derived_title_falls_back_to_the_first_sentence():
    abstract = ("Conditional independence testing is central to causal inference and to many other "
                "statistical tasks in science and engineering. We propose a novel method to do it.")
    title = derive_title(abstract)
    assert title.startswith("Conditional independence testing is central")
    assert title.endswith("…") and len(title) <= 91
    assert derive_title("Short abstract.") == "Short abstract"


# -- listing structure --------------------------------------------------------------------------

LISTING_BAD = """Header

Area · Sub

Ann Lee, Bo Chen

First abstract that is long enough to be prose, and it says something about a method.

Area · Sub

Cy Dale, Di Eve

Area · Other

Fay Gu

Third abstract, fine as well, describing another method in more than a few words.
"""


def test_listing_author_line_followed_by_category_is_an_error(tmp_path):
    path = write(tmp_path / "bad.txt", LISTING_BAD)
    papers = read_papers(path)
    assert next(papers).authors == ["Ann Lee", "Bo Chen"]
    with pytest.raises(CorpusError) as err:
        next(papers)
    assert err.value.line == 9
    assert str(err.value).startswith(f"{path}:9: ")
    assert "line 11" in err.value.reason and "category line (line 13)" in err.value.reason


def test_listing_skip_bad_keeps_the_good_papers(tmp_path):
    errors: list[RecordError] = []
    papers = list(read_papers(write(tmp_path / "bad.txt", LISTING_BAD), skip_bad=True, errors=errors))
    assert [p.authors for p in papers] == [["Ann Lee", "Bo Chen"], ["Fay Gu"]]
    assert papers[1].category == "Area · Other"
    assert [e.line for e in errors] == [9]


def test_listing_author_line_without_abstract_at_end(tmp_path):
    path = write(tmp_path / "end.txt", "Ann Lee\n\n" + "An abstract of a paper. " * 10 + "\n\nBo Chen, Cy Dale\n")
    with pytest.raises(CorpusError, match=r"end\.txt:5: author line at line 5 has no abstract"):
        list(read_papers(path))


def test_listing_without_blank_lines_inside_a_paper(tmp_path):
    path = write(tmp_path / "dense.md",
                 "Vision · Detection\nAnn Lee, Bo Chen 等\nAn abstract that wraps\nonto a second line.\n")
    [paper] = read_papers(path)
    assert paper.category == "Vision · Detection"
    assert paper.authors == ["Ann Lee", "Bo Chen"]
    assert paper.abstract == "An abstract that wraps onto a second line."
    assert paper.source == "dense.md:1"


def test_listing_single_author_and_short_abstracts(tmp_path):
    path = write(tmp_path / "short.txt", "Ann Lee\n\nShort abstract.\n\nB. R. Vinay Kumar, Cy Dale\n\nAnother one here.\n")
    assert [(p.authors, p.abstract) for p in read_papers(path)] == [
        (["Ann Lee"], "Short abstract."), (["B. R. Vinay Kumar", "Cy Dale"], "Another one here.")]


# -- JSON Lines and JSON -----------------------------------------------------------------------

def test_jsonl_field_mapping(tmp_path):
    path = write_jsonl(tmp_path / "papers.jsonl", [{
        "paper_id": 17, "title": "  A   Title ", "summary": "Line one.\n\n  Line   two.",
        "authors": [{"name": "Ann Lee"}, {"given": "Bo", "family": "Chen"}],
        "categories": ["cs.LG", "stat.ML"], "published": "2021-03-04", "journal": "JMLR",
        "doi": "10.1000/xyz",
    }])
    [paper] = read_papers(path)
    assert paper.paper_id == "17"
    assert paper.title == "A Title" and not paper.title_is_derived
    assert paper.abstract == "Line one. Line two."
    assert paper.authors == ["Ann Lee", "Bo Chen"]
    assert paper.category == "cs.LG, stat.ML"
    assert paper.year == 2021 and paper.venue == "JMLR"
    assert paper.url == "https://doi.org/10.1000/xyz" and paper.doi == "10.1000/xyz"
    assert paper.source == "papers.jsonl:1"


@pytest.mark.parametrize("fields, url, doi", [
    ({"doi": "doi: 10.1145/3292500.3330701"}, "https://doi.org/10.1145/3292500.3330701",
     "10.1145/3292500.3330701"),
    ({"DOI": "https://dx.doi.org/10.1000/ABC."}, "https://doi.org/10.1000/ABC", "10.1000/ABC"),
    ({"url": "https://doi.org/10.48550%2FarXiv.1706.03762"},
     "https://doi.org/10.48550%2FarXiv.1706.03762", "10.48550/arXiv.1706.03762"),
    ({"url": "https://example.org/p", "doi": "10.1/x"}, "https://example.org/p", "10.1/x"),
    ({"doi": "ISBN 978-3-16-148410-0"}, None, None),  # not a DOI: no dead link either
    ({"url": "https://example.org/10.1/x"}, "https://example.org/10.1/x", None),
])
def test_doi_and_url_are_carried_separately(tmp_path, fields, url, doi):
    path = write_jsonl(tmp_path / "p.jsonl", [{"title": "T", "abstract": ABSTRACT, **fields}])
    [paper] = read_papers(path)
    assert (paper.url, paper.doi) == (url, doi)


def test_beir_corpus_format(tmp_path):
    path = write_jsonl(tmp_path / "corpus.jsonl", [
        {"_id": "4983", "title": "Microstructural development", "text": "Alterations of the architecture."},
        {"_id": "5836", "title": "", "text": "We introduce CellNet, a model of cells. It works."},
    ])
    first, second = read_papers(path)
    assert (first.paper_id, first.title, first.abstract) == ("4983", "Microstructural development",
                                                            "Alterations of the architecture.")
    assert second.title == "CellNet: model of cells" and second.title_is_derived


def test_arxiv_snapshot_format(tmp_path):
    path = write_jsonl(tmp_path / "arxiv-metadata.jsonl", [{
        "id": "0704.0001", "submitter": "A. Smith", "authors": "A. Smith, B. Jones and C. Wu",
        "title": "Calculation of\n  prompt diphoton production", "categories": "math.AP math.PR",
        "abstract": "  A fully differential calculation.\n", "update_date": "2024-01-02",
        "journal-ref": "Phys.Rev.D76:013009,2007",
    }])
    [paper] = read_papers(path)
    assert paper.paper_id == "0704.0001"
    assert paper.authors == ["A. Smith", "B. Jones", "C. Wu"]
    assert paper.title == "Calculation of prompt diphoton production"
    assert paper.category == "math.AP, math.PR"
    assert paper.year == 2024
    assert paper.abstract == "A fully differential calculation."


def test_author_strings_in_other_styles(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [
        {"id": "1", "abstract": "x y", "authors": "Smith, John and Doe, Jane"},
        {"id": "2", "abstract": "x y", "authors": "Ann Lee; Bo Chen; "},
        {"id": "3", "abstract": "x y", "authors": "Ann Lee, Bo Chen, and Cy Dale et al."},
        {"id": "4", "abstract": "x y", "authors": "Ann Lee, Bo Chen等"},
    ])
    assert [p.authors for p in read_papers(path)] == [
        ["John Smith", "Jane Doe"], ["Ann Lee", "Bo Chen"], ["Ann Lee", "Bo Chen", "Cy Dale"], ["Ann Lee", "Bo Chen"],
    ]


def test_json_array_and_wrapped_object(tmp_path):
    records = [{"id": "a", "title": "T1", "abstract": "First."}, {"id": "b", "title": "T2", "abstract": "Second."}]
    array = write(tmp_path / "array.json", json.dumps(records, indent=2))
    wrapped = write(tmp_path / "wrapped.json", json.dumps({"meta": {"n": 2}, "papers": records}, indent=2))
    for path in (array, wrapped):
        assert [p.paper_id for p in read_papers(path)] == ["a", "b"]
    assert [p.source for p in read_papers(array)] == ["array.json:2", "array.json:7"]


def test_json_bad_record_names_its_line(tmp_path):
    path = write(tmp_path / "w.json", '{"data": [\n  {"id": "a", "abstract": "ok"},\n  {"id": "b", "abstract": ""}\n]}')
    with pytest.raises(CorpusError, match=r"w\.json:3: empty abstract"):
        list(read_papers(path))


def test_invalid_json_document(tmp_path):
    path = write(tmp_path / "broken.json", '[\n  {"id": "a",\n  "abstract": }\n]')
    with pytest.raises(CorpusError, match=r"broken\.json:3: invalid JSON"):
        read_papers(path).__next__()


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "file.jsonl"
    write(path, '{"id": "1", "abstract": "a"}\n{"id": "2", "abstract": "b"}\n{"id": "3", "abstract": \n')
    with pytest.raises(CorpusError) as err:
        list(read_papers(path))
    assert "file.jsonl:3" in str(err.value)
    assert err.value.line == 3 and "invalid JSON" in err.value.reason


def test_jsonl_non_object_line(tmp_path):
    path = write(tmp_path / "x.jsonl", '[1, 2]\n')
    with pytest.raises(CorpusError, match="x.jsonl:1: expected a JSON object, got list"):
        list(read_papers(path))


# -- CSV ----------------------------------------------------------------------------------------

def test_csv_with_multiline_field_reports_physical_lines(tmp_path):
    path = write(tmp_path / "p.csv",
                 'ID,Title,Abstract,Authors,Year\n'
                 'p1,One,"First abstract,\nover two lines.","Ann Lee, Bo Chen",2020\n'
                 '\n'
                 'p2,Two,,Cy Dale,2021\n')
    errors: list[RecordError] = []
    papers = list(read_papers(path, skip_bad=True, errors=errors))
    assert [(p.paper_id, p.abstract, p.authors, p.year) for p in papers] == [
        ("p1", "First abstract, over two lines.", ["Ann Lee", "Bo Chen"], 2020)]
    assert papers[0].source == "p.csv:2"
    assert [(e.line, e.reason) for e in errors] == [(5, "empty abstract")]


def test_tsv(tmp_path):
    path = write(tmp_path / "p.tsv", "_id\ttext\tcategories\nx1\tSome abstract text.\tcs.CL cs.AI\n")
    [paper] = read_papers(path)
    assert (paper.paper_id, paper.category) == ("x1", "cs.CL, cs.AI")


def test_csv_without_abstract_column(tmp_path):
    path = write(tmp_path / "noabs.csv", "id,title,authors\n1,T,A\n")
    with pytest.raises(CorpusError) as err:
        read_papers(path, skip_bad=True).__next__()
    assert err.value.line == 1
    assert str(err.value).startswith(f"{path}:1: no abstract column")
    assert "'id', 'title', 'authors'" in err.value.reason


def test_csv_row_with_wrong_field_count(tmp_path):
    path = write(tmp_path / "short.csv", "id,abstract\n1,fine\n2\n")
    with pytest.raises(CorpusError, match=r"short\.csv:3: expected 2 fields"):
        list(read_papers(path))


# -- BibTeX -------------------------------------------------------------------------------------

BIB = r"""% exported references

@article{smith2020,
  title = {{BERT} Goes to {G}{\"o}ttingen},
  author = {Smith, John and Jane Doe and {Team Rocket}},
  journal = {Journal of Tests},
  year = {2020},
  doi = {10.1/abc},
  abstract = {We get 50% better results with \emph{less} data.}
}

@inproceedings{noabs2021,
  title = {No Abstract Here},
  author = {Ann Lee},
  booktitle = {Proc. Things},
  year = 2021
}

@misc{broken title = {x}}

@misc{good2022, title={Fine}, abstract={A fine abstract.}, url={https://example.org/p}}
"""


def test_bibtex_entries(tmp_path):
    path = write(tmp_path / "refs.bib", BIB)
    errors: list[RecordError] = []
    papers = list(read_papers(path, skip_bad=True, errors=errors))
    assert [p.paper_id for p in papers] == ["smith2020", "good2022"]
    paper = papers[0]
    assert paper.title == "BERT Goes to Göttingen"
    assert paper.authors == ["John Smith", "Jane Doe", "Team Rocket"]
    assert (paper.venue, paper.year, paper.url) == ("Journal of Tests", 2020, "https://doi.org/10.1/abc")
    assert paper.doi == "10.1/abc" and papers[1].doi is None
    assert paper.abstract == "We get 50% better results with less data."
    assert paper.source == "refs.bib:3"
    assert papers[1].url == "https://example.org/p"
    assert [e.line for e in errors] == [12, 19]
    assert errors[0].reason.startswith("entry noabs2021: empty abstract")
    assert errors[1].reason.startswith("could not parse BibTeX")


def test_bibtex_entry_without_abstract_names_the_key(tmp_path):
    path = write(tmp_path / "refs.bib", BIB)
    with pytest.raises(CorpusError) as err:
        list(read_papers(path))
    assert "noabs2021" in str(err.value) and err.value.line == 12


def test_bibtex_field_given_twice(tmp_path):
    path = write(tmp_path / "twice.bib", "@misc{k0, title={A}, title={B}, abstract={Text.}}\n")
    with pytest.raises(CorpusError, match=r"twice\.bib:1: entry k0: field given twice: title"):
        list(read_papers(path))


def test_bibtex_duplicate_keys(tmp_path):
    entry = "@misc{k1, title={T}, abstract={Same.}}\n"
    assert len(list(read_papers(write(tmp_path / "same.bib", entry + "\n" + entry)))) == 1
    path = write(tmp_path / "diff.bib", entry + "\n@misc{k1, title={T}, abstract={Other.}}\n")
    with pytest.raises(CorpusError, match=r"diff\.bib:3: entry k1: duplicate id k1 .*first at line 1"):
        list(read_papers(path))


# -- bad records common to all formats -----------------------------------------------------------

def test_non_utf8_bytes_in_jsonl(tmp_path):
    path = tmp_path / "latin1.jsonl"
    good = b'{"id": "1", "abstract": "fine"}\n'
    path.write_bytes(good + '{"id": "2", "abstract": "café"}\n'.encode("latin-1") + good.replace(b"1", b"3"))
    with pytest.raises(CorpusError) as err:
        list(read_papers(path))
    assert err.value.line == 2
    assert err.value.reason == f"not valid UTF-8 at byte {len(good) + 28}"
    errors: list[RecordError] = []
    assert [p.paper_id for p in read_papers(path, skip_bad=True, errors=errors)] == ["1", "3"]
    assert [e.line for e in errors] == [2]


def test_non_utf8_bytes_in_csv_and_listing_are_fatal(tmp_path):
    csv_path = tmp_path / "bad.csv"
    csv_path.write_bytes(b"id,abstract\n1,ok\n2,caf\xe9\n3,ok\n")
    with pytest.raises(CorpusError, match=r"bad\.csv:3: not valid UTF-8 at byte 22"):
        list(read_papers(csv_path, skip_bad=True))
    listing = tmp_path / "bad.txt"
    listing.write_bytes(b"Ann Lee\n\nAbstract \xff here.\n")
    with pytest.raises(CorpusError, match=r"bad\.txt:3: not valid UTF-8"):
        list(read_papers(listing))


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfid,abstract\n1,Caf\xc3\xa9 abstract.\n")
    [paper] = read_papers(path)
    assert (paper.paper_id, paper.abstract) == ("1", "Café abstract.")
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b'\xef\xbb\xbf{"id": "1", "abstract": "x"}\n')
    assert [p.paper_id for p in read_papers(jsonl)] == ["1"]


def test_empty_and_missing_abstract(tmp_path):
    path = write_jsonl(tmp_path / "e.jsonl", [{"id": "1", "abstract": "  \n "}, {"id": "2", "title": "T"}])
    errors: list[RecordError] = []
    assert list(read_papers(path, skip_bad=True, errors=errors)) == []
    assert [(e.line, e.reason) for e in errors] == [
        (1, "empty abstract"), (2, "empty abstract (no abstract/text/summary/body field)")]
    assert str(errors[0]) == f"{path}:1: empty abstract"


def test_missing_title_is_derived_and_id_is_a_content_hash(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [{"abstract": "We propose BarNet, a fast model. It is fast."}])
    [paper] = read_papers(path)
    assert paper.title == "BarNet: fast model" and paper.title_is_derived
    assert paper.paper_id == "h" + hashlib.sha1(b"\nWe propose BarNet, a fast model. It is fast.").hexdigest()[:12]
    [again] = read_papers(path)
    assert again.paper_id == paper.paper_id


def test_duplicate_ids(tmp_path):
    record = {"id": "7", "title": "T", "abstract": "Same text."}
    same = write_jsonl(tmp_path / "same.jsonl", [record, {"id": "8", "abstract": "x"}, record])
    assert [p.paper_id for p in read_papers(same)] == ["7", "8"]
    conflict = write_jsonl(tmp_path / "conflict.jsonl", [record, {**record, "abstract": "Other text."}])
    with pytest.raises(CorpusError) as err:
        list(read_papers(conflict))
    assert err.value.line == 2
    assert "duplicate id 7" in err.value.reason and "first at line 1" in err.value.reason


def test_skip_bad_collects_errors_and_yields_good_records(tmp_path):
    path = write(tmp_path / "mixed.jsonl",
                 '{"id": "1", "abstract": "one"}\n'
                 'not json\n'
                 '\n'
                 '{"id": "2", "abstract": ""}\n'
                 '{"id": "3", "abstract": "three"}\n')
    errors: list[RecordError] = []
    papers = list(read_papers(path, skip_bad=True, errors=errors))
    assert [p.paper_id for p in papers] == ["1", "3"]
    assert [(e.path, e.line) for e in errors] == [(str(path), 2), (str(path), 4)]
    assert all(isinstance(e, RecordError) for e in errors)


def test_read_papers_streams(tmp_path):
    path = write(tmp_path / "stream.jsonl", '{"id": "1", "abstract": "first"}\n' + '{"id": "x"\n')
    papers = read_papers(path)
    assert inspect.isgenerator(papers)
    assert next(papers).paper_id == "1"  # yielded before the broken line is even read
    with pytest.raises(CorpusError, match=r"stream\.jsonl:2"):
        next(papers)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        read_papers(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="unknown corpus format"):
        read_papers(write(tmp_path / "x.jsonl", ""), fmt="yaml")


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("a.ndjson", "", "jsonl"),
        ("a.TSV", "", "csv"),
        ("a.bib", "", "bibtex"),
        ("a.md", "", "listing"),
        ("data", '{"id": 1, "abstract": "x"}\n{"id": 2}\n', "jsonl"),
        ("data", '{\n "papers": []\n}\n', "json"),
        ("data", '  [{"id": 1}]', "json"),
        ("data", "% refs\n@article{k, title={x}}\n", "bibtex"),
        ("data", '"id","Abstract"\n1,x\n', "csv"),
        ("data", "论文检索\n\nAnn Lee\n\nAbstract.\n", "listing"),
    ],
)
def test_detect_format(tmp_path, name, content, expected):
    assert detect_format(write(tmp_path / name, content)) == expected


def test_format_override(tmp_path):
    path = write_jsonl(tmp_path / "papers.txt", [{"id": "1", "abstract": "x"}])
    assert [p.paper_id for p in read_papers(path, fmt="jsonl")] == ["1"]


# -- real data (shared, not part of the repository) -----------------------------------------------

ARXIV_MATH = SHARED_DATA / "arxiv_math" / "papers.jsonl"


@pytest.mark.skipif(not ARXIV_MATH.exists(), reason=f"shared evaluation data not present at {ARXIV_MATH}")
def test_real_arxiv_math_file_reads_cleanly():
    errors: list[RecordError] = []
    papers = list(read_papers(ARXIV_MATH, skip_bad=True, errors=errors))
    assert errors == []
    assert len(papers) == 3397
    assert len({p.paper_id for p in papers}) == 3397
    assert all(p.title and p.abstract and p.authors and p.year and not p.title_is_derived for p in papers)


@pytest.mark.parametrize("authors,cut", [("Yu Qi, Haibo Zhao 等", True), (["A B", "et al."], True),
                                         ("A. Smith, B. Jones et al.", True), ("A B, C D", False),
                                         (["A B", "C D"], False)])
def test_an_author_list_ending_in_et_al_is_marked_incomplete(authors, cut):
    from assistant.corpus.fields import paper_from_fields

    paper = paper_from_fields({"abstract": "An abstract.", "authors": authors}, "t:1")
    assert paper.authors_incomplete is cut and "et al." not in paper.authors and paper.authors
