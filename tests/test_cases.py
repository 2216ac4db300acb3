"""Another case than the one asked (answer/cases.py): a paper that states the same kind of figure
as the question, never with the question's value, does not answer it."""
from __future__ import annotations

import pytest

from assistant.answer.cases import other_cases, stated_figures
from assistant.answer.compose import other_case_note, refusal
from assistant.types import Paper

from conftest import seeded_assistant

# abstracts of the arXiv math corpus, shortened, as they are written (LaTeX and all)
RANDOM_CONNECTION = Paper(
    paper_id="rcm", authors=["Matthew Dickson", "Markus Heydenreich"],
    title="Mean-field behaviour of the random connection model on hyperbolic space",
    abstract=("We study the random connection model on hyperbolic space $\\mathbb{H}^d$ in dimension "
              "$d=2,3$. We prove that the triangle condition holds at criticality, and thereby that "
              "several critical exponents take their mean-field values."))
SU2 = Paper(
    paper_id="su2", authors=["Yuki Kojima", "Yuji Tachikawa"],
    title="On homomorphisms from finite subgroups of $SU(2)$ to Langlands dual pairs of groups",
    abstract=("We compare the number of conjugacy classes of homomorphisms from a finite subgroup "
              "of $SU(2)$ into a compact simple Lie group and into its Langlands dual."))
PRO_P = Paper(
    paper_id="prop", authors=["A. Author"],
    title="Finite axiomatizability of a centre-by-metabelian pro-p group",
    abstract=("We prove that the relatively free centre-by-metabelian pro-p group on 2 generators "
              "is finitely axiomatizable in the class of profinite groups."))


def other_case(question, paper):
    return other_cases(question, [paper])[0]


@pytest.mark.parametrize("text,kind,exact,at_least", [
    ("in dimensions d >= 4", "dimension", set(), 4),
    ("on $\\mathbb{H}^d$ in dimension $d=2,3$", "dimension", {2, 3}, None),
    ("four-dimensional homogeneous spaces", "dimension", {4}, None),
    ("mean-field values in four dimensions", "dimension", {4}, None),
    ("smooth Fano 3-folds", "dimension", {3}, None),
    ("finite subgroups of SU(3)", "SU(·)", {3}, None),
    ("a germ (C^4,0) -> (C^5,0)", "C^·", {4, 5}, None),
    ("a germ ℂ⁴ → ℂ⁵", "C^·", {4, 5}, None),
    ("on three or more generators", "generators", set(), 3),
    ("at least 3 colours", "colors", set(), 3),
    ("hypersurfaces of degree 6 in P^4", "degree", {6}, None),
    ("nodal sextic threefolds", "degree", {6}, None),
    ("affine Coxeter groups of rank at least 4", "rank", set(), 4),
    ("a genus-2 surface", "genus", {2}, None),
    ("with only three states", "states", {3}, None),
])
def test_stated_figures_read_dimensions_indices_and_counts(text, kind, exact, at_least):
    figures = stated_figures(text)[kind]
    assert (figures.exact, figures.at_least) == (exact, at_least)


@pytest.mark.parametrize("text", ["dimension n", "degree d polynomials", "SU(n) gauge theory", "the L^p norm", "a 2.5 dB gain",
                                  "O(n^{2.5}) time", "in high dimensions"])
def test_a_symbol_or_a_decimal_is_no_figure(text):
    assert stated_figures(text) == {}


@pytest.mark.parametrize("question,paper,note", [
    ("Do the critical exponents of the random connection model on hyperbolic space agree with "
     "mean-field values in dimensions d >= 4?", RANDOM_CONNECTION, "it treats dimension 2 or 3, not 4 or more"),
    ("Conjugacy classes of homomorphisms from finite subgroups of SU(3) into a compact Lie group?",
     SU2, "it treats SU(2), not SU(3)"),
    ("Is the centre-by-metabelian pro-p group on three or more generators finitely axiomatizable?",
     PRO_P, "it treats 2 generators, not 3 or more"),
])
def test_a_paper_on_another_case_is_said_to_treat_it(question, paper, note):
    case = other_case(question, paper)
    assert case is not None and other_case_note(case) == note


@pytest.mark.parametrize("question,paper", [
    ("Mean-field critical exponents of the random connection model on the hyperbolic plane, d = 2?",
     RANDOM_CONNECTION),
    ("the random connection model in three-dimensional hyperbolic space", RANDOM_CONNECTION),
    ("Is there work on the random connection model on hyperbolic space?", RANDOM_CONNECTION),  # no figure
    ("homomorphisms from finite subgroups of SU(n)", SU2),                                     # a symbol
    ("finite subgroups of SU(2) in dimension 3", SU2),  # a kind the paper does not state
    ("a pro-p group on at least two generators", PRO_P),
])
def test_a_paper_stating_the_asked_case_or_none_is_left_to_the_judgement(question, paper):
    assert other_case(question, paper) is None


def test_a_refusal_says_which_case_each_near_paper_treats():
    case = other_case("finite subgroups of SU(3)?", SU2)
    assert other_cases("finite subgroups of SU(3)?", [SU2, RANDOM_CONNECTION]) == [case, None]
    text = refusal("question", "", [SU2, RANDOM_CONNECTION], verdicts=["may", "no"], other_cases=[case, None])
    assert "I am not sure" not in text  # the "may" was the paper on another case
    assert "(it treats SU(2), not SU(3))" in text and "(judged not to answer it)" in text
    unread = refusal("question", "", [SU2], other_cases=[case], nearest="A sentence of it.")
    assert "The nearest papers:" in unread and "(it treats SU(2), not SU(3))" in unread
    assert "A sentence of it" not in unread


def test_the_assistant_refuses_a_paper_on_another_case_and_cites_it_for_its_own(tmp_path):
    pa = seeded_assistant(tmp_path / "store")
    pa.store.upsert_papers([RANDOM_CONNECTION])
    pa.store.finish_ingest()
    near = pa.ask("Do the critical exponents of the random connection model on hyperbolic space "
                  "take mean-field values in four dimensions?")
    assert near.abstained and near.citations == []
    assert near.presented[0] == "rcm" and "it treats dimension 2 or 3, not 4" in near.answer
    right = pa.ask("Do the critical exponents of the random connection model on hyperbolic space "
                   "take mean-field values in three dimensions?")
    assert [c.paper_id for c in right.citations] == ["rcm"]
