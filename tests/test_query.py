"""What a message asks: intent, and the topic of a summary request without the request's words."""
from __future__ import annotations

import pytest

from assistant.answer.query import detect_intent, parse, question_core, topic_of, topic_reading, wanted


@pytest.mark.parametrize("message,core", [
    ("Which paper reports a 33.7% improvement?", "a 33.7% improvement?"),
    ("Which paper explains why RLHF makes models agree with users?", "why RLHF makes models agree with users?"),
    ("What work studies sycophancy in chatbots?", "sycophancy in chatbots?"),
    ("Which papers focus on graph neural networks?", "graph neural networks?"),
    ("Is there evidence that aspirin lowers fever?", "aspirin lowers fever?"),
    # a verb that is the topic, or no framing verb: the question stays whole
    ("Which papers use federated learning?", "Which papers use federated learning?"),
    ("Which paper is about KANs?", "Which paper is about KANs?"),
    ("Which study shows?", "Which study shows?"),
])
def test_a_question_loses_the_words_that_frame_it(message, core):
    # "reports", "explains": what a paper does with its topic, never the topic itself
    assert question_core(message) == core


@pytest.mark.parametrize("message,topic", [
    ("Summarize the papers on causal inference.", "causal inference"),
    ("Summarize what this collection says about causal inference", "causal inference"),
    ("What does this collection say about causal inference?", "causal inference"),
    ("What's in here on causal inference?", "causal inference"),
    ("what is there on causal inference", "causal inference"),
    ("Give me an overview of causal inference", "causal inference"),
    ("Please give me a quick overview of the work on causal inference.", "causal inference"),
    ("Can you summarise the research about causal inference in this collection?", "causal inference"),
    ("causal inference: summarize", "causal inference"),
    ("Overview of federated learning", "federated learning"),
    ("What does the corpus have on LLM agents and how they model their environment?",
     "LLM agents and how they model their environment"),
    ("Which papers are about diffusion models?", "diffusion models"),
    ("List all papers on spiking neural networks", "spiking neural networks"),
    ("What do the papers say about sycophancy", "sycophancy"),
    # several sentences: the one that names the topic, not the asker's context or the format
    ("Any papers on graph neural networks? If so, give me the gist of each.", "graph neural networks"),
    ("I'm preparing a lecture on Bayesian optimisation for my students. What does the collection say "
     "about acquisition functions?", "acquisition functions"),
    ("I'm writing a survey on continual learning. What do these papers contribute to it?",
     "continual learning"),
    ("Mixture of experts — what does the set cover? Keep it to three sentences.", "Mixture of experts"),
    ("Give me the big-picture view on model compression across these papers, in bullet points.",
     "view on model compression"),
    ("What's the state of the art in federated learning according to these abstracts?", "federated learning"),
    ("I'd like an assistant that plans trips over several days. What does the collection say about "
     "such systems?", "assistant that plans trips over several days"),
    ("Summarize the work that deals with privacy, e.g. differential privacy.",
     "privacy, e.g. differential privacy"),
    # for whom, and in what words: how to write it, not what about
    ("Summarise the causality work for a newcomer in plain words.", "causality"),
    ("Explain to an undergrad what the algebraic geometry papers here are about.", "algebraic geometry"),
    ("Explain the landscape of backdoor attacks in plain English", "landscape of backdoor attacks"),
    # a gerund is the topic's own word
    ("Summarize the papers on explaining graph neural network predictions",
     "explaining graph neural network predictions"),
])
def test_topic_drops_the_request_words(message, topic):
    assert topic_of(message) == topic


@pytest.mark.parametrize("message", [
    "Give me a short synthesis of the work on world models.",
    "What do these abstracts say about tokenization?",
    "Which of these papers are relevant to program synthesis, and what do they argue?",
    "What's the collection's take on scaling laws?",
])
def test_a_synthesis_asked_in_other_words_is_a_summary(message):
    assert detect_intent(message) == "summary"


@pytest.mark.parametrize("message", [
    "Summarize the papers on causal inference.",
    "What does this collection say about causal inference?",
    "What's in here on causal inference?",
    "Give me an overview of GANs",
    "what do we have on world models",
    "What work is there on dropout?",
    "Which papers are about federated learning?",
])
def test_summary_requests_are_summaries(message):
    assert detect_intent(message) == "summary"


@pytest.mark.parametrize("message,intent", [
    ("Which paper studies backdoor attacks?", "question"),
    ("What is Top-W?", "question"),
    ("Compare Top-W with Verbalized Sampling", "compare"),
    ("How does DualGraph differ from Meta Context Engineering?", "compare"),
    ("Top-W vs Verbalized Sampling", "compare"),
])
def test_other_intents(message, intent):
    assert detect_intent(message) == intent


def test_a_topic_made_only_of_request_words_falls_back_to_the_message():
    assert topic_of("Summarize the papers.") == "Summarize the papers"


# ---------------------------------------------------------------- references to earlier answers
from assistant.answer.query import parse, split_parts  # noqa: E402
from assistant.answer.sides import compare_targets, describes_a_paper_here, told_sides  # noqa: E402
from assistant.types import Turn  # noqa: E402

TEXTS = {"A": "Causal discovery from multiple views", "B": "Federated causal effect estimation",
         "C": "Conditional independence testing for causal inference", "D": "Spectral instrumental variables",
         "X": "Backdoor attacks in federated learning", "Y": "Sycophancy after preference tuning"}


def convo(*answers, refused_last=False):
    """A history whose assistant turns showed these paper lists, in order."""
    turns = []
    for i, ids in enumerate(answers):
        turns += [Turn(role="user", content=f"q{i}"),
                  Turn(role="assistant", content=f"a{i}", paper_ids=list(ids),
                       refused=refused_last and i == len(answers) - 1)]
    return turns


SUMMARY = convo(["A", "B", "C", "D"])


@pytest.mark.parametrize("message,history,expected", [
    ("Compare the first two papers you mentioned", SUMMARY, ["A", "B"]),
    ("Tell me more about the second one", SUMMARY, ["B"]),
    ("what about the last one?", SUMMARY, ["D"]),
    ("and the third paper?", SUMMARY, ["C"]),
    ("Who wrote [2]?", SUMMARY, ["B"]),
    ("Tell me about paper 3", SUMMARY, ["C"]),
    ("compare the last two", SUMMARY, ["C", "D"]),
    ("Compare the two federated ones you mentioned", convo(["A", "B", "X"]), ["B", "X"]),
    ("Compare the two causal papers you mentioned", convo(["X", "A", "Y", "C"]), ["A", "C"]),
    ("Who wrote the federated one?", convo(["A", "B", "C"]), ["B"]),
    ("Who wrote it?", convo(["Y"]), ["Y"]),
    ("What does it propose?", convo(["A", "B"]), ["A"]),
    ("Compare them", convo(["C", "D"]), ["C", "D"]),
    ("compare both", convo(["C", "D"]), ["C", "D"]),
    ("compare the two", convo(["X"], ["Y"]), ["Y", "X"]),
    # a refusal offered three papers, then an answer showed one: "the two" are still two
    ("how do the two differ?", convo(["X", "C", "D"], ["Y"]), ["Y", "X"]),
    # "it" is the latest answer's paper, "the first one" counts through the latest list
    ("Compare it with the first one", convo(["A", "B", "C"], ["B"]), ["B", "A"]),
    ("and the other one?", convo(["X", "Y"], ["X"]), ["Y"]),
    ("Who wrote it?", convo(["X", "Y"], refused_last=True), ["X"]),
    ("is that a solo paper or a group?", convo(["X"], ["Y"]), ["Y"]),
    ("Is this peer reviewed?", convo(["Y"]), ["Y"]),
    ("Is there a paper that uses Wasserstein distance?", convo(["Y"]), []),
    # a pronoun inside the description of another paper refers within it
    ("And what about the one that analyzes the subproblems, showing gradient descent solves them?",
     convo(["Y"]), []),
    ("and the one arguing that single-number scores can't tell what they miss?", convo(["Y"]), []),
    ("and the note on capacities of unit balls with either their Legendre or polar duals",
     convo(["Y"]), []),
    ("what about the one you mentioned first? who wrote it?", convo(["X", "Y"]), ["X"]),
    ("and the other one? what do they find?", convo(["X", "Y"], ["X"]), ["Y"]),
])
def test_references_resolve_against_what_answers_showed(message, history, expected):
    q = parse(message, history, describe=lambda pid: TEXTS[pid])
    assert q.references == expected


