"""Turns at a model: at most ``capacity`` generations at once, the rest wait in arrival order,
and each waiter can tell how many are ahead of it (what the page and the API show while a
request waits: "waiting for the model (2 ahead)").

    turns = Turns(capacity=1)
    for ahead in turns.wait(timeout=120):   # yields while waiting: requests ahead of this one
        report(ahead)
    try: ... generate ...
    finally: turns.release()

The local backend has one (capacity 1: llama-cpp-python generates one sequence at a time); the
llama-server child has one of its ``--parallel`` slots, so that a request beyond the slots waits
here, visibly, instead of inside the server.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Iterator


class TurnTimeout(Exception):
    """No turn within the time allowed."""


class Turns:
    def __init__(self, capacity: int = 1, poll: float = 0.5):
        self.capacity = max(1, int(capacity))
        self.poll = poll
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._active = 0

    # -- state
    @property
    def active(self) -> int:
        return self._active

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def locked(self) -> bool:
        """All slots taken (for capacity 1: someone is generating)."""
        return self._active >= self.capacity

    def _ahead(self, ticket: object) -> int:
        """Requests served before this ticket: those waiting ahead of it, plus one if every slot
        is busy (the one that must finish first)."""
        return self._queue.index(ticket) + (1 if self._active >= self.capacity else 0)

    def _my_turn(self, ticket: object) -> bool:
        return self._active < self.capacity and self._queue[0] is ticket

    # -- taking a turn
    def wait(self, timeout: float) -> Iterator[int]:
        """Take a turn, in arrival order. A generator: runs to completion once the turn is
        taken, yielding the number ahead (at first, then whenever it changes) while it waits.
        Raises :class:`TurnTimeout` after ``timeout`` seconds without a turn (the ticket is
        withdrawn). Closing it early withdraws the ticket as well."""
        ticket = object()
        deadline = time.monotonic() + timeout
        taken = False
        with self._cond:
            self._queue.append(ticket)
        try:
            last = None
            while True:
                with self._cond:
                    if self._my_turn(ticket):
                        self._queue.popleft()
                        self._active += 1
                        taken = True
                        return
                    ahead = self._ahead(ticket)
                if ahead != last:
                    last = ahead
                    yield ahead  # outside the condition: the caller may take its time
                with self._cond:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TurnTimeout()
                    if not self._my_turn(ticket):
                        self._cond.wait(min(self.poll, remaining))
        finally:
            if not taken:
                with self._cond:
                    try:
                        self._queue.remove(ticket)
                    except ValueError:
                        pass
                    self._cond.notify_all()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Lock-style: take a turn without reporting the wait (``threading.Lock`` semantics)."""
        if not blocking:
            timeout = 0.0
        elif timeout is None or timeout < 0:
            timeout = float("inf")
        try:
            for _ in self.wait(timeout):
                pass
        except TurnTimeout:
            return False
        return True

    def release(self) -> None:
        with self._cond:
            if self._active <= 0:
                raise RuntimeError("release of a turn not taken")
            self._active -= 1
            self._cond.notify_all()
