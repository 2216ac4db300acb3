"""The cue words of an abstract's aspects, shared by the comparison table (compose.py) and the
literature table (table.py): what a sentence about the problem, the method, the data, the
evidence or the result usually says. One list, so the two tables read abstracts the same way."""
from __future__ import annotations

import re

ASPECT_CUES = {
    "problem": re.compile(r"\b(however|yet|challeng|problem|limit|bottleneck|remains|difficult|lack|"
                          r"vulnerab|fail(?:s|ed|ing)?\b|suffer|costly|expensive|unclear|open question)", re.I),
    # what the paper does, broadly (a comparison's "Approach" row: "we study …", "in this paper …")
    "approach": re.compile(r"\b(we (propose|present|introduce|develop|design|leverage|view|formul|"
                           r"argue|analy[sz]e|study|address|derive|build)|this paper|in this (work|paper)|"
                           r"our (method|approach|framework))", re.I),
    # the technique proposed, narrowly (a literature table's "method" column: a sentence that
    # only says "in this paper we study X" names the topic, not the method)
    "method": re.compile(r"\b(we (propose|present|introduce|develop|design|leverage|formul|derive|"
                         r"build)|our (method|approach|framework|model|algorithm)|this (paper|work) "
                         r"(proposes|presents|introduces))", re.I),
    "data": re.compile(r"\b(datasets?|benchmarks?|corpus|corpora|real-world|synthetic|simulated|"
                       r"simulations?|experiments? (on|across|with)|evaluat\w*\b[^.]{0,30}?\b(on|across)|"
                       r"trained on|tested on|samples|images|patients|subjects)\b", re.I),
    "evidence": re.compile(r"\b(experiment|evaluat|benchmark|dataset|simulat|empiric|validat|"
                           r"test(ed|s)? on|across \w+ (models|tasks|datasets))", re.I),
    "result": re.compile(r"(outperform|achiev|improv|reduc|speed-?up|\d+(\.\d+)?\s?%|"
                         r"state-of-the-art|we (show|find|prove)|demonstrat|surpass|gains?\b)", re.I),
}