def test_a_reference_with_nothing_to_point_at_is_reported():
    q = parse("what about the fifth one?", convo(["A", "B"]))
    assert q.references == [] and q.unresolved


def test_after_a_refusal_references_point_at_the_offered_papers():
    q = parse("Who wrote it?", convo(["X", "Y"], refused_last=True))
    assert q.after_refusal and q.asks_authors


@pytest.mark.parametrize("message", [
    "Which paper proposes a benchmark for embodied agents?",
    "Is there a paper that studies sycophancy?",
    "What is the paper about KANs?",
])
def test_new_questions_do_not_refer_back(message):
    assert parse(message, convo(["A", "B"])).references == []


@pytest.mark.parametrize("message", [
    "How do Top-W and Verbalized Sampling use their samples differently?",
    "What do Top-W and Verbalized Sampling have in common?",
    "Top-W versus Verbalized Sampling: any methodological overlap?",
])
def test_ways_of_asking_for_a_comparison(message):
    assert parse(message, []).intent == "compare"


def test_compare_keeps_named_sides_and_drops_references():
    q = parse("Compare it with Top-W", convo(["Y"]))
    assert q.references == ["Y"] and q.targets == ["Top-W"]


@pytest.mark.parametrize("message,targets", [
    ("Compare Top-W with Verbalized Sampling.", ["Top-W", "Verbalized Sampling"]),
    ("Compare DualGraph and Meta Context Engineering", ["DualGraph", "Meta Context Engineering"]),
    ("Compare the paper that unrolls the discriminator optimization with the paper that treats "
     "the discriminator as an energy function",
     ["unrolls the discriminator optimization", "treats the discriminator as an energy function"]),
    ("compare the one which uses spectral normalization and the one about unrolled optimization",
     ["uses spectral normalization", "unrolled optimization"]),
    # described sides: participles, adjectives before "one", a shared context before a colon
    ("Compare the two error-estimation papers for the Stokes equation: the one estimating the "
     "global error and the goal-oriented one.",
     ["estimating the global error (error-estimation for the Stokes equation)",
      "goal-oriented (error-estimation for the Stokes equation)"]),
    ("How does the spectral clustering paper (graph cuts) differ from the one on random walks?",
     ["spectral clustering (graph cuts)", "random walks"]),
    ("Contrast the graph cuts paper and the random walks paper as views on clustering.",
     ["graph cuts", "random walks"]),
    # "between" inside a description is not the comparison's; a remark after a dash is no side
    ("the paper bounding inference on meshes versus the one linking regions between two "
     "scans — any overlap?", ["bounding inference meshes", "linking regions between two scans"]),
    # a question in a new sentence after the sides is no part of the last side
    ("Two sampling papers: the one truncating by geometry and the one prompting for a "
     "distribution. How do they differ?",
     ["truncating by geometry (Two sampling)", "prompting for a distribution (Two sampling)"]),
    # cut once, at the strongest connector: "and"/"with"/"to" inside a side stay there
    ("Compare the new lower bound for R(3,k) with the paper on Ramsey numbers of stars, paths "
     "and matchings.", ["new lower bound for R(3,k)", "Ramsey numbers of stars, paths and matchings"]),
    ("How does the ADMM with variance reduction differ, in terms of rates, from the dual ascent "
     "method?", ["ADMM with variance reduction", "dual ascent"]),
    ("Compare the one-step diffusion model for relighting with VS.",
     ["one-step diffusion model for relighting", "VS"]),
    # "one …, the other …"; a dash introducing described sides; a remark after a colon
    ("Two batch norm papers: one says it smooths the landscape, the other says it allows "
     "bigger steps. How do they differ?",
     ["says it smooths landscape", "says it allows bigger steps"]),
    ("What's the difference between the two Ramsey papers — the one computing small degrees "
     "and the one proving infinite degrees?",
     ["computing small degrees (Ramsey)", "proving infinite degrees (Ramsey)"]),
    ("REBAR vs the relaxation paper with hard concrete gates: both relax discrete variables, "
     "but for what?", ["REBAR", "relaxation with hard concrete gates"]),
    ("inverse problems for Jacobi matrices vs the one for Schrödinger operators — how do their "
     "results compare?", ["inverse problems for Jacobi matrices", "for Schrödinger operators"]),
    # after two short names, what they are for or how to see them is no part of the last one;
    # a longer side keeps its "for" clause
    ("gptq vs awq for 4 bit llm weight quantization, which is better?", ["gptq", "awq"]),
    ("Could you compare DreamerV3 and MuZero as approaches to learning with world models?",
     ["DreamerV3", "MuZero"]),
    ("Contrast the Schrödingerization quantum preconditioning paper with the Schrödingerization "
     "algorithm for the fractional Poisson equation.",
     ["Schrödingerization quantum preconditioning", "Schrödingerization algorithm for fractional Poisson equation"]),
    ("what are the main differences between GraphSAGE and TransE in how they embed nodes?",
     ["GraphSAGE", "TransE"]),
    # numbered sides, each up to its sentence end or the connector to the next
    ("compare: (a) the paper that prunes attention heads, and (b) the one that distils a teacher "
     "into a small student. which is cheaper?", ["prunes attention heads", "distils teacher into small student"]),
    ("Two papers, contrast pls. First: lichen growth forecasts from satellites. Second: moss "
     "mapping with drones (CNN + CRF). what differs?", ["lichen growth forecasts from satellites",
                                                        "moss mapping with drones (CNN + CRF)"]),
    # a question or remark after a side's "?" is not part of it
    ("compare the paper that forecasts lichen growth vs the one that maps moss? both seem ecological",
     ["forecasts lichen growth", "maps moss"]),
    # "A, or B? compare them briefly": the sides are before "compare"
    ("which is older: the lichen growth forecaster, or the one that maps moss with drones? compare "
     "them briefly", ["lichen growth forecaster", "maps moss with drones"]),
    # … also when the pair's noun takes a phrase of its own; a dash after a side is no part of it
    ("a forecaster of lichen growth from satellites, vs. drones mapping moss cover - compare the two "
     "routes to plant surveys", ["forecaster of lichen growth from satellites", "drones mapping moss cover"]),
    # "one …, the other …" after a dash
    ("two papers here study plants - one is about lichen growth, the other about moss mapping. how "
     "do they differ?", ["is lichen growth", "moss mapping"]),
    # "how does A compare to B": A is before the verb, and the verb cuts the sides
    ("How does the sampler that forecasts lichen growth compare to plain moss mapping?",
     ["sampler that forecasts lichen growth", "plain moss mapping"]),
    ("How does LichenNet compare with MossMap?", ["LichenNet", "MossMap"]),
    # … also after a framing clause before "how does"
    ("For plant ecology: how does LichenNet compare with MossMap?", ["LichenNet", "MossMap"]),
    # a colon: the side that a stronger connector cuts ("vs" over "to") names the sides
    ("LichenNet (satellite-based) vs moss mapping with drones: two ways to survey cover; how do "
     "their costs differ?", ["LichenNet (satellite-based)", "moss mapping with drones"]),
    ("compare with MossMap", ["MossMap"]),  # a side of a paper in focus
])
def test_compare_targets(message, targets):
    assert compare_targets(message) == targets


