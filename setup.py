"""Build step: the wheel carries the top-level `prompts/` folder (the one source of the prompt
templates) as `assistant/prompts/`, where assistant/prompts.py finds it once installed.
Everything else about the package is in pyproject.toml."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROMPTS = Path(__file__).resolve().parent / "prompts"


class BuildWithPrompts(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads prompts/ in place
        target = Path(self.build_lib) / "assistant" / "prompts"
        self.mkpath(str(target))
        for prompt in sorted(PROMPTS.glob("*.txt")):
            self.copy_file(str(prompt), str(target / prompt.name))


setup(cmdclass={"build_py": BuildWithPrompts})
