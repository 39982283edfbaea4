"""Ctrl-C in a long command: what the first one means, and why a second one prints no traceback.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the main thread happens to be; a second
Ctrl-C during the cleanup of the first then escapes as a traceback. These handlers give the first
Ctrl-C a meaning the command chose and make any later one harmless. Only the main thread can
install a handler: elsewhere (a test's thread) they change nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["held_interrupts", "interrupt_once", "stop_between_steps"]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupt_once() -> Iterator[None]:
    """The first Ctrl-C raises ``KeyboardInterrupt`` as usual; every later one is ignored, so the
    command's own cleanup (which must not wait on anything slow) is never cut short by a traceback.
    The handler stays ignoring after the block when it fired: the command is on its way out."""
    if not _main_thread():
        yield
        return

    def first(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is first:
            signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def stop_between_steps() -> Iterator[threading.Event]:
    """The first Ctrl-C sets the event (the loop finishes the step it is in, then stops); a second
    one raises ``KeyboardInterrupt`` inside that step; later ones are ignored."""
    asked = threading.Event()
    if not _main_thread():
        yield asked
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if not asked.is_set():
            asked.set()
            return
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield asked
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """A Ctrl-C during the block is held and raised as ``KeyboardInterrupt`` when the block ends,
    so a step that must not stop half-way (starting or stopping the live display, whose undo
    assumes it ran whole) always runs whole."""
    if not _main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    old = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if pending:
        raise KeyboardInterrupt