@pytest.mark.parametrize("side,described", [
    ("prompting trick where the model lists candidate answers", True),
    ("against", False),  # "what do they compare against?"
    ("them briefly", False),
    ("batch norm (Ioffe & Szegedy 2015)", False),  # a work cited from elsewhere
    ("the original ResNet by He et al.", False),
])
def test_a_side_describes_a_paper_here_only_in_enough_words_of_its_own(side, described):
    assert describes_a_paper_here(side) is described


@pytest.mark.parametrize("message,parts", [
    ("Which paper forecasts lichen growth, and by how much does it reduce error?",
     ["Which paper forecasts lichen growth", "by how much does it reduce error?"]),
    ("Who wrote it and what benchmarks does it use?", ["Who wrote it", "what benchmarks does it use?"]),
    ("What is Top-W?", ["What is Top-W?"]),
    ("Which papers study causal discovery and federated learning?",
     ["Which papers study causal discovery and federated learning?"]),
    # each question sentence is a part, whatever its first word
    ("Is there a benchmark of embodied skills? Also anything on learning an LLM's context?",
     ["Is there a benchmark of embodied skills?", "Also anything on learning an LLM's context?"]),
    # a last sentence that is not a question stays with the question before it
    ("Which paper is on GANs? I need it for my thesis.", ["Which paper is on GANs? I need it for my thesis."]),
    # a word on its own is not a question: "ok and what about …" is one
    ("ok and what about one on sycophancy after preference tuning?",
     ["ok and what about one on sycophancy after preference tuning?"]),
    # numbered sub-questions are the parts, without their labels or a preamble
    ("Q1: which paper forecasts lichen growth? Q2: who wrote the moss one?",
     ["which paper forecasts lichen growth?", "who wrote the moss one?"]),
    ("Two quick ones. (1) In the lichen paper, what data? (2) For the moss work, which model",
     ["In the lichen paper, what data?", "For the moss work, which model"]),
    ("1) anything on lichen growth? 2) any benchmark of moss maps", ["anything on lichen growth?",
                                                                   "any benchmark of moss maps"]),
    # a stray "2)" inside a formula numbers nothing
    ("Which paper bounds f(n/2) by 2) terms?", ["Which paper bounds f(n/2) by 2) terms?"]),
    # a sentence that says it is another question is one
    ("is there a paper on lichen growth? and separately, one mapping moss with drones",
     ["is there a paper on lichen growth?", "and separately, one mapping moss with drones"]),
    # statements that each ask for a paper are questions, though neither ends in "?"
    ("I need the paper that forecasts lichen growth. I'd also like to know which paper maps moss.",
     ["I need the paper that forecasts lichen growth.", "I'd also like to know which paper maps moss."]),
    # a statement that asks for none is context, and a clarification after "?" stays with it
    ("I work on lichens. Which paper forecasts their growth?",
     ["I work on lichens. Which paper forecasts their growth?"]),
    ("Which paper forecasts lichen growth? I mean the paper with satellites.",
     ["Which paper forecasts lichen growth? I mean the paper with satellites."]),
    # "and can be …" goes on saying what the question's method does; "and can it …" asks again
    ("How do I forecast lichen growth in a way that uses satellites and can be run on a phone?",
     ["How do I forecast lichen growth in a way that uses satellites and can be run on a phone?"]),
    ("Which paper forecasts lichen growth, and can it run on a phone?",
     ["Which paper forecasts lichen growth", "can it run on a phone?"]),
    # an opening phrase that sets the scene is part of the question it sets
    ("In lichen ecology, which paper forecasts growth?", ["In lichen ecology, which paper forecasts growth?"]),
    ("On a complete 4-manifold with nonnegative Ricci curvature, is there a sharp bound?",
     ["On a complete 4-manifold with nonnegative Ricci curvature, is there a sharp bound?"]),
    ("Given a moss map, which paper forecasts lichen growth, and who wrote it?",
     ["Given a moss map, which paper forecasts lichen growth", "who wrote it?"]),
    # … not a statement before a question, nor an opening that asks itself
    ("For a lichen reading list: which paper forecasts growth, and which maps moss?",
     ["For a lichen reading list: which paper forecasts growth", "which maps moss?"]),
    ("I work on lichens, is there a paper on their growth?", ["I work on lichens", "is there a paper on their growth?"]),
])
def test_multi_part_questions_split(message, parts):
    assert split_parts(message) == parts


@pytest.mark.parametrize("message,sentences", [
    ("There's a paper that forecasts lichen growth from satellites. There's also one that maps "
     "moss with drones and a CRF. Both seem ecological - can you contrast them",
     ["There's a paper that forecasts lichen growth from satellites.",
      "There's also one that maps moss with drones and a CRF."]),
    ("One paper forecasts lichen growth from satellite images. The other maps moss cover with "
     "drones. How do their approaches compare?",
     ["One paper forecasts lichen growth from satellite images.", "The other maps moss cover with drones."]),
    # one sentence: the phrase reading's sides stand
    ("Compare the paper that forecasts lichen growth with the one that maps moss.", []),
])
def test_a_comparison_told_in_sentences_has_them_as_sides(message, sentences):
    assert parse(message, [], "compare").side_sentences == sentences


@pytest.mark.parametrize("message,targets", [
    # "one X, and the other Y" inside a sentence whose comparison is asked in the next one
    ("There are two lichen papers here: one forecasts lichen growth from satellite images, and "
     "the other maps moss cover with drones and a CRF. How do they compare in what they need?",
     ["forecasts lichen growth from satellite images", "maps moss cover with drones and CRF"]),
    ("One paper forecasts lichen growth from satellite images. Another maps moss cover with "
     "drones and a CRF. Compare how each was evaluated.",
     ["forecasts lichen growth from satellite images", "maps moss cover with drones and CRF"]),
])
def test_one_and_the_other_tell_a_comparison_s_sides(message, targets):
    assert told_sides(message) == targets and compare_targets(message) == targets


@pytest.mark.parametrize("message", [
    "Compare one of the lichen papers with the moss paper and the other satellite ones.",
    "Does the paper where one model imitates another compare with the moss paper?",
    # sides too thin to describe a paper: the two papers shown are what "they" are
    "how do they compare? one seems algebraic, the other inferential",
    # a pair never crosses a question's end: "the one that …? one looks …, the other …"
    "compare the one that forecasts lichen growth from satellites with the moss paper? one looks "
    "practical and the other theoretical, how do they fit together",
])
def test_one_of_another_inside_a_description_and_thin_sides_tell_no_sides(message):
    assert told_sides(message) == []


@pytest.mark.parametrize("message,references", [
    ("what does [2] find?", ["B"]),
    ("And the one describing rowmotion orbits on interval-closed sets of [2]x[n]?", []),
    ("is the bound on x[2] sharp?", []),
])
def test_a_citation_marker_stands_alone_not_inside_mathematics(message, references):
    assert parse(message, convo(["A", "B"])).references == references


# ---------------------------------------------------------------- more like this, literature tables
from assistant.answer.query import (asks_previous_papers, paper_id_in, similar_target,  # noqa: E402
                                    table_request)


