"""Where the test suite's time goes: a pytest plugin that records each test's wall time and the
CPU seconds of the pytest process and of its reaped child processes (servers, model servers).

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -q -p no:cacheprovider -p pytest_cpu [-m ...]

At the end it prints the totals and the test files by wall time; with $PYTEST_CPU_OUT set, it
also writes every test's row there (JSON: node id, wall, CPU in pytest, CPU in children). A child's CPU is counted when
it is reaped, so a server started by a fixture counts toward the test that stops it. Run it on
a quiet machine: the suite is CPU-bound on two cores (docs/benchmarks.md).
"""
from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict

import pytest

_rows: list[tuple[str, float, float, float]] = []


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children = _cpu()
    start = time.perf_counter()
    yield
    own_after, children_after = _cpu()
    _rows.append((item.nodeid, time.perf_counter() - start, own_after - own, children_after - children))


def pytest_terminal_summary(terminalreporter):
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, wall, own, children in _rows:
        f = files[nodeid.split("::")[0]]
        f[0] += wall
        f[1] += own
        f[2] += children
        f[3] += 1
    write = terminalreporter.write_line
    write(f"tests {len(_rows)}: wall {sum(r[1] for r in _rows):.0f} s, CPU {sum(r[2] for r in _rows):.0f} s "
          f"in pytest + {sum(r[3] for r in _rows):.0f} s in child processes")
    for name, (wall, own, children, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:20]:
        write(f"  {name:<36} {n:>4} tests  wall {wall:6.1f} s  CPU {own:6.1f} s + {children:6.1f} s")
    out = os.environ.get("PYTEST_CPU_OUT")
    if out:  # never a file left in the checkout unasked
        with open(out, "w") as f:
            json.dump(_rows, f)
