// Integration tests against real baton sidecars on a real control plane,
// started by clients/testing/sidecars; $BATON_SIDECARS names its
// sidecars.json. They include the conformance suite's live scenarios
// (clients/conformance/README.md), each reported once every check passed.
// The tests share the sidecars, so they run one at a time (one file), and
// each starts by waiting for a settled election.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { test } from "node:test";

import { Client, type ClientOptions } from "../src/client.js";
import { boottimeMs } from "../src/clock.js";
import { NotLeaderError, SidecarUnavailableError, WrongLeaseError } from "../src/errors.js";
import { HttpClient } from "../src/http.js";
import type { Leadership } from "../src/leadership.js";
import { reportPassed } from "./conformance.js";

interface Sidecar {
  index: number;
  identity: string;
  grpc: string;
  http: string;
  pid: number | null;
}
interface Fixture {
  namespace: string;
  leaseName: string;
  leaseDuration: number;
  renewDeadline: number;
  sidecars: Sidecar[];
}

const FIXTURE = process.env.BATON_SIDECARS;
const skip = FIXTURE ? false : "BATON_SIDECARS is not set (clients/test starts the sidecars)";

function readFixture(): Fixture {
  return JSON.parse(readFileSync(FIXTURE!, "utf8")) as Fixture;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Clients made by a test, closed at its end. */
class Clients {
  private readonly all: Client[] = [];

  grpc(s: Sidecar, options: ClientOptions = {}): Client {
    const c = new Client({ addr: s.grpc, heartbeatIntervalMs: 300, minBackoffMs: 50, maxBackoffMs: 500, ...options });
    this.all.push(c);
    return c;
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}

/**
 * Waits until every sidecar runs, has read the Lease and answers, and
 * exactly one leads; returns the fixture and the leader's index.
 */
async function settled(): Promise<{ f: Fixture; leader: number }> {
  const deadline = Date.now() + 30_000;
  let last = "";
  while (Date.now() < deadline) {
    const f = readFixture();
    let leader = -1;
    let ok = true;
    for (const s of f.sidecars) {
      if (s.pid === null) {
        ok = false;
        last = "a sidecar is restarting";
        break;
      }
      const c = new Client({ addr: s.grpc });
      const l = await c.leadership().catch(() => undefined);
      c.close();
      if (!l || l.identity !== s.identity || !l.observed) {
        ok = false;
        last = `sidecar ${s.index} not answering yet (or not having read the Lease)`;
        break;
      }
      if (l.isLeader) {
        if (leader >= 0) ok = false;
        leader = s.index;
      }
    }
    if (ok && leader >= 0) return { f, leader };
    if (ok) last = "no leader";
    await sleep(100);
  }
  throw new Error(`sidecars did not settle in 30s: ${last}`);
}

function signal(s: Sidecar, sig: NodeJS.Signals): void {
  assert.ok(s.pid !== null, `sidecar ${s.index} is not running`);
  process.kill(s.pid, sig);
}

/** The state letter of /proc/PID/stat ("T" once a SIGSTOP has taken effect). */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

/** One watched state, and when (CLOCK_BOOTTIME) the test got it. */
interface Seen {
  index: number;
  l: Leadership;
  at: number;
}

type Transport = "grpc" | "http";

/** Watches every sidecar until `signal` aborts, pushing what each watch yields to `seen`. */
function watchAll(clients: Clients, transport: Transport, f: Fixture, abort: AbortSignal, seen: Seen[]) {
  return Promise.all(
    f.sidecars.map(async (s) => {
      const c = transport === "grpc" ? clients.grpc(s) : new HttpClient({ addr: s.http, minBackoffMs: 50 });
      try {
        for await (const l of c.watch({ signal: abort })) seen.push({ index: s.index, l, at: boottimeMs() });
      } catch (e) {
        if (!abort.aborted) throw e;
      }
    }),
  );
}

async function until<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms}ms`);
    await sleep(10);
  }
}

test("leader and followers answer over gRPC and HTTP", { skip }, async () => {
  const { f, leader } = await settled();
  const clients = new Clients();
  try {
    const c = clients.grpc(f.sidecars[leader]!);
    const l = await c.leadership();
    assert.ok(l.isLeader && l.holderIdentity === l.identity && l.observed, `leader: ${JSON.stringify(l, bigints)}`);
    assert.ok(l.remainingMs() > 0 && l.validForMs <= f.renewDeadline * 1000);
    assert.ok(l.validUntilBoottimeMs > boottimeMs() && l.fencingRevision > 0n);
    assert.equal(l.leaseName, f.leaseName);
    assert.equal(l.leaseNamespace, f.namespace);
    assert.equal(await c.requireLeader(500), l.fencingToken);
    await assert.rejects(c.requireLeader(f.renewDeadline * 1000 + 1000), NotLeaderError);
    for (const s of f.sidecars) {
      if (s.index === leader) continue;
      const fl = await clients.grpc(s).leadership();
      assert.ok(
        !fl.isLeader && fl.holderIdentity === l.identity && fl.fencingToken === l.fencingToken,
        `follower ${s.index}: ${JSON.stringify(fl, bigints)}`,
      );
      await assert.rejects(clients.grpc(s).requireLeader(), NotLeaderError);
      const hl = await new HttpClient({ addr: s.http }).leadership();
      assert.ok(!hl.isLeader && hl.holderIdentity === l.identity && hl.identity === s.identity);
    }
    const http = new HttpClient({ addr: f.sidecars[leader]!.http });
    const hl = await http.leadership();
    assert.ok(hl.isLeader && hl.fencingToken === l.fencingToken && hl.remainingMs() > 0);
    assert.equal(await http.acknowledgeStepDown(hl.fencingToken), true, "the HTTP answer was a promise to it");
    assert.equal(await http.acknowledgeStepDown(hl.fencingToken), false, "nothing left to acknowledge");
  } finally {
    clients.close();
  }
});

/** JSON.stringify's replacer for bigint fields. */
function bigints(_k: string, v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}

test("absent-sidecar", { skip }, async () => {
  const addr = await closedPort();
  for (const c of [new Client({ addr }), new HttpClient({ addr })]) {
    const started = performance.now();
    await assert.rejects(c.leadership(), SidecarUnavailableError);
    assert.ok(performance.now() - started < 2000, `failed after ${performance.now() - started}ms`);
    await assert.rejects(c.isLeader(), SidecarUnavailableError);
    await assert.rejects(
      c.requireLeader(0),
      (e) => e instanceof SidecarUnavailableError && !(e instanceof NotLeaderError),
    );
    if (c instanceof Client) c.close();
  }
  reportPassed("absent-sidecar");
});

test("lease-identity", { skip }, async () => {
  const { f, leader } = await settled();
  const clients = new Clients();
  try {
    const s = f.sidecars[leader]!;
    const wrong = { name: "not-this-lease", namespace: f.namespace };
    for (const c of [clients.grpc(s, { expectLease: wrong }), new HttpClient({ addr: s.http, expectLease: wrong })]) {
      await assert.rejects(
        c.leadership(),
        (e) =>
          e instanceof WrongLeaseError &&
          e.message.includes(`${f.namespace}/not-this-lease`) &&
          e.message.includes(`${f.namespace}/${f.leaseName}`),
      );
      await assert.rejects(c.isLeader(), WrongLeaseError);
      await assert.rejects(c.requireLeader(), WrongLeaseError);
    }
    const right = { name: f.leaseName, namespace: f.namespace };
    for (const c of [clients.grpc(s, { expectLease: right }), new HttpClient({ addr: s.http, expectLease: right })]) {
      assert.equal(await c.isLeader(), true);
      assert.equal((await c.leadership()).leaseName, f.leaseName);
    }
    reportPassed("lease-identity");
  } finally {
    clients.close();
  }
});

test("restarting-sidecar", { skip }, async () => {
  const { f } = await settled();
  const clients = new Clients();
  const abort = new AbortController();
  try {
    const s = f.sidecars[0]!;
    const states: Leadership[] = [];
    const watching = (async () => {
      try {
        for await (const l of clients.grpc(s).watch({ signal: abort.signal })) states.push(l);
      } catch (e) {
        if (!abort.signal.aborted) throw e;
      }
    })();
    await until("the watch's first state", 5000, () => states[0]);
    assert.equal(states[0]!.identity, s.identity);
    signal(s, "SIGKILL");
    const restarted = await until("a state of the restarted sidecar", 15_000, () => {
      const now = readFixture().sidecars[0]!;
      return now.identity !== s.identity ? states.find((l) => !l.error && l.identity === now.identity) : undefined;
    });
    const outage = states.findIndex((l) => l.error instanceof SidecarUnavailableError || (!l.error && !l.isLeader));
    assert.ok(outage >= 0 && outage < states.indexOf(restarted), "the outage was reported before the new sidecar");
    abort.abort();
    await watching;
    reportPassed("restarting-sidecar");
  } finally {
    abort.abort();
    clients.close();
  }
});

/**
 * SIGTERMs the leader while every sidecar is watched through `transport`:
 * the old leader's watch says stepping down or not leader, another's says
 * leader with a higher token, and its first leader state arrives no earlier
 * than the last promise the old leader's watch delivered.
 */
async function handover(transport: Transport): Promise<void> {
  const { f, leader } = await settled();
  const clients = new Clients();
  const abort = new AbortController();
  const seen: Seen[] = [];
  const watching = watchAll(clients, transport, f, abort.signal, seen);
  try {
    await until("every watch's current state", 5000, () =>
      new Set(seen.map((e) => e.index)).size === 3 ? true : undefined,
    );
    const before = seen.find((e) => e.index === leader && e.l.isLeader)!;
    assert.ok(before, "the leader's watch says leader");
    signal(f.sidecars[leader]!, "SIGTERM");
    const next = await until("another sidecar leading", 15_000, () =>
      seen.find((e) => e.index !== leader && !e.l.error && e.l.isLeader),
    );
    assert.ok(
      seen.some((e) => e.index === leader && !e.l.error && (e.l.steppingDown || !e.l.isLeader)),
      "the old leader's watch reported stepping down or not leader",
    );
    assert.ok(next.l.fencingToken > before.l.fencingToken, `token ${next.l.fencingToken} > ${before.l.fencingToken}`);
    const oldLeaderStates = seen.filter((e) => e.index === leader && !e.l.error && e.l.isLeader);
    const lastPromise = Math.max(...oldLeaderStates.map((e) => e.l.validUntilBoottimeMs));
    assert.ok(
      next.at >= lastPromise,
      `the new leader led ${lastPromise - next.at}ms before the old one's promise lapsed`,
    );
    abort.abort();
    await watching;
  } finally {
    abort.abort();
    clients.close();
  }
}