@pytest.mark.parametrize("message,intent", [
    ("more like the second one", "similar"),
    ("Papers similar to the first one?", "similar"),
    ("anything else like it?", "similar"),
    ("More like Top-W", "similar"),
    ("More like this: id h6a909e7d1eee", "similar"),
    ("Make a table of the papers on causal inference: method, data, main result", "table"),
    ("make a table of the papers you cited", "table"),
    ("Tabulate them: method, result", "table"),
    ("Give me a literature table for federated learning", "table"),
    # not these: "like" as a verb, a comparison, a summary
    ("I would like a summary of causal inference", "summary"),
    ("Compare Top-W with Verbalized Sampling", "compare"),
    ("Which paper studies backdoor attacks?", "question"),
    # "anything like that?" after a description asks for a paper doing what it describes
    ("Is there anything similar to the PINN natural gradient paper?", "similar"),
    ("For a car joining a highway, I want a planner that keeps a cautious fallback plan ready. "
     "Anything like that?", "question"),
    ("For outlier detection I need a probability-like score of how unusual each point is. Is there "
     "a loss-minimisation treatment that recovers something like the one-class SVM?", "question"),
])
def test_similar_and_table_requests(message, intent):
    assert detect_intent(message) == intent


def test_more_like_resolves_references_like_other_follow_ups():
    q = parse("more like the second one", SUMMARY)
    assert q.intent == "similar" and q.references == ["B"]
    q = parse("anything else like it?", convo(["Y"]))
    assert q.intent == "similar" and q.references == ["Y"]
    assert parse("more like the fifth one", SUMMARY).unresolved


@pytest.mark.parametrize("message,target", [
    ("More like Top-W", "Top-W"),
    ("papers similar to Verbalized Sampling?", "Verbalized Sampling"),
    ("anything else like this?", ""),
    ("more like that one", ""),
])
def test_similar_target_is_the_name_after_the_phrase(message, target):
    assert similar_target(message) == target


def test_paper_id_in_the_card_buttons_message():
    assert paper_id_in("More like this: id h6a909e7d1eee") == "h6a909e7d1eee"
    assert paper_id_in("more like the second one") == ""


@pytest.mark.parametrize("message,topic,aspects", [
    ("Make a table of the papers on causal inference: method, data, main result",
     "causal inference", ["method", "data", "main result"]),
    ("Make a literature table for federated learning", "federated learning",
     ["problem", "method", "data", "result"]),
    ("Make a table of Top-W and Verbalized Sampling: method; result", "Top-W and Verbalized Sampling",
     ["method", "result"]),
])
def test_table_request_topic_and_aspects(message, topic, aspects):
    assert table_request(message) == (topic, aspects)


@pytest.mark.parametrize("message,previous", [
    ("make a table of the papers you cited: method, data", True),
    ("Tabulate them", True),
    ("Make a table of the papers on causal inference: method", False),
])
def test_a_table_of_the_papers_already_shown(message, previous):
    assert asks_previous_papers(message) is previous


def test_mode_table_forces_the_intent():
    assert parse("causal inference: method, data", [], mode="table").intent == "table"


# ----------------------------------------------------------------------------- named categories
from assistant.answer.query import category_labels, named_categories  # noqa: E402

SEED_CATEGORIES = ["Applications · Robotics", "Applications · Health / Medicine",
                   "Deep Learning · Large Language Models", "Deep Learning · Theory",
                   "General Machine Learning · Causality", "Social Aspects · Security"]
ARXIV_CATEGORIES = ["math.CO", "math.AC, math.AG", "math.PR, math.CO"]


@pytest.mark.parametrize("message,intent,topic,categories", [
    # a category named as one, nothing else asked: the papers of that category
    ("Which papers are in the Applications area?", "summary", "", ["Applications"]),
    ("Give me an overview of the papers in the Large Language Models category.", "summary", "",
     ["Deep Learning · Large Language Models"]),
    ("Which papers are in the Deep Learning · Theory category?", "summary", "", ["Deep Learning · Theory"]),
    ("What is in the deep learning / theory category?", "summary", "", ["Deep Learning · Theory"]),
    ("What's in the Robotics area?", "summary", "", ["Applications · Robotics"]),
    ("List the papers tagged Causality", "summary", "", ["General Machine Learning · Causality"]),
    ("Which papers are in the Applications and Social Aspects areas?", "summary", "",
     ["Applications", "Social Aspects"]),
    ("category: Security", "summary", "", ["Social Aspects · Security"]),
    # a category and a topic: the topic, within the category
    ("Summarize the papers on privacy in the Deep Learning area", "summary", "privacy", ["Deep Learning"]),
    ("Which paper in the Causality category uses federated data?", "question",
     "Which paper uses federated data?", ["General Machine Learning · Causality"]),
    # the request names no topic: the whole collection
    ("Summarize this collection.", "summary", "", []),
    ("What is in this collection?", "summary", "", []),
    ("What topics does this collection cover?", "summary", "", []),
    # words of a label without a word calling them a category: a topic, judged by meaning
    ("What does this collection say about LLM agents and how they model their environment?", "summary",
     "LLM agents and how they model their environment", []),
    ("Summarize the papers on large language models.", "summary", "large language models", []),
    ("Which paper studies robotics benchmarks for embodied agents?", "question",
     "robotics benchmarks for embodied agents?", []),
    # a cue word with no label of this collection after or before it
    ("Which paper estimates the area under the ROC curve?", "question",
     "Which paper estimates the area under the ROC curve?", []),
    # how people write labels: acronyms, separators without spaces, "and" as a slash, a full
    # label with no cue word, the cue in brackets, a full stop right after the label
    ("LLM category only", "summary", "", ["Deep Learning · Large Language Models"]),
    ("list the General ML area", "summary", "", ["General Machine Learning"]),
    ("papers in the health/medicine category", "summary", "", ["Applications · Health / Medicine"]),
    ("Within Social Aspects · Security, anything on backdoors?", "question", "anything on backdoors?",
     ["Social Aspects · Security"]),
    ("what's under General Machine Learning (the area)?", "summary", "", ["General Machine Learning"]),
    ("Please list the papers of the categories Theory and Robotics.", "summary", "",
     ["Deep Learning · Theory", "Applications · Robotics"]),
    ("Can you pull up the Deep Learning / Theory track pls", "summary", "", ["Deep Learning · Theory"]),
    # the collection itself, however asked; a message that points at a paper never is
    ("How many papers are there in total, and roughly what are they about?", "summary", "", []),
    ("hey, new here - what kind of research is in this set?", "summary", "", []),
    ("Tell me more about the survey one.", "summary", "more about the survey one", []),
])
def test_a_category_named_as_such_is_a_filter_and_not_a_topic(message, intent, topic, categories):
    q = parse(message, [], categories=SEED_CATEGORIES)
    assert (q.intent, q.topic, q.categories) == (intent, topic, categories)


@pytest.mark.parametrize("message,categories", [
    ("Which papers are in the math.CO category?", ["math.CO"]),
    ("papers labelled math.AG on curves", ["math.AG"]),
    ("Summarize the math.co category", ["math.CO"]),
    ("Which papers are about math.CO?", []),  # no cue word: a topic
])
def test_a_code_of_a_category_list_names_that_code(message, categories):
    assert parse(message, [], categories=ARXIV_CATEGORIES).categories == categories


def test_every_way_of_naming_a_category_maps_to_filter_values():
    labels = category_labels(SEED_CATEGORIES + ["Reinforcement Learning · Theory"] + ARXIV_CATEGORIES)
    assert labels["theory"] == ["Deep Learning · Theory", "Reinforcement Learning · Theory"]  # a leaf under two areas
    assert labels["applications"] == ["Applications"]  # an area is its own filter value
    assert labels["math.ag"] == ["math.AG"] and "math.ac, math.ag" not in labels


def test_no_categories_no_scope():
    assert named_categories("Which papers are in the Robotics area?", []) is None
    assert parse("Which papers are in the Robotics area?", []).categories == []


