// The watch, waitUntilLeader and runWhileLeader that both clients share,
// driven through HttpClient's GET /leader/watch by a fake sidecar: what is
// news, a guarantee running out without news, a silent or broken stream,
// a sidecar of another Lease, cancellation, and the step-down handshake;
// and the promise each question asks GET /leader for.

import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";

import { MalformedAnswerError, SidecarUnavailableError, WrongLeaseError } from "../src/errors.js";
import { HttpClient } from "../src/http.js";
import type { Leadership } from "../src/leadership.js";
import { FakeSidecar, leadershipJson } from "./fake-sidecar.js";

let sidecar: FakeSidecar;
beforeEach(async () => {
  sidecar = await new FakeSidecar().start();
});
afterEach(() => sidecar.stop());

function client(options: ConstructorParameters<typeof HttpClient>[0] = {}): HttpClient {
  return new HttpClient({
    addr: sidecar.addr,
    heartbeatIntervalMs: 100,
    minBackoffMs: 20,
    maxBackoffMs: 50,
    ...options,
  });
}

/** Pulls the next state within `ms`. */
async function next(it: AsyncIterator<Leadership>, ms = 3000): Promise<Leadership> {
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([
    it.next(),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no state within ${ms}ms`)), ms);
    }),
  ]);
  clearTimeout(timer);
  assert.equal(r.done, false);
  return r.value as Leadership;
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
};

test("watch yields the current state, then changes only, not heartbeats or repeats", async () => {
  const w = client().watch();
  assert.equal((await next(w)).isLeader, false);
  await until(() => sidecar.openStreams === 1);
  assert.deepEqual(sidecar.watchClientIds.length, 1);
  assert.deepEqual(sidecar.watchHeartbeats, ["100ms"], "the stream asks for the client's heartbeat");
  sidecar.heartbeat();
  sidecar.publish(leadershipJson({ isLeader: false })); // the same state again
  sidecar.publish(leadershipJson({ isLeader: true, token: 4, validForMs: 60_000 }));
  const l = await next(w);
  assert.equal(l.isLeader, true);
  assert.equal(l.fencingToken, 4);
  assert.ok(l.remainingMs() > 59_000);
  await w.return();
  await until(() => sidecar.openStreams === 0);
});

test("watch ignores events of other names, and refuses a malformed state", async () => {
  const w = client().watch();
  await next(w);
  await until(() => sidecar.openStreams === 1);
  sidecar.raw("event: ping\ndata: not a leadership\n\n");
  sidecar.publish(leadershipJson({ isLeader: true, token: 4, validForMs: 60_000 }));
  assert.equal((await next(w)).fencingToken, 4);
  sidecar.raw('event: leadership\ndata: {"isLeader":"yes"}\n\n');
  const refused = await next(w);
  assert.ok(refused.error instanceof MalformedAnswerError, `${refused.error}`);
  assert.equal(refused.isLeader, false);
  await w.return();
});

test("watch turns a leader into a follower when its guarantee runs out without news", async () => {
  sidecar.state = leadershipJson({ isLeader: true, validForMs: 300 });
  const w = client({ heartbeatIntervalMs: 5000 }).watch();
  const l = await next(w);
  assert.ok(l.isLeader);
  const expired = await next(w, 1000);
  assert.equal(expired.isLeader, false);
  assert.equal(expired.fencingToken, l.fencingToken);
  assert.ok(l.remainingMs() === 0);
  await w.return();
});

test("requireLeader asks GET /leader for minValidityMs plus the slack; leadership and the watch ask for no bound", async () => {
  sidecar.state = leadershipJson({ isLeader: true, token: 5, validForMs: 10_000 });
  const c = client();
  try {
    assert.equal(await c.requireLeader(2500), 5);
    assert.equal((await c.requireLeadership(0.25)).fencingToken, 5); // rounded up to the millisecond
    await c.leadership();
    await c.isLeader();
    const w = c.watch();
    assert.ok((await next(w)).isLeader);
    await w.return();
    assert.deepEqual(sidecar.leaderBounds, ["3500ms", "1001ms", null, null]);
    assert.deepEqual(sidecar.watchBounds, [null]);
  } finally {
    c.close();
  }
});

test("watch keeps a leader one while GET /leader confirms it, the event stream's heartbeats carrying no state", async () => {
  sidecar.state = leadershipJson({ isLeader: true, token: 5, validForMs: 400 });
  sidecar.confirmLeaderMs = 400;
  const w = client({ heartbeatIntervalMs: 100 }).watch();
  assert.ok((await next(w)).isLeader);
  const heartbeats = setInterval(() => sidecar.heartbeat(), 100);
  try {
    const pulled = w.next();
    const first = await Promise.race([pulled, new Promise((r) => setTimeout(r, 1500, "quiet"))]);
    assert.equal(first, "quiet", "no follower state while the sidecar confirms the leader");
    assert.ok(sidecar.leaderGets >= 3, `${sidecar.leaderGets} refreshes in 1.5 s of 400 ms promises`);
    sidecar.confirmLeaderMs = undefined; // the sidecar stops renewing: the last promise lapses
    const lapsed = (await pulled).value as Leadership;
    assert.equal(lapsed.isLeader, false);
    assert.equal(lapsed.fencingToken, 5);
  } finally {
    clearInterval(heartbeats);
    await w.return();
  }
});

test("watch reopens a stream that goes silent for twice the heartbeat plus a second", async () => {
  const w = client({ heartbeatIntervalMs: 100 }).watch();
  await next(w);
  const started = Date.now();
  const outage = await next(w, 3000);
  assert.ok(outage.error, "an error state for the stalled stream");
  assert.ok(Date.now() - started >= 1100, `stalled after ${Date.now() - started}ms`);
  assert.equal(outage.isLeader, false);
  const again = await next(w); // reconnected: the first state is always yielded
  assert.equal(again.error, undefined);
  assert.equal(sidecar.watchClientIds.length, 2);
  await w.return();
});

test("watch reports a broken stream and an absent sidecar as unavailable, and reconnects", async () => {
  const w = client().watch();
  await next(w);
  await until(() => sidecar.openStreams === 1);
  sidecar.dropStreams();
  const broken = await next(w);
  assert.ok(broken.error instanceof SidecarUnavailableError, `${broken.error}`);
  const back = await next(w);
  assert.equal(back.error, undefined);
  await sidecar.stop();
  assert.ok((await next(w)).error instanceof SidecarUnavailableError);
  assert.ok((await next(w)).error instanceof SidecarUnavailableError, "keeps retrying");
  await w.return();
});

test("watch refuses a sidecar that serves another Lease", async () => {
  const w = client({ expectLease: { name: "other", namespace: "default" } }).watch();
  const l = await next(w);
  assert.ok(l.error instanceof WrongLeaseError, `${l.error}`);
  assert.match(l.error.message, /default\/app.*default\/other/);
  await w.return();
});

test("watch ends with the signal's reason when it aborts, and closes its stream", async () => {
  const ac = new AbortController();
  const w = client().watch({ signal: ac.signal });
  await next(w);
  const pending = w.next();
  ac.abort();
  await assert.rejects(pending, { name: "AbortError" });
  await until(() => sidecar.openStreams === 0);
});

test("waitUntilLeader resolves with the first leader state", async () => {
  const c = client();
  const waiting = c.waitUntilLeader();
  await until(() => sidecar.openStreams === 1);
  sidecar.publish(leadershipJson({ isLeader: true, token: 9, validForMs: 10_000 }));
  assert.equal((await waiting).fencingToken, 9);
  const ac = new AbortController();
  sidecar.publish(leadershipJson({ isLeader: false }));
  const never = c.waitUntilLeader({ signal: ac.signal });
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(never, { name: "AbortError" });
});

test("runWhileLeader cancels the work when the term ends, waits for it, then acknowledges", async () => {
  const c = client({ clientId: "app-1" });
  const ac = new AbortController();
  const events: string[] = [];
  sidecar.state = leadershipJson({ isLeader: true, token: 5, validForMs: 60_000 });
  const running = c.runWhileLeader(
    async (l, signal) => {
      events.push(`start ${l.fencingToken}`);
      await new Promise((r) => signal.addEventListener("abort", r));
      await new Promise((r) => setTimeout(r, 50)); // winding down
      events.push(`end ${l.fencingToken}`);
    },
    { signal: ac.signal },
  );
  await until(() => events.length === 1);
  sidecar.publish(leadershipJson({ isLeader: false, token: 5, steppingDown: true }));
  await until(() => sidecar.acks.length === 1);
  assert.deepEqual(events, ["start 5", "end 5"]);
  assert.deepEqual(sidecar.acks, [{ clientId: "app-1", token: 5 }]);

  sidecar.publish(leadershipJson({ isLeader: true, token: 6, validForMs: 60_000 }));
  await until(() => events.length === 3);
  ac.abort();
  await assert.rejects(running, { name: "AbortError" });
  assert.deepEqual(events, ["start 5", "end 5", "start 6", "end 6"]);
  assert.deepEqual(
    sidecar.acks.map((a) => a.token),
    [5, 6],
  );
  assert.equal(sidecar.openStreams, 0);
});

test("acknowledgements name the latest deadline this client received, exactly as the sidecar sent it", async () => {
  const c = client({ clientId: "shared" });
  sidecar.state = leadershipJson({ isLeader: true, token: 3, validForMs: 5_000 });
  await c.leadership();
  sidecar.state = leadershipJson({ isLeader: true, token: 3, validForMs: 6_000 });
  const latest = (await c.leadership()).validUntilBoottimeNs;
  const printed = sidecar.state.validUntilBoottime as string;
  // Another process with the same client id is answered later; this
  // client's acknowledgement does not cover that.
  sidecar.state = leadershipJson({ isLeader: true, token: 3, validForMs: 9_000 });
  await client({ clientId: "shared" }).leadership();
  await c.acknowledgeStepDown(3);
  // A term it was never answered in: it names nothing. Or the one it is given.
  await c.acknowledgeStepDown(2);
  await c.acknowledgeStepDown(3, { validUntilBoottimeNs: 42_000_000_001n });
  assert.ok(latest > 0n);
  assert.deepEqual(sidecar.ackDeadlines, [printed, "0.000000000s", "42.000000001s"]);
});

test("runWhileLeader rejects with the error of work that fails during its term, after acknowledging", async () => {
  sidecar.state = leadershipJson({ isLeader: true, token: 2, validForMs: 60_000 });
  const failure = new Error("disk full");
  await assert.rejects(
    client().runWhileLeader(() => Promise.reject(failure)),
    failure,
  );
  assert.deepEqual(
    sidecar.acks.map((a) => a.token),
    [2],
  );
});

test("runWhileLeader ends the work when the guarantee runs out without news", async () => {
  sidecar.state = leadershipJson({ isLeader: true, token: 8, validForMs: 300 });
  const ac = new AbortController();
  let ended = 0;
  const running = client({ heartbeatIntervalMs: 5000 }).runWhileLeader(
    async (_l, signal) => {
      await new Promise((r) => signal.addEventListener("abort", r));
      ended = Date.now();
    },
    { signal: ac.signal },
  );
  const started = Date.now();
  await until(() => ended > 0);
  assert.ok(ended - started < 1000, `work ended ${ended - started}ms after the start`);
  await until(() => sidecar.acks.length === 1);
  ac.abort();
  await assert.rejects(running, { name: "AbortError" });
});
