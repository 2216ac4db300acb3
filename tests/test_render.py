"""How answers look: assistant/render.py (shared by the fronts), the page's HTML
(assistant/ui/render.py), the BibTeX export (assistant/export.py) and the citation markers
(assistant/answer/markers.py)."""
from __future__ import annotations

from assistant.answer.markers import MARKER_RE, parse_markers, renumber
from assistant.export import bib_escape, bibtex_entries, bibtex_key
from assistant.render import (answer_markdown, answer_payload, author_line, citation_json,
                              reference_line, references_markdown)
from assistant.types import Answer, Citation, Quote
from assistant.ui.render import link_markers, source_card, sources_panel

TOP_W = Citation(number=1, paper_id="p1", title="Top-W: {Geometry} aware truncation",
                 authors=["Arash Gholamidavoodi", "Navid Rezazadeh"], category="Deep Learning · LLMs",
                 year=2025, title_is_derived=False, evidence="x")
FL = Citation(number=2, paper_id="p2", title="Federated learning backdoors", authors=["zhixuan ma"],
              category="Social Aspects · Security", title_is_derived=True)


# ----------------------------------------------------------------------------- markers

def test_markers_parse_groups_and_renumber():
    assert [parse_markers(m) for m in MARKER_RE.findall("a [1] b [2, 4] c [5-7] d [x]")] == [
        [1], [2, 4], [5, 6, 7]]
    assert renumber("b [7]. a [3][7].", [7, 3]) == "b [1]. a [2][1]."


def test_link_markers_only_links_cited_numbers():
    text = "A claim [1]. Another [2][3]. Not a source [7]. A link [x](y). Also [1](http://u)."
    out = link_markers(text, 4, [1, 2, 3])
    assert '<a href="#src-4-1" class="cite"' in out
    assert 'href="#src-4-2"' in out and 'href="#src-4-3"' in out
    assert "[7]" in out and "#src-4-7" not in out
    assert "[1](http://u)" in out  # a Markdown link stays one


# ----------------------------------------------------------------------------- references

def test_author_line_says_et_al_once():
    assert author_line([]) == ""
    assert author_line(["A", "B"]) == "A, B"
    assert author_line(list("ABCDEF"), 4) == "A, B, C, D et al."


def test_reference_lines():
    assert reference_line(TOP_W) == ("[1] Arash Gholamidavoodi, Navid Rezazadeh (2025). "
                                     "*Top-W: {Geometry} aware truncation*. Deep Learning · LLMs. "
                                     "id: p1")
    derived = reference_line(FL)
    assert derived.startswith("[2] zhixuan ma. *Federated learning backdoors* (label derived")
    # a paper without authors starts with its title: no stray ". "
    nobody = Citation(number=3, paper_id="p3", title="Title", authors=[], year=2018)
    assert reference_line(nobody) == "[3] *Title* (2018). id: p3"
    many = Citation(number=4, paper_id="p4", title="T", authors=list("ABCDEFG"))
    assert reference_line(many) == "[4] A, B, C, D, E, F et al. *T*. id: p4"
    assert references_markdown([]) == ""


def test_answer_markdown_lists_the_references():
    answer = Answer(answer="Top-W truncates [1]. Backdoors [2].", intent="question",
                    citations=[TOP_W, FL])
    md = answer_markdown("What?", answer)
    assert md.startswith("**Q:** What?\n\nTop-W truncates [1]")
    assert "**References**" in md and md.count("  \n") == 1 and md.endswith("id: p2\n")


def test_reference_lines_carry_the_link_and_the_doi():
    both = TOP_W.model_copy(update={"url": "https://example.org/p", "doi": "10.1/abc"})
    assert reference_line(both).endswith(
        "Deep Learning · LLMs. https://example.org/p. https://doi.org/10.1/abc. id: p1")
    # a link that is the DOI's own resolver link is given once
    same = TOP_W.model_copy(update={"url": "https://dx.doi.org/10.1/abc", "doi": "10.1/abc"})
    assert reference_line(same).endswith("LLMs. https://doi.org/10.1/abc. id: p1")
    assert reference_line(TOP_W.model_copy(update={"url": "https://e.org/q"})).endswith(
        "LLMs. https://e.org/q. id: p1")


def test_payloads_extend_the_library_shapes():
    """`ask --json`, `/chat` and `/v1` send Citation.to_json()'s fields and add five."""
    assert citation_json(FL) == {**FL.to_json(), "evidence": "", "title_is_derived": True,
                                 "quotes": [], "url": None, "doi": None}
    with_doi = citation_json(TOP_W.model_copy(update={"doi": "10.1/abc"}))
    assert with_doi["doi"] == "10.1/abc" and with_doi["url"] is None
    answer = Answer(answer="x [1]", intent="question", citations=[TOP_W], backend="none")
    payload = answer_payload(answer)
    assert set(answer.to_json()) == set(payload)
    assert payload["citations"] == [citation_json(TOP_W)]