@pytest.mark.parametrize("message,intent,topic,unknown", [
    # a label the collection lacks, named as a category: a topic, without the cue word
    ("Which papers are in the NLP area?", "summary", "NLP", "NLP"),
    ("Summarize the papers in the Computer Vision category", "summary", "Computer Vision", "Computer Vision"),
    ("What does the Reinforcement Learning track cover?", "summary", "Reinforcement Learning",
     "Reinforcement Learning"),
    ("List the papers tagged cs.CL", "summary", "cs.CL", "cs.CL"),
    ("The NLP area: anything?", "summary", "NLP", "NLP"),
    ("Papers in the object tracking area?", "summary", "object tracking", "object tracking"),
    ("Hi! Can you list all papers from the Datasets and Benchmarks track? Thanks",
     "summary", "Datasets and Benchmarks", "Datasets and Benchmarks"),
    ("anything labelled stat.ML in here?", "summary", "stat.ML", "stat.ML"),
    ("show me everything tagged q-bio.NC", "summary", "q-bio.NC", "q-bio.NC"),
    ("Everything in Applications · Finance please", "summary", "Applications · Finance", "Applications · Finance"),
    # more asked than the category, lower-case words, a possessive, or a cue word with no label:
    # as written, no note
    ("Which paper in the Vision area uses diffusion?", "question", "Which paper in the Vision area uses diffusion?",
     ""),
    ("Is there evidence that marmosets have a region homologous to Broca's area?", "question",
     "marmosets have a region homologous to Broca's area?", ""),
    ("Which papers are about Broca's area?", "summary", "Broca's area", ""),
    ("Does any abstract mention a Category Theory view of neural networks?", "question",
     "Does any abstract mention a Category Theory view of neural networks?", ""),
    ("Does a paper use the Penn Treebank part-of-speech tags?", "question",
     "Does a paper use the Penn Treebank part-of-speech tags?", ""),
    ("Which paper studies label smoothing and its effect on calibration?", "question",
     "label smoothing and its effect on calibration?", ""),
    ("Any papers on housing prices in the Bay Area?", "question", "Any papers on housing prices in the Bay Area?", ""),
    ("Summarize the papers on neurons in the CA1 area of the hippocampus", "summary",
     "neurons in the CA1 area of the hippocampus", ""),
    ("Which paper estimates the area under the ROC curve?", "question",
     "Which paper estimates the area under the ROC curve?", ""),
    ("Which area does the Top-W paper belong to?", "question", "Which area does the Top-W paper belong to?", ""),
    # a category the collection has is a filter, never an unknown one
    ("Which papers are in the Robotics area?", "summary", "", ""),
])
def test_a_category_the_collection_lacks_is_read_as_a_topic(message, intent, topic, unknown):
    q = parse(message, [], categories=SEED_CATEGORIES)
    assert (q.intent, q.topic, q.unknown_category) == (intent, topic, unknown)


def test_each_part_of_a_question_is_read_with_its_own_topic():
    q = parse("Which paper studies face relighting, and who wrote the one about spatial transcriptomics?", [])
    assert [bool(p.topic) for p in q.parts] == [True, True]
    assert "transcriptomics" in q.parts[1].topic and "wrote" not in q.parts[1].topic
    assert q.parts[1].metadata and not q.parts[0].metadata
    q = parse("Which paper is about Kolmogorov-Arnold Networks, and who wrote it?", [])
    assert [bool(p.topic) for p in q.parts] == [True, False]  # "it" points back: no search of its own
    # a part asking for the record of "it" points back whatever other words it has
    q = parse("Which paper proposes a dataset for relighting portraits, and what year is it from?", [])
    assert [bool(p.topic) for p in q.parts] == [True, False] and q.asks_date
    assert q.parts[0].singular  # "which paper studies X" wants one paper: "studies" is its verb


@pytest.mark.parametrize("message,asked,word", [
    ("Who wrote the Kolmogorov-Arnold network paper and what do they prove?", "what do they prove?", "prove"),
    ("Which paper compresses LLM weights to 2 bits, and how much faster does it decode?",
     "how much faster does it decode?", "decode"),
    ("Which papers study sycophancy after RLHF? What do they propose to fix it?",
     "What do they propose to fix it?", "propose"),
])
def test_a_later_part_whose_subject_is_a_pronoun_asks_about_the_first_parts_paper(message, asked, word):
    q = parse(message, [])
    assert [p.text for p in q.parts][-1] == asked and not q.parts[-1].topic and q.parts[0].topic
    # one question, searched and read whole (the pronoun's part says what the paper is about too)
    assert sum(bool(p.topic) for p in q.parts) == 1 and word in q.topic
    # a part that describes another paper keeps its own search
    q = parse("Which paper studies face relighting, and what does the one about spatial transcriptomics do?", [])
    assert all(p.topic for p in q.parts)


@pytest.mark.parametrize("message", [
    "(1) In the paper on Betti numbers, what's the method? (2) For the orbifold Chern character work, "
    "what theorem do they prove?",
    "Which paper picks tokens by optimal transport, and what's the trick in the data assimilation paper "
    "that lets it reuse any forecast model?",
    "Is there an algorithm for the Zariski closure of a matrix group? Also, what do they find about "
    "Baumslag-Solitar groups?",
])
def test_a_later_part_that_names_its_own_paper_keeps_its_search(message):
    # numbered parts, a part naming its paper, or one that says it is another question
    assert sum(bool(p.topic) for p in parse(message, []).parts) == 2


@pytest.mark.parametrize("message,topic", [
    ("Give me a quick rundown of every paper here, one line each", ""),
    ("Summarize each paper in one sentence", ""),
    ("quick rundown of everything you've got, a line per paper", ""),
    ("summarise the causality work in two sentences per paper", "causality"),
    ("Summarize the work on text-to-SQL, briefly.", "text-to-SQL"),
    ("What is there on agents, as bullet points?", "agents"),
    ("summarise the causality work in two sentences per paper", "causality"),
    ("Summarize the work on text-to-SQL, briefly.", "text-to-SQL"),
])
def test_how_a_summary_should_look_is_not_its_topic(message, topic):
    q = parse(message, [])
    assert q.intent == "summary" and q.topic == topic
    # a count of lines is a format only after "in" or before "each"
    assert "paragraph" in parse("Can a neural model put the sentences of a paragraph back in order?", []).topic


@pytest.mark.parametrize("message", [
    "I need the paper proving every closed prime ideal is accessible. When was it published?",
    "what's the paper that splits road networks with PPO, and what's its year?",
    "Which one has agents poke simulated objects to infer mass? Was that at ICLR or NeurIPS?",
])
def test_a_later_piece_asking_when_it_appeared_is_a_record_question(message):
    # read by the phrase rules or, where they say nothing, by the follow-up model (stubbed here:
    # it reads the date question as one); the first piece keeps its topic
    def read_asks(text):
        return "date" if any(w in text.lower() for w in ("published", "year", "iclr")) else "content"

    q = parse(message, [], read_asks=read_asks)
    assert q.asks_date and len(q.parts) == 2
    assert q.parts[0].topic and not q.parts[0].metadata and q.parts[1].metadata and not q.parts[1].topic
    # what is searched and read for the paper is the first piece, not the date question
    assert q.question == q.parts[0].text and not {"published", "year", "iclr"} & set(q.topic.lower().split())
    assert not parse("Which paper splits road networks with PPO? What does it optimise?", [],
                     read_asks=read_asks).asks_date


def test_anything_else_asks_beyond_the_papers_shown():
    history = [Turn(role="user", content="What is Top-W?"), Turn(role="assistant", content="x [1]", paper_ids=["A"]),
               Turn(role="user", content="And the KAN paper?"), Turn(role="assistant", content="y [1]", paper_ids=["B"])]
    for message in ("Is there anything else on federated learning?", "Any other papers on sampling?",
                    "What else is there about causal discovery?", "And who else works on agents here?"):
        q = parse(message, history)
        assert q.beyond_shown == ["B", "A"] and not q.follow_up and not q.references
    assert not parse("What does the other paper do?", history).beyond_shown  # points back at one shown
    for message in ("Are there others on the competing-risks setting?", "any other work on Hadamard matrices?",
                    "More work on skew braces besides that one?"):
        q = parse(message, history)
        assert q.beyond_shown == ["B", "A"] and not q.references
    assert parse("Does it beat the others?", history).references == ["B"]  # about the paper shown
    # one that points at the topic asked before searches that topic
    for message in ("Who else works on this?", "other groups on the same problem?"):
        q = parse(message, history)
        assert q.beyond_shown == ["B", "A"] and "KAN" in q.topic
    assert "skew" in parse("More work on skew braces besides that one?", history).topic
    assert "spectral" in parse("What else is there that relies on spectral features?", history).topic
    assert not parse("Is it better than other methods?", history).beyond_shown


