"""Model prose → checked, cited sentences, released one at a time as they complete.

The model's deltas are buffered until a sentence is complete; the sentence is checked against
the papers its markers name (ground.Grounder) and only then released, already numbered as the
reader sees it. So what streams to the page, the terminal and an OpenAI client is the checked
answer itself, with its [n] markers, and the final text is exactly what was streamed.
"""
from __future__ import annotations

from .evidence import Source
from .ground import GroundedText, Grounder, ends_sentence, split_answer
from .markers import MARKER_RE, parse_markers


class Numbering:
    """This turn's source numbers → the numbers a reader sees, in order of first appearance."""

    def __init__(self, sources: list[Source]):
        self.known = {s.n for s in sources}
        self.order: list[int] = []

    def apply(self, text: str) -> str:
        """Rewrite the markers of `text` (registering sources seen for the first time)."""
        def shown(m) -> str:
            nums = [n for n in dict.fromkeys(parse_markers(m.group(1))) if n in self.known]
            for n in nums:
                if n not in self.order:
                    self.order.append(n)
            return "".join(f"[{self.order.index(n) + 1}]" for n in nums)

        return MARKER_RE.sub(shown, text)


class CheckedProse:
    """Feed the model's deltas; get back the sentences that passed the check."""

    def __init__(self, grounder: Grounder, sources: list[Source], allowed: frozenset[str] = frozenset()):
        self.grounder = grounder
        self.by_n = {s.n: s for s in sources}
        self.allowed = allowed
        self.buffer = ""
        self.result = GroundedText()

    def feed(self, delta: str) -> list[str]:
        """Sentences completed by this delta that passed (a sentence is complete once the next
        one has begun, so a marker written after its full stop still belongs to it)."""
        self.buffer += delta
        sentences = split_answer(self.buffer)
        if len(sentences) < 2:
            return []
        self.buffer = sentences[-1]
        return self._checked(sentences[:-1], finished=True)

    def close(self) -> list[str]:
        """The last sentence, if it was finished (a sentence cut off by the token limit is not)."""
        rest, self.buffer = split_answer(self.buffer), ""
        return self._checked(rest, finished=False)

    def _checked(self, sentences: list[str], finished: bool) -> list[str]:
        out = []
        for sentence in sentences:
            v = self.grounder.verdict(sentence, self.by_n, finished or ends_sentence(sentence), self.allowed)
            self.result.add(v)
            if v.kept:
                out.append(v.text())
        self.result.text = " ".join(filter(None, [self.result.text, *out]))
        return out

