"""The leader-work helper of the blocking clients (Client.run_while_leader,
HttpClient.run_while_leader): the application's work runs on a thread of its
own while the pod leads, is told to stop when the term ends, and the term is
acknowledged once the work has returned."""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator, Optional

from .errors import BatonError
from .leadership import CLOCK_RECHECK, Leadership

#: The application's leader work: called with the leader state that began the
#: term and an Event that is set when the term ends; it must then stop acting
#: as leader and return.
Work = Callable[[Leadership, threading.Event], None]


def leading(state: Leadership) -> bool:
    """Whether a watched state lets leader work run."""
    return (state.error is None and state.is_leader and not state.stepping_down
            and state.remaining() > 0)


def same_term(a: Leadership, b: Leadership) -> bool:
    """Whether two states belong to one term of one sidecar."""
    return a.identity == b.identity and a.fencing_token == b.fencing_token


class _Running:
    """One term's work on its thread."""

    def __init__(self, term: Leadership, work: Work, seq: int, events: "queue.Queue") -> None:
        self.term = term
        self.seq = seq
        self.cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(work, events),
                                        name="baton-leader-work", daemon=True)
        self._thread.start()

    def _run(self, work: Work, events: "queue.Queue") -> None:
        error: Optional[BaseException] = None
        try:
            work(self.term, self.cancelled)
        except BaseException as e:  # handed to run_while_leader's thread
            error = e
        events.put(("returned", self.seq, error))

    def cancel_and_join(self) -> None:
        self.cancelled.set()
        self._thread.join()


def run_while_leader(watch: Callable[[threading.Event], Iterator[Leadership]],
                     acknowledge: Callable[[int], bool], work: Work,
                     stop: Optional[threading.Event]) -> None:
    """The loop behind the clients' run_while_leader (see
    Client.run_while_leader for the contract)."""
    events: "queue.Queue" = queue.Queue()
    watch_stop = threading.Event()

    def follow() -> None:
        for state in watch(watch_stop):
            events.put(("state", 0, state))

    watcher = threading.Thread(target=follow, name="baton-leader-watch", daemon=True)
    watcher.start()
    running: Optional[_Running] = None
    finished: Optional[Leadership] = None  # a term whose work returned by itself
    seq = 0

    def give_back(term: Leadership) -> None:
        try:
            acknowledge(term.fencing_token)
        except BatonError:
            pass  # without the acknowledgement the handover is only slower

    def end() -> None:
        nonlocal running
        assert running is not None
        running.cancel_and_join()
        give_back(running.term)
        running = None

    try:
        while not (stop and stop.is_set()):
            try:
                kind, event_seq, value = events.get(timeout=CLOCK_RECHECK)
            except queue.Empty:
                continue  # to look at stop again; the watch ends terms by the clock
            if kind == "returned":
                if running is None or event_seq != running.seq:
                    continue  # a cancelled term's work, already acknowledged
                term, running = running.term, None
                give_back(term)
                if value is not None:
                    raise value
                finished = term
                continue
            state: Leadership = value
            if running is not None and (not leading(state) or not same_term(state, running.term)):
                end()
            if not leading(state):
                if state.error is None and finished is not None and same_term(state, finished):
                    # The watch promised this client more since the work
                    # returned; nothing acts on it.
                    give_back(finished)
                finished = None
            elif running is None and (finished is None or not same_term(state, finished)):
                seq += 1
                running, finished = _Running(state, work, seq, events), None
    finally:
        watch_stop.set()
        if running is not None:
            end()
        watcher.join()
