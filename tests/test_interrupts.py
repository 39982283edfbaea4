"""Ctrl-C between two steps of a live display (index, rebuild, watch, audit deep, eval): the bar is
started and stopped whole, so the terminal gets its cursor back and the command's own stop message
stays. Each Ctrl-C is raised from inside the step it must not cut (deterministic, no timing)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest
from rich.console import Console
from rich.live import Live, _RefreshThread

from vaultlens.cli.render import RichProgress
from vaultlens.errors import Cancelled


@pytest.fixture
def cursor(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every show/hide of the cursor on any console, in order."""
    calls: list[bool] = []
    real = Console.show_cursor

    def recorded(self: Console, show: bool = True) -> bool:
        calls.append(show)
        return real(self, show)

    monkeypatch.setattr(Console, "show_cursor", recorded)
    return calls


def interrupting(real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, with a Ctrl-C arriving just before it runs."""

    def step(*args: Any, **kwargs: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    return step


def test_a_ctrl_c_while_the_bar_starts_stops_it_and_shows_the_cursor_again(
    monkeypatch: pytest.MonkeyPatch, cursor: list[bool]
) -> None:
    # Live.start has hidden the cursor and not yet taken over the console's output
    monkeypatch.setattr(Console, "push_render_hook", interrupting(Console.push_render_hook))
    with pytest.raises(KeyboardInterrupt), RichProgress():
        pytest.fail("the block runs only once the bar has started")
    assert cursor == [False, True], "the bar left half-started kept the cursor hidden"


STOPPED = Cancelled("Indexing stopped; 12 chunks embedded so far are saved.")


@pytest.mark.parametrize(
    ("where", "leaving"),
    [((_RefreshThread, "stop"), None), ((_RefreshThread, "stop"), STOPPED), ((Live, "refresh"), STOPPED)],
    ids=["before-the-last-draw", "before-the-last-draw-after-a-stop", "during-the-last-draw-after-a-stop"],
)
def test_a_ctrl_c_while_the_bar_stops_lets_it_stop_whole_and_keeps_the_commands_own_stop(
    monkeypatch: pytest.MonkeyPatch, cursor: list[bool], where: tuple[type, str], leaving: Cancelled | None
) -> None:
    """Leaving normally, the Ctrl-C is raised once the bar stopped; leaving on a first Ctrl-C's stop
    (an error), a second one while the bar stops no longer turns "Indexing stopped…" (exit 130)
    into a bare KeyboardInterrupt ("Aborted.", exit 1)."""
    owner, name = where
    with pytest.raises(BaseException) as caught, RichProgress():  # which one is the point
        monkeypatch.setattr(owner, name, interrupting(getattr(owner, name)))
        if leaving is not None:
            raise leaving
    assert caught.value is leaving if leaving else type(caught.value) is KeyboardInterrupt
    assert cursor == [False, True], "a bar stopped half-way kept the cursor hidden"
