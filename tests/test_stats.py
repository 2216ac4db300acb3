"""Corpus statistics: document frequencies, near forms, the author index."""
from __future__ import annotations

from assistant.stats import CorpusStats, PaperTerms
from assistant.types import Paper


def paper(pid: str, abstract: str, authors=(), title: str = "", category=None) -> Paper:
    return Paper(paper_id=pid, title=title or pid, abstract=abstract, authors=list(authors),
                 category=category)


PAPERS = [
    paper("a", "Sycophantic behaviour grows after preference optimisation.", ["Itai Shapira"]),
    paper("b", "Federated learning with backdoor attacks on clients.", ["Zhixuan Ma", "Jie Wu"]),
    paper("c", "Causal inference with federated data from hospitals.", ["Rémi Khellaf"]),
]


def test_document_frequency_counts_papers_not_occurrences():
    stats = CorpusStats.build(PAPERS)
    assert stats.n_docs == 3
    assert stats.df["feder"] == 2  # stems: "federated" in b and c
    assert stats.idf("federated") < stats.idf("sycophantic") < stats.max_idf()


def test_known_terms_include_near_forms_but_not_absent_words():
    stats = CorpusStats.build(PAPERS)
    assert stats.known("sycophancy")  # near form of "sycophantic"
    assert stats.known("hospitals")
    assert not stats.known("dropout")


def test_author_index_full_names_and_surnames():
    stats = CorpusStats.build(PAPERS)
    assert stats.papers_by(["zhixuan ma"]) == {"b"}
    assert "rémi khellaf" in stats.surnames["khellaf"]


def test_incremental_add_equals_a_build():
    built = CorpusStats.build(PAPERS)
    grown = CorpusStats()
    for p in PAPERS:
        grown.add(p)
    assert grown.df == built.df and grown.n_docs == built.n_docs and grown.authors == built.authors


def test_paper_terms_match_hyphenated_names_and_stems():
    terms = PaperTerms.of(paper("k", "We study Kolmogorov--Arnold networks and their generalization."))
    assert terms.has("kolmogorov-arnold")
    assert terms.has("generalization")
    assert terms.has("network")
    assert not terms.has("transformer")


def test_remove_undoes_add_and_saved_stats_load_equal(tmp_path):
    built = CorpusStats.build(PAPERS[:2])
    grown = CorpusStats.build(PAPERS)
    grown.remove(PAPERS[2])
    assert grown.same_counts(built)
    assert "rémi khellaf" not in grown.authors and "khellaf" not in grown.surnames
    assert not grown.known("hospitals") and grown.known("federated")
    grown.save(tmp_path / "stats.json", revision="r1")
    loaded, extra = CorpusStats.load(tmp_path / "stats.json")
    assert loaded.same_counts(built) and extra == {"revision": "r1"}
    assert loaded.author_suggestions("WU") == ["Jie Wu"]


def test_acronyms_an_abstract_defines_are_spelt_out_by_the_collection():
    from assistant.stats import defined_acronyms

    text = ("We reformulate the model-agnostic meta-learning algorithm (MAML) with graph "
            "convolutional networks (GCNs) and the alternating direction method of multipliers (ADMM). "
            "Results (see Fig. 2) hold (a) always.")
    assert defined_acronyms(text) == {("MAML", "model-agnostic meta-learning algorithm"),
                                      ("GCN", "graph convolutional networks"),
                                      ("ADMM", "alternating direction method of multipliers")}
    # letters no run of words spells: no definition
    assert defined_acronyms("a new sampler for language models (VS)") == set()
    stats = CorpusStats.build([paper("m", text), paper("n", "Graph convolutional networks (GCN) again.")])
    assert stats.long_form("MAML") == "model-agnostic meta-learning algorithm"
    assert stats.long_form("GCNs") == "graph convolutional networks"
    assert stats.long_form("BERT") == ""
    stats.remove([paper("m", text)])
    assert stats.long_form("MAML") == "" and stats.long_form("GCN") == "graph convolutional networks"
    # a saved table reads the same once loaded
    loaded = CorpusStats.from_dict(stats.to_dict())
    assert loaded.same_counts(stats) and loaded.long_form("GCN") == "graph convolutional networks"


def test_papers_using_a_name_counts_papers_and_a_hyphenated_name_by_its_rarest_part():
    stats = CorpusStats.build([
        paper("a", "An LSTM with attention; the LSTM is deep.", title="SQLNet: queries from text"),
        paper("b", "A bidirectional LSTM tagger.", title="Tagging"),
        paper("c", "Metric learning with a Mahalanobis distance.", title="Metrics"),
    ])
    assert stats.papers_using("LSTM") == 2  # papers, not occurrences
    assert stats.papers_using("SQLNet") == 1
    assert stats.papers_using("GraphSAGE") == 0
    # nobody writes "Mahalanobis-distance" whole: its rarer part counts
    assert stats.papers_using("Mahalanobis-distance") == 1