@pytest.mark.parametrize("message,singular,plural", [
    ("Which paper studies face relighting?", True, False),
    ("Which work studies causal discovery?", True, False),
    ("Which studies look at sycophancy?", False, True),
    ("Any works on federated learning?", False, True),
    ("Is there a method that works without gradients?", False, False),
])
def test_works_and_studies_are_read_as_verbs_after_a_noun(message, singular, plural):
    assert wanted(message) == (singular, plural)


@pytest.mark.parametrize("message,lists", [
    ("Which papers use federated learning?", True),
    ("papers on models of data living on spheres?", True),
    ("Any articles here about Stein's method?", True),
    ("Is there work on differentially private federated learning?", False),
    ("Any work on computing fuel-optimal thrust profiles?", False),
    ("Which paper proposes Top-W?", False),
])
def test_a_question_asking_for_papers_by_that_word_lists_them(message, lists):
    assert parse(message, []).lists_papers is lists


@pytest.mark.parametrize("message", ["How many authors does it have?", "number of authors?",
                                     "so it's a single-author paper?", "How many people are on the author list?"])
def test_an_author_count_is_read_as_one(message):
    q = parse(message, [])
    assert q.counts_authors and q.asks_authors


@pytest.mark.parametrize("message,expected", [
    ("does the second one subsume the first? compare them", ["B", "A"]),
    ("the first one also introduced a metric, right?", ["A"]),
    ("and the last one?", ["B"]),
])
def test_ordinals_after_one_paper_answers_count_through_the_conversation(message, expected):
    # each answer showed one paper: "the second one" is the second paper the conversation showed
    assert parse(message, convo(["A"], ["B"])).references == expected
    # an answer that listed several is still what ordinals count through
    assert parse("the second one", convo(["A"], ["C", "D"], ["B"])).references == ["D"]


@pytest.mark.parametrize("message", ["compare those two", "Which one has the larger dataset?",
                                     "Which of the two gives an explicit stationary distribution?",
                                     "How do they differ?"])
def test_those_two_after_two_one_paper_answers_points_at_both(message):
    history = [Turn(role="user", content="a"), Turn(role="assistant", content="x [1]", paper_ids=["A"]),
               Turn(role="user", content="b"), Turn(role="assistant", content="y [1]", paper_ids=["B"])]
    assert sorted(parse(message, history).references) == ["A", "B"]


@pytest.mark.parametrize("message", ["which is more theoretical? brief on each", "Which is more practical?"])
def test_a_comparison_naming_nothing_compares_the_papers_shown(message):
    q = parse(message, convo(["A"], ["B"]), read_intent=lambda m, r: "compare")
    assert q.intent == "compare" and sorted(q.references) == ["A", "B"] and q.targets == []
    # nothing shown: nothing to point at
    assert parse(message, [], read_intent=lambda m, r: "compare").references == []
    # a comparison that names its sides keeps them
    q = parse("Compare BERT with GPT-2", convo(["A"], ["B"]), read_intent=lambda m, r: "compare")
    assert q.references == [] and q.targets == ["BERT", "GPT-2"]


@pytest.mark.parametrize("message", ["Summarize them", "Make a table of them: method, data",
                                     "Give me an overview of these"])
def test_them_after_one_paper_answers_points_at_each_of_those_papers(message):
    # "What is X?" "And the one on Y?" "Summarize them": both papers, in the order shown
    assert parse(message, convo(["A"], ["B"])).references == ["A", "B"]
    # after an answer that listed several, "them" is that list
    assert parse(message, convo(["A"], ["C", "D"])).references == ["C", "D"]
    # a refusal ends the run: "them" cannot reach past it
    assert parse(message, convo(["A"], ["B"], refused_last=True)).references == ["B"]


@pytest.mark.parametrize("message", ["put these side by side: problem, method, guarantees",
                                     "how are those related, if at all?"])
def test_these_in_a_question_after_one_paper_answers_is_each_of_those_papers(message):
    # read as a question (the intent model is unsure of "side by side"): "these" is still both
    q = parse(message, convo(["A"], ["B"]))
    assert q.intent == "question" and q.references == ["A", "B"]
    # "they" is the last paper (its authors) and "it" the last paper; a refusal ends the run
    assert parse("How large is the dataset they put together?", convo(["A"], ["B"])).references == ["B"]
    assert parse("does it use GPUs?", convo(["A"], ["B"])).references == ["B"]
    assert parse(message, convo(["A"], ["B"], refused_last=True)).references == ["B"]


def test_a_summary_pointing_back_by_a_pronoun_is_read_by_meaning():
    focus = lambda reading: (lambda message: reading)  # noqa: E731
    message = "Put them side by side: what kind of combinatorics is each doing?"
    q = parse(message, convo(["A"], ["B"]), read_intent=lambda m, r: "summary", read_focus=focus("focus"))
    assert q.intent == "summary" and q.references == ["A", "B"] and q.focus == "focus"
    # read as asking something new: "them" is inside the topic, which is searched
    q = parse("Summarize work that trains transformers on PDEs and makes them faster", convo(["A"]),
              read_focus=focus("new"))
    assert q.intent == "summary" and q.references == [] and q.focus is None
    q = parse("Summarize them", convo(["A", "B"]), read_focus=focus(None))  # unsure: the rules decide
    assert q.references == ["A", "B"] and q.focus is None
    # "both" points back exactly: about the two shown unless read as new
    for message in ("summarize them both, 3 bullets each", "Summarize both, and which relies on X?"):
        q = parse(message, convo(["A"], ["B"]), read_focus=focus(None))
        assert sorted(q.references) == ["A", "B"] and q.focus == "focus"
    # what is asked of one paper shown is a question about it, whatever the intent model read
    q = parse("How large is the dataset they put together, and who are the authors?", convo(["A"]),
              read_intent=lambda m, r: "summary", read_focus=focus("focus"))
    assert q.intent == "question" and q.references == ["A"] and q.asks_authors
    assert q.unconfirmed_summary  # the planner's model confirms the paper answers it, else a summary


@pytest.mark.parametrize("message", ["Which variables get bisected at each iteration?",
                                     "any results on mnist?",
                                     "what does the system converge to in the large-time limit?"])
def test_a_question_naming_no_paper_after_a_one_paper_answer_may_follow_up_on_it(message):
    assert parse(message, convo(["A"])).follow_up == ["A"]
    assert parse(message, []).follow_up == []  # nothing shown: a new question


@pytest.mark.parametrize("message,history", [
    ("Which paper studies face relighting?", convo(["A"])),  # asks for a paper
    ("Any papers on data assimilation?", convo(["A"])),
    ("What data does it use?", convo(["A"])),  # "it": a reference, resolved as such
    ("Which variables get bisected at each iteration?", convo(["A", "B"])),  # which of the two?
    ("Which variables get bisected at each iteration?", convo(["A"], refused_last=True)),
    ("Summarize the papers on causal inference.", convo(["A"])),
])
def test_no_follow_up_when_the_message_asks_for_papers_refers_to_one_or_the_last_answer_was_not_one_paper(
        message, history):
    assert parse(message, history).follow_up == []