test("watch-through-handover", { skip }, async () => {
  await handover("grpc");
  reportPassed("watch-through-handover");
});

test("the HTTP event stream (GET /leader/watch) through a handover", { skip }, async () => {
  // A leader stays one for longer than any one promise lasts: the watch renews it with GET /leader.
  const { f, leader } = await settled();
  const states: Leadership[] = [];
  const abort = new AbortController();
  setTimeout(() => abort.abort(), (2 * f.renewDeadline + 1) * 1000);
  await (async () => {
    for await (const l of new HttpClient({ addr: f.sidecars[leader]!.http }).watch({ signal: abort.signal })) {
      states.push(l);
    }
  })().catch((e: unknown) => assert.ok(abort.signal.aborted, `${e}`));
  assert.ok(states.length > 0 && states.every((l) => l.isLeader), `states: ${states.map((l) => l.isLeader)}`);
  await handover("http");
});

test("require-leader-after-pause", { skip }, async () => {
  const { f, leader } = await settled();
  const clients = new Clients();
  const s = f.sidecars[leader]!;
  let paused = false;
  try {
    const c = clients.grpc(s);
    const L = await c.leadership();
    assert.ok(L.isLeader);
    signal(s, "SIGSTOP");
    paused = true;
    await until("the sidecar stopped", 2000, () => (processState(s.pid!) === "T" ? true : undefined));
    const pauseMs = (f.leaseDuration + 1.5) * 1000;
    const resumeAt = Date.now() + pauseMs;
    let asked = 0;
    while (Date.now() < resumeAt - 2200) {
      // each attempt may take the whole 2 s call timeout
      await assert.rejects(c.requireLeader(0), SidecarUnavailableError, "no token from a paused sidecar");
      asked++;
    }
    assert.ok(asked > 0);
    await sleep(resumeAt - Date.now());
    assert.equal(L.remainingMs(), 0, "the old answer lapsed");
    signal(s, "SIGCONT");
    paused = false;
    let resumed: Leadership | undefined;
    for (const end = Date.now() + 5000; !resumed && Date.now() < end;) {
      resumed = await c.leadership().catch(() => undefined);
    }
    assert.ok(resumed, "the paused sidecar answers after SIGCONT");
    assert.ok(
      !resumed.isLeader || resumed.fencingToken > L.fencingToken,
      `after SIGCONT: leader ${resumed.isLeader} with token ${resumed.fencingToken} (was ${L.fencingToken})`,
    );
    const deadline = Date.now() + 5000;
    let successor: Leadership | undefined;
    while (!successor && Date.now() < deadline) {
      for (const o of f.sidecars) {
        const l = await clients
          .grpc(o)
          .leadership()
          .catch(() => undefined);
        if (l?.isLeader && l.fencingToken > L.fencingToken) successor = l;
      }
      if (!successor) await sleep(100);
    }
    assert.ok(successor, "some sidecar leads with a higher token within 5 s");
    reportPassed("require-leader-after-pause");
  } finally {
    if (paused) signal(s, "SIGCONT");
    clients.close();
  }
});

