"""Gradio without its stub rewrite: importing Gradio regenerates the `.pyi` type stubs of each of
its own components (`gradio.component_meta.create_or_modify_pyi`, run by the metaclass of every
component class) by parsing their sources, about 1 s of every `serve` start on two cores, and
no setting turns it off. The stubs are for Gradio's own developers' editors; the package ships
them already. This import hook replaces that function, once `gradio.component_meta` has been
executed, by one that skips Gradio's own components and still writes stubs for anyone else's
(a custom component's author expects them). Installed by `assistant/__init__.py`, before
anything imports Gradio; it imports nothing itself.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

TARGET = "gradio.component_meta"


class _SkipOwnStubs(importlib.abc.MetaPathFinder):
    """Finds `gradio.component_meta` as the normal path finder would, and patches it once loaded."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            rewrite = module.create_or_modify_pyi

            def create_or_modify_pyi(component_class, class_name, events):
                if not component_class.__module__.startswith("gradio."):
                    rewrite(component_class, class_name, events)

            module.create_or_modify_pyi = create_or_modify_pyi

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Put the hook first on the import path, once, unless Gradio is already imported."""
    if TARGET in sys.modules or any(isinstance(f, _SkipOwnStubs) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _SkipOwnStubs())
