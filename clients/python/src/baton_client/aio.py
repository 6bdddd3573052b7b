"""AsyncClient: the sidecar's gRPC API for asyncio (grpc.aio). Needs the
``grpc`` extra (``pip install "baton-client[grpc]"``)."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Awaitable, Callable, Optional

import grpc
from google.protobuf import duration_pb2

from ._address import DEFAULT_GRPC_ADDR, ENV_GRPC_ADDR, resolve
from ._grpc_common import channel_options, leadership_request, translate, watch_request
from ._lease import check_lease, expected_lease
from .errors import BatonError, SidecarUnavailableError
from ._leader_work import leading, same_term
from .leadership import (Backoff, HeardDeadlines, Leadership, StreamStalled, WatchTracker,
                         boottime, check_leader, client_id_or_random, from_proto,
                         require_leader_bound_ns)
from .v1 import leader_election_pb2 as pb
from .v1 import leader_election_pb2_grpc as pb_grpc


class AsyncClient:
    """Client of one sidecar's gRPC API for asyncio; the same calls as
    :class:`baton_client.Client`, as coroutines, and ``watch()`` as an async
    iterator. Create it inside the running event loop; close it with
    ``await client.close()`` or ``async with``. Arguments as for Client.
    """

    def __init__(self, addr: Optional[str] = None, *, call_timeout: float = 2.0,
                 heartbeat_interval: float = 1.0, min_backoff: float = 0.1,
                 max_backoff: float = 2.0, client_id: Optional[str] = None,
                 lease_name: Optional[str] = None,
                 lease_namespace: Optional[str] = None) -> None:
        self.addr = resolve(addr, ENV_GRPC_ADDR, DEFAULT_GRPC_ADDR, allow_unix=True)
        self.client_id = client_id_or_random(client_id)
        self.lease = expected_lease(lease_name, lease_namespace)
        self.call_timeout = call_timeout
        self.heartbeat_interval = heartbeat_interval
        self._min_backoff, self._max_backoff = min_backoff, max_backoff
        self._channel = grpc.aio.insecure_channel(
            self.addr, options=channel_options(min_backoff, max_backoff))
        self._stub = pb_grpc.LeaderElectionStub(self._channel)
        self._heard = HeardDeadlines()

    async def close(self) -> None:
        """Closes the channel; calls and watches in flight fail."""
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def leadership(self, timeout: Optional[float] = None) -> Leadership:
        """The current state. Raises SidecarUnavailableError if no sidecar
        answers within ``timeout`` (default: call_timeout), WrongLeaseError if
        it serves another Lease than the expected one."""
        return await self._leadership(timeout)

    async def _leadership(self, timeout: Optional[float],
                          max_valid_for_ns: Optional[int] = None) -> Leadership:
        """leadership(), asking for a promise of at most ``max_valid_for_ns``
        (None: the whole promise)."""
        sent = boottime()
        try:
            msg = await self._stub.GetLeadership(
                leadership_request(self.client_id, max_valid_for_ns),
                timeout=timeout or self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return self._heard.note(check_lease(from_proto(msg, sent), self.lease, self.addr))

    async def is_leader(self) -> bool:
        """Whether this pod leads right now (see Client.is_leader)."""
        return (await self.leadership()).is_leader

    async def require_leader(self, min_validity: float = 0.0,
                             timeout: Optional[float] = None) -> int:
        """The fencing token, if this pod leads with at least
        ``min_validity`` seconds left; asks for a promise of at most
        ``min_validity`` + REQUIRE_LEADER_SLACK (see Client.require_leader)."""
        return check_leader(
            await self._leadership(timeout, require_leader_bound_ns(min_validity)), min_validity)

    async def resign(self) -> bool:
        """Steps down now and releases the Lease (see Client.resign)."""
        try:
            resp = await self._stub.Resign(pb.ResignRequest(), timeout=self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return resp.was_leader

    async def acknowledge_step_down(self, fencing_token: int,
                                    valid_until_boottime_ns: Optional[int] = None) -> bool:
        """This application has stopped acting on the term ``fencing_token``
        up to a deadline (see Client.acknowledge_step_down: by default the
        latest this client object received in that term)."""
        up_to = (self._heard.up_to(fencing_token) if valid_until_boottime_ns is None
                 else valid_until_boottime_ns)
        try:
            resp = await self._stub.AcknowledgeStepDown(
                pb.AcknowledgeStepDownRequest(
                    client_id=self.client_id, fencing_token=fencing_token,
                    valid_until_boottime=duration_pb2.Duration(seconds=up_to // 10**9,
                                                               nanos=up_to % 10**9)),
                timeout=self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return resp.acknowledged

    async def run_while_leader(self, work: Callable[[Leadership], Awaitable[None]]) -> None:
        """Runs ``await work(term)`` as a task whenever this pod leads, and
        acknowledges the step-down once it has ended::

            async def work(term):
                while True:
                    await store.put(key, value, fencing_token=term.fencing_token)
                    await asyncio.sleep(1)

            runner = asyncio.ensure_future(client.run_while_leader(work))
            ...
            runner.cancel()  # on shutdown: cancels the work, acknowledges

        The work task is cancelled as soon as the term ends (the same events
        as for Client.run_while_leader); once it has finished, the term is
        acknowledged. If ``work`` returns while the term goes on, the term is
        acknowledged and ``work`` runs again at the next term; if it raises,
        so does run_while_leader. Otherwise this runs until its own task is
        cancelled, and then cancels the work, waits for it and acknowledges
        before it re-raises the CancelledError."""
        states = self.watch()
        next_state = asyncio.ensure_future(states.__anext__())
        task: Optional[asyncio.Task] = None
        term = Leadership()
        finished: Optional[Leadership] = None  # a term whose work returned by itself

        async def give_back() -> None:
            try:
                await self.acknowledge_step_down(term.fencing_token)
            except BatonError:
                pass  # without the acknowledgement the handover is only slower

        async def end(running: asyncio.Task) -> None:
            running.cancel()
            await asyncio.wait({running})
            await give_back()

        try:
            while True:
                waiting = {next_state} if task is None else {next_state, task}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if task is not None and task in done:
                    ended, task = task, None
                    await give_back()
                    if not ended.cancelled() and ended.exception() is not None:
                        raise ended.exception()
                    finished = term
                if next_state not in done:
                    continue
                state = next_state.result()
                next_state = asyncio.ensure_future(states.__anext__())
                if task is not None and (not leading(state) or not same_term(state, term)):
                    running, task = task, None
                    await end(running)
                if not leading(state):
                    if state.error is None and finished is not None and same_term(state, finished):
                        await give_back()  # covers what the watch promised since
                    finished = None
                elif task is None and (finished is None or not same_term(state, finished)):
                    term, finished = state, None
                    task = asyncio.ensure_future(work(state))
        finally:
            next_state.cancel()
            await asyncio.wait({next_state})
            if task is not None:
                await end(task)
            await states.aclose()

    async def watch(self) -> AsyncIterator[Leadership]:
        """``async for state in client.watch():`` the current state, then
        each change, with the same guarantees as Client.watch: a guarantee
        that runs out turns the state follower, and an unreachable sidecar
        yields ``Leadership(error=...)`` while it reconnects with backoff.
        Ends when the loop breaks or its task is cancelled."""
        backoff = Backoff(self._min_backoff, self._max_backoff)
        while True:
            connected = False
            try:
                async for state in self._watch_stream():
                    connected = True
                    yield state
            except BatonError as e:
                if connected:
                    backoff.reset()
                yield Leadership(error=e)
            await asyncio.sleep(backoff.next())

    async def _watch_stream(self) -> AsyncIterator[Leadership]:
        """One WatchLeadership stream; raises SidecarUnavailableError when it
        ends, fails or stalls."""
        call = self._stub.WatchLeadership(watch_request(self.heartbeat_interval, self.client_id))
        tracker = WatchTracker(stall_timeout=2 * self.heartbeat_interval + 1)
        pending: Optional[asyncio.Task] = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(call.read())
                done, _ = await asyncio.wait({pending}, timeout=tracker.timeout())
                if not done:
                    try:
                        expired = tracker.due()
                    except StreamStalled as e:
                        raise SidecarUnavailableError(self.addr, e, ENV_GRPC_ADDR) from None
                    if expired is not None:
                        yield expired
                    continue
                task, pending = pending, None
                try:
                    msg = task.result()
                except grpc.RpcError as e:
                    raise translate(self.addr, e) from e
                if msg is grpc.aio.EOF:
                    raise SidecarUnavailableError(
                        self.addr, "the sidecar ended the stream (shutting down)", ENV_GRPC_ADDR)
                news = tracker.received(self._heard.note(check_lease(
                    from_proto(msg.leadership, boottime()), self.lease, self.addr)))
                if news is not None:
                    yield news
        finally:
            if pending is not None:
                pending.cancel()
            call.cancel()

    async def wait_until_leader(self, timeout: Optional[float] = None) -> Leadership:
        """Waits until this pod leads and returns that state, through sidecar
        restarts; raises TimeoutError after ``timeout`` seconds."""
        last_error: Optional[Exception] = None

        async def first_leader() -> Leadership:
            nonlocal last_error
            states = self.watch()
            try:
                async for state in states:
                    if state.error is not None:
                        last_error = state.error
                    elif state.is_leader:
                        return state
            finally:
                await states.aclose()
            raise AssertionError("watch ended")  # it never does

        try:
            return await asyncio.wait_for(first_leader(), timeout)
        except asyncio.TimeoutError:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise TimeoutError(f"not leader after {timeout:g}s{suffix}") from None