def test_what_a_follow_up_asks_about_its_paper_is_read_by_meaning_where_the_rules_read_content():
    """"solo work or joint?" names no author word the rules know: the fitted reading
    (`read_asks`) says it counts authors, and it is about the paper the last answer cited. Where
    the reading is unsure, the phrase rules decide."""
    q = parse("solo work or joint?", convo(["A"]), read_asks=lambda m: "authors_count")
    assert (q.asks_authors, q.counts_authors, q.references) == (True, True, ["A"])
    assert [p.topic for p in q.parts] == [""]  # nothing to retrieve: the record answers it
    q = parse("whose work is that", convo(["A"]), read_asks=lambda m: "authors")
    assert (q.asks_authors, q.counts_authors, q.references) == (True, False, ["A"])
    q = parse("any results on mnist?", convo(["A"]), read_asks=lambda m: None)  # unsure: content
    assert not q.asks_authors and q.follow_up == ["A"]

    def never(message):
        raise AssertionError(f"read_asks consulted for {message!r}")

    # a question for a paper, or with nothing shown before, is not about a paper in focus
    assert not parse("Which paper is by Sriraam Natarajan?", convo(["A"]), read_asks=never).asks_authors
    assert not parse("solo work or joint?", [], read_asks=never).asks_authors
    # unsure: the rules; sure, the reading decides, also against them ("by whom" of an earlier result)
    assert parse("how many authors does it have?", convo(["A"]), read_asks=lambda m: None).counts_authors
    q = parse("was the N=1 case already done? by whom?", convo(["A"]), read_asks=lambda m: "content")
    assert not q.asks_authors and q.follow_up == ["A"] and q.parts[0].topic


@pytest.mark.parametrize("message", ["Which paper proposes a first-order method for saddle points?",
                                     "does it use second-order information?",
                                     "how many sentences per second on a CPU?",
                                     "is there a second paper on this?",
                                     "Second one: the paper that maps moss with drones"])
def test_an_ordinal_inside_a_word_a_rate_or_a_second_paper_points_at_no_shown_paper(message):
    q = parse(message, convo(["A", "B"]))
    assert q.reference != "ordinal" and not q.unresolved and "B" not in q.references
    assert parse("and the second one?", convo(["A", "B"])).references == ["B"]  # still an ordinal


def test_they_in_a_comparison_means_both_papers_shown_also_beside_the_other():
    # "one …, the other …" describes the two; "they" points at both answers' papers
    q = parse("how do they compare? one seems algebraic, the other inferential", convo(["A"], ["B"]),
              "compare")
    assert sorted(q.references) == ["A", "B"]
    q = parse("how do both of them differ from a plain decoder?", convo(["A"], ["B"]), "compare")
    assert sorted(q.references) == ["A", "B"]
    # "it" is one paper, compared with a side the message names
    q = parse("compare it with MossMap", convo(["A"], ["B"]), "compare")
    assert q.references == ["B"] and q.targets == ["MossMap"]


def test_two_papers_described_in_sentences_then_pointed_at_are_compared():
    message = ("One paper forecasts lichen growth from satellite images. The other maps moss cover "
               "with drones. How do their approaches differ?")
    q = parse(message, [])
    assert q.intent == "compare" and len(q.side_sentences) == 2
    # in a conversation, "their" and "the other" mean the papers described, not those shown
    q = parse(message, convo(["A"], ["B"]))
    assert q.intent == "compare" and q.references == [] and len(q.side_sentences) == 2
    # questions of their own, one of them "which one …", are parts, not sides
    q = parse("three questions:\n- which paper forecasts lichen growth from satellites?\n- which "
              "paper maps moss cover with drones?\n- which one counts ferns in photos?", [])
    assert q.intent == "question" and len(q.parts) == 3
    # one sentence describing one paper and a question about it stays a question
    assert parse("One paper forecasts lichen growth from satellites. What data does it use?", []).intent == "question"


@pytest.mark.parametrize("message,against", [
    # what A is measured against: maybe a work from elsewhere, not asserted to be here
    ("How does the dual autoencoder for lichen photos compare with MossGAN's cycle approach?",
     "MossGAN's cycle"),
    ("How does LichenNet compare with MossMap?", "MossMap"),
    # described as a paper, or another form: nothing
    ("How does the paper that forecasts lichen growth compare with the one that maps moss?", ""),
    ("Compare LichenNet with MossMap", ""),
])
def test_the_side_a_comparison_measures_against(message, against):
    assert parse(message, [], "compare").compared_against == against


@pytest.mark.parametrize("message,decides", [
    ("Compare Top-W with Verbalized Sampling", True),
    ("How does DualGraph differ from Meta Context Engineering?", True),
    ("What is the difference between KAN and MLP training?", True),
    ("What do the two papers have in common?", True),
    # "differs", "differently", "finite difference" inside a question describe, not compare:
    # the intent model reads those messages
    ("A classifier that stays safe if the true law differs from my sample: has this been worked out?", False),
    ("compact finite difference scheme for a damped Timoshenko beam with error estimates?", False),
    ("contextual bandit where similar people were treated differently", False),
    # nor does "comparing" describing a paper or a practice
    ("Is there a result comparing the number of conjugacy classes of homomorphisms?", False),
    ("Reporting only the luckiest run when comparing network designs is misleading; is there a fix?", False),
])
def test_the_rules_decide_a_comparison_only_when_it_is_asked_for(message, decides):
    from assistant.answer.query import rules_then_model

    assert detect_intent(message) == "compare"
    # asked for: the rules' comparison stands unless the model is near certain of another
    # reading; only a weak word: the model's reading, however unsure
    assert rules_then_model(message, "compare", "question", 0.5, 0.75, 0.97) == ("compare" if decides else "question")


def test_a_comparison_only_a_weak_word_suggests_is_what_the_model_reads_at_any_probability():
    from assistant.answer.query import rules_then_model

    weak = "Teaching research: instead of comparing two lesson schedules, can a few students each do?"
    assert rules_then_model(weak, "compare", "question", 0.52, 0.75) == "question"
    assert rules_then_model(weak, "compare", "compare", 0.40, 0.75) == "compare"
    asked = "Compare Top-W with Verbalized Sampling"
    assert rules_then_model(asked, "compare", "question", 0.9, 0.75, 0.97) == "compare"  # the rules decide
    # where the rules read a question, the model's reading needs its confidence
    plain = "Which paper studies backdoor attacks?"
    assert rules_then_model(plain, "question", "summary", 0.6, 0.75) == "question"
    assert rules_then_model(plain, "question", "summary", 0.8, 0.75) == "summary"


def test_the_rules_reading_stands_unless_the_model_is_near_certain_of_another():
    from assistant.answer.query import rules_then_model

    inside = "Given samples from two conditions, e.g. tumour vs normal, can I infer which links changed?"
    asked = "Real NVP vs Glow: what did Glow change relative to Real NVP's coupling layers?"
    assert detect_intent(inside) == detect_intent(asked) == "compare"
    assert rules_then_model(inside, "compare", "question", 0.999, 0.75, 0.97) == "question"
    assert rules_then_model(asked, "compare", "question", 0.77, 0.75, 0.97) == "compare"
    asked = "Summarize what the collection says about backdoor attacks."
    assert rules_then_model(asked, "summary", "question", 0.9, 0.75, 0.97) == "summary"
    assert rules_then_model(asked, "summary", "question", 0.98, 0.75, 0.97) == "question"


