// The gRPC Client against a local gRPC server that answers with raw bytes:
// a corrupt answer fails the call (it never becomes a leader), a sound one
// is converted, and the client id (and requireLeader's bound) travels with
// the question.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import * as grpc from "@grpc/grpc-js";

import { Client, packageDefinition } from "../src/client.js";
import { REQUIRE_LEADER_SLACK_MS } from "../src/elector.js";
import { BatonError, MalformedAnswerError, SidecarUnavailableError } from "../src/errors.js";
import type { GetLeadershipRequest__Output } from "../src/gen/baton/v1/GetLeadershipRequest.js";

const raw = (b: Buffer) => b;
let answer: Buffer = Buffer.alloc(0);
let lastRequest: Buffer = Buffer.alloc(0);
const server = new grpc.Server();
let addr = "";

before(async () => {
  const getLeadership: grpc.MethodDefinition<Buffer, Buffer> = {
    path: "/baton.v1.LeaderElection/GetLeadership",
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  };
  server.addService(
    { GetLeadership: getLeadership },
    {
      GetLeadership: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        lastRequest = call.request;
        callback(null, answer);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  addr = `127.0.0.1:${port}`;
});
after(() => server.forceShutdown());

const service = packageDefinition["baton.v1.LeaderElection"] as grpc.ServiceDefinition;

test("a leader answer is converted, and the question names the client", async () => {
  answer = service.GetLeadership!.responseSerialize({
    isLeader: true,
    fencingToken: 7,
    fencingRevision: "9007199254740993",
    validFor: { seconds: 1, nanos: 500_000_000 },
  });
  const c = new Client({ addr, clientId: "app-7" });
  try {
    const l = await c.leadership();
    assert.equal(l.isLeader, true);
    assert.equal(l.fencingToken, 7);
    assert.equal(l.fencingRevision, 9007199254740993n);
    assert.ok(l.remainingMs() > 1000 && l.remainingMs() <= 1500);
    const req = service.GetLeadership!.requestDeserialize(lastRequest) as { clientId: string };
    assert.equal(req.clientId, "app-7");
  } finally {
    c.close();
  }
});

test("a revision of up to 128 bits comes whole from fencingRevisionDecimal; a malformed one fails the call", async () => {
  const leader = (fencingRevisionDecimal: string) =>
    service.GetLeadership!.responseSerialize({
      isLeader: true,
      fencingRevision: "0",
      fencingRevisionDecimal,
      validFor: { seconds: 1, nanos: 0 },
    });
  const c = new Client({ addr });
  try {
    answer = leader("340282366920938463463374607431768211455");
    assert.equal((await c.leadership()).fencingRevision, 2n ** 128n - 1n);
    answer = leader("04711");
    await assert.rejects(c.leadership(), MalformedAnswerError);
  } finally {
    c.close();
  }
});

test("requireLeader asks for minValidityMs plus the slack; leadership asks for no bound", async () => {
  answer = service.GetLeadership!.responseSerialize({
    isLeader: true,
    fencingToken: 7,
    validFor: { seconds: 10, nanos: 0 },
  });
  const c = new Client({ addr });
  const asked = () =>
    (service.GetLeadership!.requestDeserialize(lastRequest) as GetLeadershipRequest__Output).maxValidFor;
  try {
    assert.equal(await c.requireLeader(2500), 7);
    assert.deepEqual(asked(), { seconds: "3", nanos: 500_000_000 });
    assert.equal((await c.requireLeadership()).fencingToken, 7);
    assert.deepEqual(asked(), { seconds: "1", nanos: 0 });
    assert.equal(REQUIRE_LEADER_SLACK_MS, 1000);
    await c.leadership();
    assert.equal(asked(), null);
    await c.isLeader();
    assert.equal(asked(), null);
  } finally {
    c.close();
  }
});

test("a corrupt answer fails the call with a BatonError, never a leader", async () => {
  const c = new Client({ addr });
  try {
    for (const corrupt of ["DwE=", "CAESDHdlYi0wXzNmOWExYxoMd2ViLTBfMw==", "En93ZWI="]) {
      answer = Buffer.from(corrupt, "base64");
      const e = await c.leadership().then(
        (l) => assert.fail(`converted to ${l.isLeader ? "a leader" : "a follower"}`),
        (e: unknown) => e,
      );
      assert.ok(e instanceof BatonError && !(e instanceof SidecarUnavailableError), `${e}`);
      assert.equal(e.grpcCode, grpc.status.INTERNAL);
      await assert.rejects(c.isLeader(), BatonError);
    }
  } finally {
    c.close();
  }
});

test("a client id that the sidecar would refuse is refused at construction", () => {
  assert.throws(() => new Client({ clientId: "has space" }), TypeError);
  assert.throws(() => new Client({ clientId: "x".repeat(65) }), TypeError);
  assert.throws(() => new Client({ addr: "nonsense" }), TypeError);
});

test("close() ends the client's watches, and waitUntilLeader with them", async () => {
  const c = new Client({ addr: "127.0.0.1:1", minBackoffMs: 20, maxBackoffMs: 50 });
  const states: unknown[] = [];
  const watching = (async () => {
    for await (const l of c.watch()) states.push(l.error);
  })();
  const waiting = c.waitUntilLeader();
  await new Promise((r) => setTimeout(r, 200));
  c.close();
  await watching; // ends, without an error
  await assert.rejects(waiting, /closed/);
  assert.ok(states.length > 0 && states.every((e) => e instanceof SidecarUnavailableError));
  const after = await c.watch().next();
  assert.equal(after.done, true, "a watch of a closed client ends at once");
});
