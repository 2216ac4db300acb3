"""Reliability under hostile input (issue 11): corpus readers, /v1 requests, upload names,
planted prompt injections and the exposure rules of `serve`.

Every test is offline and loopback-only; the fuzzing keeps `max_examples` small so the file
runs in about a minute on two cores.
"""
from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from assistant.corpus import CorpusError, read_papers

FUZZ = hsettings(max_examples=50, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ----------------------------------------------------------------------------- 1. readers

# One small valid file per format: hostile inputs are mutations of these, so the fuzzing
# reaches deep into each parser instead of failing at its first byte.
VALID = {
    "listing": ("seed.txt",
                "论文检索\n\nDeep Learning · Theory\n\nPuyu Wang, Junyu Zhou\n\n"
                "We analyze gradient descent for training two-layer networks and derive bounds.\n"),
    "jsonl": ("papers.jsonl",
              '{"id": "a1", "title": "Sparse graphs", "authors": ["Ann Lee"], "abstract": "We sparsify graphs."}\n'
              '{"id": "a2", "title": "Dense nets", "author": "Bo Chen and Cy Wu", "abstract": "Nets.", "year": 2020}\n'),
    "json": ("papers.json",
             '{"papers": [{"id": "a1", "title": "Sparse graphs", "authors": [{"name": "Ann Lee"}],'
             ' "abstract": "We sparsify graphs.", "doi": "10.1/x"},\n'
             ' {"id": "a2", "abstract": ["Two", "parts"], "date": "2021-01-02"}]}\n'),
    "csv": ("papers.csv",
            'id,title,authors,abstract,year\na1,"Sparse, graphs","Ann Lee; Bo Chen","We ""sparsify"" graphs.",2020\n'
            'a2,Dense,Cy Wu,"Multi\nline abstract",1999\n'),
    "tsv": ("papers.tsv",
            "id\ttitle\tabstract\na1\tSparse graphs\tWe sparsify graphs.\na2\tDense\tNets.\n"),
    "bibtex": ("refs.bib",
               '@article{lee2020, title={Sparse {Graphs}}, author={Lee, Ann and Chen, Bo and others},\n'
               '  abstract={We sparsify graphs with $x^2$ and 50% fewer edges.}, year={2020}, doi={10.1/x}}\n'
               '@misc{wu2021, title="Dense", abstract="Nets \\"o.", author="Cy Wu"}\n'),
}
FORMAT_OF = {"listing": "listing", "jsonl": "jsonl", "json": "json", "csv": "csv", "tsv": "csv",
             "bibtex": "bibtex"}


def _truncations(data: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(0, len(data)).map(lambda n: data[:n])


def _splices(data: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes written over a random stretch of a valid file."""
    return st.tuples(st.integers(0, len(data)), st.integers(0, 40), st.binary(max_size=40)).map(
        lambda t: data[:t[0]] + t[2] + data[t[0] + t[1]:])


def _encodings(text: str) -> st.SearchStrategy[bytes]:
    # latin-1 only where it can encode the text: the point is non-UTF-8 bytes, not this test failing
    latin = (text.replace("·", "-") + " café naïve").encode("latin-1", "replace")
    return st.sampled_from([text.encode("utf-16"), text.encode("utf-16-le"), latin,
                            text.encode("utf-32"), b"\xef\xbb\xbf" + text.encode("utf-8")])


def huge_record(fmt: str, n: int) -> bytes:
    """A valid record whose fields are huge: an abstract of n words, a title of n characters
    and an author list of n/50 names."""
    big, names = "word " * n, ", ".join(["Ann Lee"] * (n // 50 + 1))
    if fmt in ("jsonl", "json"):
        record = json.dumps({"title": big[:n], "authors": names, "abstract": big})
        return (record if fmt == "jsonl" else f"[{record}]").encode()
    if fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        return f"title{sep}authors{sep}abstract\nx{sep}\"{names}\"{sep}{big}\n".encode()
    if fmt == "bibtex":
        authors = names.replace(", ", " and ")
        return f"@article{{k, title={{{big[:n]}}}, author={{{authors}}}, abstract={{{big}}}}}".encode()
    return f"Area · Sub\n\n{names}\n\n{big}\n".encode()


def _huge_fields(fmt: str) -> st.SearchStrategy[bytes]:
    return st.sampled_from([20_000, 100_000]).map(lambda n: huge_record(fmt, n))


def _deep_json(fmt: str) -> st.SearchStrategy[bytes]:
    """Nesting from harmless to far beyond the decoder's recursion limit, in any field."""
    def build(args) -> bytes:
        depth, opener = args
        closer = "]" if opener == "[" else "}"
        inner = (opener if opener == "[" else '{"a":') * depth + "1" + closer * depth
        record = f'{{"abstract": "x", "title": {inner}}}'
        return (record if fmt == "jsonl" else f"[{record}]").encode()
    return st.tuples(st.sampled_from([10, 400, 600, 900, 1200, 5000, 100_000]),
                     st.sampled_from(["[", "{"])).map(build)


def _hostile(fmt: str) -> st.SearchStrategy[bytes]:
    name, text = VALID[fmt]
    data = text.encode("utf-8")
    options = [st.binary(max_size=300), _truncations(data), _splices(data), _encodings(text),
               _huge_fields(fmt)]
    if fmt in ("jsonl", "json"):
        options.append(_deep_json(fmt))
    return st.one_of(options)


def _read_all(path: Path, fmt: str, skip_bad: bool) -> list:
    errors: list = []
    return list(read_papers(path, fmt=fmt, skip_bad=skip_bad, errors=errors))


def check_reader(path: Path, fmt: str, data: bytes) -> None:
    """Reading `data` either works or raises CorpusError "path:line: reason", never anything else."""
    path.write_bytes(data)
    for skip_bad in (False, True):
        try:
            _read_all(path, fmt, skip_bad)
        except CorpusError as e:
            assert e.line is not None and e.line >= 1, str(e)
            assert str(e).startswith(f"{path}:{e.line}: "), str(e)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_valid_samples_read(fmt, tmp_path):
    """The fuzzing's seeds are themselves valid (otherwise the mutations prove little)."""
    name, text = VALID[fmt]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert len(list(read_papers(path, fmt=FORMAT_OF[fmt]))) >= 1


def _fuzz_test(fmt: str):
    folder = Path(tempfile.mkdtemp(prefix=f"fuzz-{fmt}-"))
    path = folder / VALID[fmt][0]

    @FUZZ
    @given(data=_hostile(fmt))
    def test(data):
        check_reader(path, FORMAT_OF[fmt], data)

    test.__name__ = f"test_reader_survives_hostile_{fmt}"
    return test


test_reader_survives_hostile_listing = _fuzz_test("listing")
test_reader_survives_hostile_jsonl = _fuzz_test("jsonl")
test_reader_survives_hostile_json = _fuzz_test("json")
test_reader_survives_hostile_csv = _fuzz_test("csv")
test_reader_survives_hostile_tsv = _fuzz_test("tsv")
test_reader_survives_hostile_bibtex = _fuzz_test("bibtex")


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_huge_fields_read_in_bounded_time(fmt, tmp_path):
    """A 1 MB abstract is read whole and fast: no parser may go quadratic on one field."""
    import time

    path = tmp_path / VALID[fmt][0]
    path.write_bytes(huge_record(fmt, 200_000))
    start = time.perf_counter()
    papers = list(read_papers(path, fmt=FORMAT_OF[fmt]))
    assert time.perf_counter() - start < 15
    assert len(papers) == 1 and len(papers[0].abstract) >= 900_000