@pytest.mark.parametrize("message,asked", [
    # a noun that names a thing inside the question, not the answer asked for: the model reads it
    ("I want an agent that writes long survey-style reports from web searches. Has anyone built that?", False),
    ("Does the first paper report summary statistics for its simulations, or only plots?", False),
    ("An accessible overview of the recent resolution of the three-dimensional Kakeya problem.", False),
    # asked for in so many words: the rules' reading stands unless the model is near certain
    ("main themes?", True),
    ("Summarize the papers on federated learning.", True),
    ("Which papers use graph networks, and how do their designs differ?", True),
])
def test_a_summary_only_a_noun_suggests_is_what_the_model_reads_at_any_probability(message, asked):
    from assistant.answer.query import rules_then_model

    assert detect_intent(message) == "summary"
    assert rules_then_model(message, "summary", "question", 0.6, 0.75, 0.97) == ("summary" if asked else "question")
    assert rules_then_model(message, "summary", "summary", 0.5, 0.75, 0.97) == "summary"


@pytest.mark.parametrize("message,points", [
    ("compare both", True),
    ("what data is in both papers?", True),
    ("compare both architectures", True),
    ("Both seem to be about parallelism.", True),
    ("Both of these try to measure accuracy and calibration", True),
    # the correlative "both X and Y", and a determiner after a preposition, point nowhere
    ("a reward model learned from both expert demos and human preferences", False),
    ("the decoder that expands the sequence in both directions?", False),
])
def test_both_points_at_shown_papers_only_as_a_pronoun(message, points):
    from assistant.answer.query import pointers_to_both

    assert bool(pointers_to_both(message)) is points


def test_a_new_description_with_both_inside_is_not_about_the_papers_shown():
    history = [Turn(role="user", content="Which paper retrieves a training example and edits it?"),
               Turn(role="assistant", content="… [1]", paper_ids=["p1"])]
    q = parse("And the decoder that starts from a middle word and expands the sequence in both directions?", history)
    assert q.references == [] and q.reference == ""


@pytest.mark.parametrize("message,phrases,names", [
    # a capitalised phrase is a name; the sentence's first word is capitalised anyway
    ("Is DCN+ just the Dynamic Coattention Network with an RL term on top?",
     ["Dynamic Coattention Network"], ["DCN+", "RL"]),
    ("Scalable Private Learning with PATE: what changes from the first PATE?",
     ["Private Learning with PATE"], ["PATE", "PATE"]),
    ("Do the Verbalized Sampling paper and Procaccia's analysis agree?", ["Verbalized Sampling"], []),
    # "and" joins two names, never one
    ("Would Verbalized Sampling and Top-W give the same outputs?", ["Verbalized Sampling"], ["Top-W"]),
    # acronyms alone, lower case, or one capitalised word: no phrase
    ("What does the GAN RL setup of pixelcnn++ change for Adam?", [], ["GAN", "RL"]),
])
def test_capitalised_phrases_and_named_tokens_are_read_as_names(message, phrases, names):
    q = parse(message, [])
    assert q.phrases == phrases
    assert q.names == names


def test_which_one_points_at_two_papers_shown_and_at_none_after_one():
    one = [Turn(role="user", content="Is there a skein theory for the Links-Gould polynomial?"),
           Turn(role="assistant", content="…", paper_ids=["a"])]
    # after one paper shown, "which one is that" asks for a new paper: no reference
    q = parse("Someone conjectured the polynomial bounds the genus. which one is that", one)
    assert (q.reference, q.references) == ("", [])
    two = one + [Turn(role="user", content="And the conjecture paper?"),
                 Turn(role="assistant", content="…", paper_ids=["b"])]
    q = parse("which one came first?", two)
    assert q.reference == "both" and sorted(q.references) == ["a", "b"]


def test_a_summary_word_inside_questions_for_one_paper_each_names_a_paper():
    # "the survey" is a paper here: two questions, each for one paper or its authors
    q = parse("who wrote the survey explaining the proof of the Kakeya conjecture, and which "
              "paper builds barrier-function controllers without a model?", [])
    assert q.intent == "question" and len(q.parts) == 2
    # a request for a survey stays one
    assert parse("Give me a survey of the Kakeya papers, and which one is the newest?", []).intent == "summary"


@pytest.mark.parametrize("message,intent", [
    # how a topic's papers differ: a summary of them
    ("What does this collection have on capsule networks, and how do the different capsule papers "
     "differ from each other?", "summary"),
    ("Which papers build CNNs for data on a sphere? How do their constructions differ?", "summary"),
    # two sides after all
    ("the two Littlewood-Offord papers — how do their approaches differ?", "compare"),
    ("How does the survey of the Kakeya proof differ from Wolff's hairbrush paper?", "compare"),
    ("Which papers compare KANs with MLPs, and how do they differ?", "compare"),
])
def test_how_a_topics_papers_differ_is_a_summary_of_them(message, intent):
    assert detect_intent(message) == intent


def test_a_topic_clause_that_points_back_offers_the_other_clauses():
    assert topic_reading("I'm new to federated learning. What's in here that touches it?") == (
        "touches", ["federated learning"])
    # no pronoun: the clause read is the topic, with nothing else to weigh
    assert topic_reading("Summarize the papers on causal inference. A paragraph is fine.") == (
        "causal inference", [])


def test_the_other_requests_are_offered_but_not_who_is_asking():
    # the clause of most words is an aside: the planner takes the first other clause with papers
    # when it finds none
    assert topic_reading("what's in here about Kakeya sets? (Besicovitch-type sets with a segment in every "
                         "direction) - any dimension, finite field versions, surveys") == (
        "dimension, finite field versions, surveys",
        ["Kakeya sets", "(Besicovitch-type sets with a segment in every direction)"])
    # who is asking is no topic to fall back on: nothing on the request is nothing
    assert topic_reading("I work on protein folding. What's here on quantum error correction?") == (
        "quantum error correction", [])


def test_a_clause_asking_for_the_whole_collection_offers_it_as_a_topic():
    # "" is the whole collection, for the planner to take when the topic clause finds nothing
    topic, others = topic_reading("could you sort every paper in this collection into rough themes? only "
                                  "short names under each heading please")
    assert topic == "only short names under each heading" and others[-1] == ""
    assert topic_reading("What's in this collection? I mostly care about federated learning.") == (
        "mostly care about federated learning", [""])
    for message in ("cluster the papers in this library by theme", "group the papers here by theme"):
        q = parse(message, [])
        assert q.intent == "summary" and q.topic == ""


def test_what_the_collection_offers_is_a_request_and_the_asker_names_the_topic():
    message = ("I'm worried about some workers in distributed SGD sending garbage or adversarial "
               "gradients. What does this collection offer?")
    assert detect_intent(message) == "summary"
    assert topic_of(message) == "workers in distributed SGD sending garbage or adversarial gradients"


# ---------------------------------------------------------------- what later stages read of the message

def test_the_query_carries_what_later_stages_read_of_the_message():
    # the planner and the engine read these fields, never the message's words themselves
    said = []
    q = parse("Does Zywina's theorem contain Koymans and Pagano's result? Compare Top-W with it.", [],
              authors=lambda message: said.append(message) or ["david zywina"])
    assert said == ["Does Zywina's theorem contain Koymans and Pagano's result? Compare Top-W with it."]
    assert q.authors == ["david zywina"]
    assert q.words[:3] == ["does", "zywina's", "theorem"]
    # a claim may use the question's words but not its names (Top-W, Koymans)
    assert {"theorem", "result"} <= q.allowance and not {"top-w", "koyman", "koymans"} & q.allowance
    assert q.question == q.message  # no part left out: the whole message is what is read


@pytest.mark.parametrize("message,target,described", [
    ("more like Top-W?", "Top-W", False),
    ("anything else like this?", "", False),
    # read as a request for neighbours by the intent model, no phrase says so: the whole
    # message describes the paper
    ("got papers along the lines of the neural Hawkes process?",
     "got papers along the lines of the neural Hawkes process", True),
])
def test_what_a_request_for_neighbours_names(message, target, described):
    q = parse(message, [], read_intent=lambda message, rules: "similar")
    assert (q.intent, q.similar_target, q.similar_described) == ("similar", target, described)
