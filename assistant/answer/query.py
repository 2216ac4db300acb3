"""What a message asks: its intent and, for summaries, the topic stripped of the request's words.

"Summarize what this collection says about X", "What's in here on X?", "Give me an overview of
X" all reduce to X before retrieval: the words that make the request ("summarize",
"collection", "says", "papers") never count as topic terms.
"""
from __future__ import annotations

import re

from ..types import Intent

COMPARE_RE = re.compile(
    r"\b(compare|comparing|comparison|contrast|versus|vs\.?|differ|differs|different from|"
    r"difference|differences|how does .+ relate to|which is better)\b", re.I)
SUMMARY_RE = re.compile(
    r"\b(summari[sz]e|summary|summaries|overview|survey|landscape|review of|rundown|"
    r"what (does|do) (this|the) (collection|corpus|library|papers?) (say|have|contain|cover)|"
    r"what do the papers say|what (do|does) (we|it|you) have (on|about)|"
    r"what'?s (in )?(here|there|in (this|the) (collection|corpus|library)) (on|about)|"
    r"what is (in )?(here|there) (on|about)|what (work|research|papers) (is|are) (there|here) (on|about)|"
    r"themes?|which papers are (in|about|on|from)|what papers are (in|about|on)|"
    r"list (the |all )?papers|all (the )?papers (on|about))\b", re.I)

# Words that make a request for a summary rather than name its topic.
REQUEST_WORDS = set("""
summarize summarise summarizing summary summaries overview overviews survey review rundown recap
give gave me us an a the what what's whats which is are was does do did this these that those
collection corpus library here there in on about of regarding concerning around into for
say says said have has contain contains cover covers covered tell show list all any every
papers paper work works research studies study literature articles findings results
please can could would you i we want like know brief short quick high-level general some
main key overall everything anything written published available
""".split())

POLITE_RE = re.compile(r"^\s*(please|can you|could you|would you|i'd like|i would like|i want)\b[\s,]*", re.I)


def detect_intent(message: str) -> Intent:
    if COMPARE_RE.search(message):
        return "compare"
    if SUMMARY_RE.search(message):
        return "summary"
    return "question"


def topic_of(message: str) -> str:
    """The topic of a summary request: the message without its leading and trailing request
    words ("Summarize what this collection says about causal inference." → "causal inference")."""
    text = POLITE_RE.sub("", message.strip())
    words = re.findall(r"[^\s]+", text)
    start, end = 0, len(words)
    while start < end and _bare(words[start]) in REQUEST_WORDS:
        start += 1
    while end > start and _bare(words[end - 1]) in REQUEST_WORDS:
        end -= 1
    topic = " ".join(words[start:end]).strip(" ,;:.?!\"'“”")
    return topic or message.strip().rstrip("?.! ")


def _bare(word: str) -> str:
    return word.strip(" ,;:.?!\"'“”()").lower().replace("’", "'")