test("step-down-ack", { skip }, async (t) => {
  const { f, leader } = await settled();
  // Let the promises settled() was given lapse: those clients never acknowledge.
  await sleep(f.renewDeadline * 1000 + 200);
  const clients = new Clients();
  const abort = new AbortController();
  interface Term {
    index: number;
    l: Leadership;
    started: number;
    returned?: number;
  }
  const terms: Term[] = [];
  const runs = f.sidecars.map((s) => {
    const c = clients.grpc(s);
    const run = c
      .runWhileLeader(
        async (l, stop) => {
          const term: Term = { index: s.index, l, started: boottimeMs() };
          terms.push(term);
          await new Promise((r) => stop.addEventListener("abort", r, { once: true }));
          await sleep(20); // the work winds down
          term.returned = boottimeMs();
        },
        { signal: abort.signal },
      )
      .catch((e: unknown) => {
        if (!abort.signal.aborted) throw e;
      });
    return { c, run };
  });
  try {
    const first = await until("leader work", 10_000, () => terms[0]);
    assert.equal(first.index, leader);
    const A = await runs[leader]!.c.leadership(); // a promise to that client
    assert.ok(A.isLeader && A.fencingToken === first.l.fencingToken);
    const sent = boottimeMs();
    signal(f.sidecars[leader]!, "SIGTERM");
    const next = await until("another sidecar's leader work", 10_000, () => terms.find((t) => t.index !== leader));
    assert.ok(
      first.returned !== undefined && first.returned <= next.started,
      "the old work returned before the new one started",
    );
    assert.ok(next.l.fencingToken > first.l.fencingToken);
    assert.ok(
      next.started < A.validUntilBoottimeMs,
      `the new leader's work started ${next.started - A.validUntilBoottimeMs}ms after A's promise would have lapsed: not acknowledged`,
    );
    t.diagnostic(
      `SIGTERM -> new leader's work started: ${(next.started - sent).toFixed(1)}ms ` +
        `(A's promise had ${(A.validUntilBoottimeMs - sent).toFixed(0)}ms left)`,
    );
    abort.abort();
    await Promise.all(runs.map((r) => r.run));
    reportPassed("step-down-ack");
  } finally {
    abort.abort();
    clients.close();
  }
});
