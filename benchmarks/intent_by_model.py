"""Would the packaged model read intents better where the intent model is unsure? A measurement,
not used by the assistant.

    .venv/bin/python benchmarks/intent_by_model.py STORE benchmarks/intent/test_2.jsonl [...]

For each labelled message: the shipped reading (the phrase rules where they decide, then the
intent model at its fitted confidence); the packaged model's own reading (the probability of each
intent's name as the first word of its reply to the prompt below, one forward pass); and the
combination "rules where they decide, the intent model where it is confident, else the packaged
model". STORE is any store (the model is loaded through an assistant on it). The prompt lives
here rather than in prompts/ because nothing in the assistant uses it.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.answer.intent import default_model, message_vectors  # noqa: E402
from assistant.answer.query import ASKS_TO_COMPARE_RE, detect_intent, plain, rules_then_model  # noqa: E402
from assistant.config import Settings, load_settings  # noqa: E402
from assistant.library import PaperAssistant  # noqa: E402

OPTIONS = ["question", "summary", "compare", "similar", "table"]
PROMPT = """A researcher writes to an assistant that answers from a collection of paper abstracts \
(earlier in the chat it may have shown some papers):
"{message}"
What does the researcher ask for?
- question: a fact or detail that one or a few particular papers answer
- summary: an overview of a topic, or of the papers shown
- compare: particular papers set against each other (differences, which is better, side by side)
- similar: more papers like a given one
- table: a table of papers with columns
Answer with one word: question, summary, compare, similar or table."""


def score(path: Path, choose, model, confidence: float, overrule: float) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    n, ok = Counter(), {"shipped": Counter(), "model": Counter(), "combined": Counter()}
    asked, t0 = 0, time.perf_counter()
    for row in rows:
        msg = plain(row["message"])
        p = model.proba(message_vectors([msg]), [msg])[0]
        best = int(p.argmax())
        rules = detect_intent(msg)
        shipped = rules_then_model(msg, rules, model.labels[best], float(p[best]), confidence, overrule)
        probs = choose([{"role": "user", "content": PROMPT.format(message=msg)}], OPTIONS)
        by_model = OPTIONS[max(range(len(OPTIONS)), key=lambda i: probs[i])]
        # the rules name an intent (a comparison only when asked for in so many words), or the
        # intent model is confident: the shipped reading is kept
        named = rules != "question" and (rules != "compare" or ASKS_TO_COMPARE_RE.search(msg))
        if named or p[best] >= confidence:
            combined = shipped
        else:
            combined, asked = by_model, asked + 1
        gold = row["intent"]
        n[gold] += 1
        for name, got in (("shipped", shipped), ("model", by_model), ("combined", combined)):
            ok[name][gold] += got == gold
    print(f"{path.name} ({len(rows)} messages; the packaged model decided {asked} in the combination; "
          f"{(time.perf_counter() - t0) / len(rows):.2f} s a message)")
    for name, right in ok.items():
        per = ", ".join(f"{k} {right[k]}/{n[k]}" for k in sorted(n))
        print(f"  {name:9s} {sum(right.values())}/{len(rows)}  ({per})")


def main() -> int:
    store, *paths = sys.argv[1:]
    pa = PaperAssistant(load_settings(llm_backend="local", store_dir=store))
    choose = pa.engine._get_llm([]).choice_probabilities
    model = default_model()
    for path in paths:
        score(Path(path), choose, model, model.provenance["confidence"], Settings().intent_overrule)
    return 0


if __name__ == "__main__":
    sys.exit(main())