# ----------------------------------------------------------------------------- page HTML

def test_source_card_escapes_and_labels_derived_titles():
    evil = FL.model_copy(update={"title": "<script>x</script>", "url": "javascript:alert(1)"})
    card = source_card(1, evil)
    assert "<script>" not in card and "javascript:" not in card
    assert 'class="label-badge" title="The corpus has no title' in card
    assert "unknown authors" in source_card(1, FL.model_copy(update={"authors": []}))


def test_source_card_links_the_doi_and_the_url():
    card = source_card(1, TOP_W.model_copy(update={"url": "https://example.org/p",
                                                    "doi": "10.1002/(SICI)1097<x>"}))
    assert 'class="url" href="https://example.org/p"' in card
    assert 'class="doi" href="https://doi.org/10.1002/%28SICI%291097%3Cx%3E"' in card
    assert ">doi:10.1002/(SICI)1097&lt;x&gt;</a>" in card
    only_doi = source_card(1, TOP_W.model_copy(update={"url": "https://doi.org/10.1/a",
                                                        "doi": "10.1/a"}))
    assert only_doi.count("<a ") == 1 and 'class="doi"' in only_doi


def test_sources_panel_explains_the_label():
    records = [{"turn": 1, "question": "q", "citations": [FL]}]
    assert "label-legend" in sources_panel(records)
    assert "label-legend" not in sources_panel([{**records[0], "citations": [TOP_W]}])


def test_sources_panel_shows_found_papers_while_waiting(seed_assistant):
    hits = seed_assistant.search("federated learning backdoor", k=3)
    html = sources_panel([], hits, pending="Found 3 papers — writing the answer…")
    assert "Found 3 papers" in html and html.count("<li>") == 3


# ----------------------------------------------------------------------------- BibTeX

def test_bibtex_export_round_trips_through_the_corpus_reader(tmp_path):
    cites = [TOP_W, FL, Citation(number=1, paper_id="p1", title="dup", authors=[])]  # p1 once
    bib = bibtex_entries(cites)
    assert bib.count("@misc{") == 2
    assert bibtex_key(cites[0]) == "gholamidavoodi2025topw"
    assert "author = {Arash Gholamidavoodi and Navid Rezazadeh}" in bib
    assert r"\{Geometry\}" in bib and bib_escape("a{b}\\") == r"a\{b\}\textbackslash{}"
    assert "keywords = {Social Aspects · Security}" in bib
    from assistant.corpus import read_papers

    # the reader needs abstracts; add them to check that the rest of each entry parses
    path = tmp_path / "refs.bib"
    path.write_text(bib.replace("  title =", "  abstract = {An abstract.},\n  title ="), "utf-8")
    papers = list(read_papers(path))
    assert [p.authors for p in papers] == [["Arash Gholamidavoodi", "Navid Rezazadeh"], ["zhixuan ma"]]
    assert papers[0].year == 2025


def test_bibtex_export_carries_url_and_doi_back_to_the_reader(tmp_path):
    from assistant.corpus import read_papers

    cite = TOP_W.model_copy(update={"url": "https://example.org/p", "doi": "10.1/abc_d"})
    bib = bibtex_entries([cite])
    assert "  doi = {10.1/abc_d}" in bib and "  url = {https://example.org/p}" in bib
    path = tmp_path / "refs.bib"
    path.write_text(bib.replace("  title =", "  abstract = {An abstract.},\n  title ="), "utf-8")
    [paper] = read_papers(path)
    assert (paper.url, paper.doi) == ("https://example.org/p", "10.1/abc_d")


def test_each_sentence_citing_a_paper_is_shown_with_the_line_it_restates():
    quoted = TOP_W.model_copy(update={"quotes": [
        Quote(claim="Top-W truncates <by> geometry.", evidence="Top-W is a geometry-aware truncation rule."),
        Quote(claim="It beats min-p.", evidence="It improves accuracy by up to 33.7% over min-p.")]})
    card = source_card(1, quoted)
    assert "What the answer says from it (2)" in card
    assert "Top-W truncates &lt;by&gt; geometry." in card and "<by>" not in card
    assert '<q class="quote">It improves accuracy by up to 33.7% over min-p.</q>' in card
    assert "What the answer says" not in source_card(1, TOP_W)
    assert citation_json(quoted)["quotes"][1] == {"claim": "It beats min-p.",
                                                  "evidence": "It improves accuracy by up to 33.7% over min-p."}
