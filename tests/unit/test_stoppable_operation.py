"""``stoppable``: a watch driven by the synchronous transport ends at its next item once asked to."""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

import pytest

from tfjob_provider.kube.effects import Emit, NextLine, Sleep, stoppable


def endless_watch(seen: list[Any]) -> Generator[Any, Any, None]:
    while True:
        item = yield NextLine()
        seen.append(item)
        yield Emit(item)


def test_effects_and_results_pass_through_until_stopped() -> None:
    seen: list[Any] = []
    stopping = threading.Event()
    wrapped = stoppable(endless_watch(seen), stopping)
    assert isinstance(next(wrapped), NextLine)
    assert wrapped.send("line-1") == Emit("line-1")
    assert isinstance(wrapped.send(None), NextLine)
    stopping.set()
    with pytest.raises(StopIteration):
        wrapped.send("line-2")  # the result that arrives after the stop request ends it
    assert seen == ["line-1"]


def test_errors_reach_the_operation_unless_stopping() -> None:
    def retrying() -> Generator[Any, Any, str]:
        try:
            yield NextLine()
        except ValueError:
            yield Sleep(1.0)
        return "done"

    stopping = threading.Event()
    wrapped = stoppable(retrying(), stopping)
    next(wrapped)
    assert wrapped.throw(ValueError("stream broken")) == Sleep(1.0)
    with pytest.raises(StopIteration) as finished:
        wrapped.send(None)
    assert finished.value.value == "done"

    wrapped = stoppable(retrying(), stopping)
    next(wrapped)
    stopping.set()
    with pytest.raises(StopIteration):
        wrapped.throw(ValueError("stream broken"))


def test_closing_the_wrapper_closes_the_operation() -> None:
    closed = []

    def watch() -> Generator[Any, Any, None]:
        try:
            while True:
                yield NextLine()
        finally:
            closed.append(True)

    wrapped = stoppable(watch(), threading.Event())
    next(wrapped)
    wrapped.close()
    assert closed == [True]
