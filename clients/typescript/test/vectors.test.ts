// The conformance suite's vector scenarios (clients/conformance/vectors):
// every case of every file, decided by the same functions the clients use,
// at the clock readings the cases give.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import * as grpc from "@grpc/grpc-js";

import { errorFromStatus, packageDefinition } from "../src/client.js";
import {
  BatonError,
  MalformedAnswerError,
  NotLeaderError,
  SidecarUnavailableError,
  StaleRevisionError,
  StaleTokenError,
} from "../src/errors.js";
import {
  Fence,
  formatRevision,
  formatToken,
  parseRevision,
  parseToken,
  REVISION_HEADER,
  RevisionFence,
  TOKEN_HEADER,
} from "../src/fence.js";
import { requireLeaderBoundMs } from "../src/elector.js";
import { HttpClient } from "../src/http.js";
import { checkLeader, type Leadership, leadershipFromJson, leadershipFromProto } from "../src/leadership.js";
import type { Leadership__Output } from "../src/gen/baton/v1/Leadership.js";
import { eachCase, loadVectors } from "./conformance.js";

interface Expected {
  error?: true;
  isLeader: boolean;
  identity: string;
  holderIdentity: string;
  fencingToken: number;
  fencingRevision: string;
  leaseName: string;
  leaseNamespace: string;
  leaseUid: string;
  acquireTimeUnixMs: number | null;
  renewTimeUnixMs: number | null;
  validForMs: number;
  validUntilBoottimeMs: number;
  leaseDurationMs: number;
  observed: boolean;
  steppingDown: boolean;
}

/** A Leadership in the vector files' terms: durations and boottimes truncated to whole ms. */
function asVector(l: Leadership): Expected {
  return {
    isLeader: l.isLeader,
    identity: l.identity,
    holderIdentity: l.holderIdentity,
    fencingToken: l.fencingToken,
    fencingRevision: l.fencingRevision.toString(),
    leaseName: l.leaseName,
    leaseNamespace: l.leaseNamespace,
    leaseUid: l.leaseUid,
    acquireTimeUnixMs: l.acquireTime?.getTime() ?? null,
    renewTimeUnixMs: l.renewTime?.getTime() ?? null,
    validForMs: Math.trunc(l.validForMs),
    validUntilBoottimeMs: Math.trunc(l.validUntilBoottimeMs),
    leaseDurationMs: Math.trunc(l.leaseDurationMs),
    observed: l.observed,
    steppingDown: l.steppingDown,
  };
}

interface ConversionCase {
  name: string;
  sinceMs: number;
  expect: Expected;
}

test("leadership-json", async (t) => {
  const { cases } = loadVectors<{ cases: (ConversionCase & { text: string })[] }>("leadership_json.json");
  await eachCase(t, "leadership-json", cases, (c) => {
    if (c.expect.error) {
      assert.throws(() => leadershipFromJson(c.text, c.sinceMs, true), MalformedAnswerError);
    } else {
      assert.deepEqual(asVector(leadershipFromJson(c.text, c.sinceMs, true)), c.expect);
    }
  });
});

/** Decodes a serialized baton.v1.Leadership as the gRPC client's stub does. */
function decodeLeadership(bytes: Buffer): Leadership__Output {
  const method = packageDefinition["baton.v1.LeaderElection"] as grpc.ServiceDefinition;
  return method.GetLeadership!.responseDeserialize(bytes) as Leadership__Output;
}

test("leadership-proto", async (t) => {
  const { cases } = loadVectors<{ cases: (ConversionCase & { base64: string })[] }>("leadership_proto.json");
  await eachCase(t, "leadership-proto", cases, (c) => {
    const bytes = Buffer.from(c.base64, "base64");
    const convert = () => leadershipFromProto(decodeLeadership(bytes), c.sinceMs, true);
    if (c.expect.error) {
      assert.throws(convert); // bad wire format, or MalformedAnswerError for a malformed field
    } else {
      assert.deepEqual(asVector(convert()), c.expect);
    }
  });
});

test("validity", async (t) => {
  const { cases } = loadVectors<{
    cases: { name: string; text: string; sinceMs: number; checks: { nowMs: number; remainingMs: number }[] }[];
  }>("validity.json");
  await eachCase(t, "validity", cases, (c) => {
    const l = leadershipFromJson(c.text, c.sinceMs, true);
    for (const check of c.checks) {
      assert.equal(Math.trunc(l.remainingMs(check.nowMs)), check.remainingMs, `at ${check.nowMs}ms`);
    }
  });
});

test("require-leader", async (t) => {
  const { cases } = loadVectors<{
    cases: {
      name: string;
      text: string;
      sinceMs: number;
      nowMs: number;
      minValidityMs: number;
      requestMaxValidForMs: number;
      expect: { token: number; revision: string } | { notLeader: true };
    }[];
  }>("require_leader.json");
  await eachCase(t, "require-leader", cases, (c) => {
    assert.equal(Math.trunc(requireLeaderBoundMs(c.minValidityMs)), c.requestMaxValidForMs, "max_valid_for");
    const l = leadershipFromJson(c.text, c.sinceMs, true);
    if ("notLeader" in c.expect) {
      assert.throws(() => checkLeader(l, c.minValidityMs, c.nowMs), NotLeaderError);
    } else {
      const ok = checkLeader(l, c.minValidityMs, c.nowMs);
      assert.deepEqual({ token: ok.fencingToken, revision: ok.fencingRevision.toString() }, c.expect);
    }
  });
});

test("fence", async (t) => {
  const { cases } = loadVectors<{
    cases: {
      name: string;
      kind: "token" | "revision";
      steps: { admit: number | string; ok: boolean; highest: number | string }[];
    }[];
  }>("fence.json");
  await eachCase(t, "fence", cases, (c) => {
    const tokens = new Fence();
    const revisions = new RevisionFence();
    for (const s of c.steps) {
      const admit =
        c.kind === "token" ? () => tokens.admit(s.admit as number) : () => revisions.admit(BigInt(s.admit as string));
      if (s.ok) admit();
      else assert.throws(admit, c.kind === "token" ? StaleTokenError : StaleRevisionError, `admit ${s.admit}`);
      const highest = c.kind === "token" ? tokens.highest : revisions.highest?.toString();
      assert.equal(highest, s.highest, `highest after admit ${s.admit}`);
    }
  });
});

test("fence-headers", async (t) => {
  const v = loadVectors<{
    tokenHeader: string;
    revisionHeader: string;
    cases: {
      name: string;
      kind: "token" | "revision";
      header?: string | null;
      format?: number | string;
      expect: unknown;
    }[];
  }>("fence_headers.json");
  assert.equal(TOKEN_HEADER, v.tokenHeader);
  assert.equal(REVISION_HEADER, v.revisionHeader);
  await eachCase(t, "fence-headers", v.cases, (c) => {
    if (c.format !== undefined) {
      const text = c.kind === "token" ? formatToken(c.format as number) : formatRevision(BigInt(c.format));
      assert.equal(text, c.expect);
      return;
    }
    const parse = () => (c.kind === "token" ? parseToken(c.header) : parseRevision(c.header).toString());
    if (c.expect === "error") assert.throws(parse, BatonError);
    else assert.equal(parse(), c.expect);
  });
});

/** A local server that answers every request with `status`, or never answers (null). */
async function serve(status: number | null): Promise<{ addr: string; server: Server }> {
  const server = createServer((_req, res) => {
    if (status !== null) res.writeHead(status, { "content-type": "text/plain" }).end("reason\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { addr: `127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<string> {
  const { addr, server } = await serve(200);
  await new Promise((resolve) => server.close(resolve));
  return addr;
}

test("errors", async (t) => {
  const v = loadVectors<{
    grpc: { code: string; error: "unavailable" | "other" }[];
    http: { name: string; outcome: "refused" | "timeout" | number; error: "unavailable" | "other" }[];
  }>("errors.json");
  const expectKind = (e: unknown, kind: "unavailable" | "other") => {
    assert.ok(e instanceof BatonError, `${e} is a BatonError`);
    assert.equal(e instanceof SidecarUnavailableError, kind === "unavailable", `${e}`);
  };
  const grpcCases = v.grpc.map((row) => ({
    name: `grpc-${row.code}`,
    run: () => {
      const code = grpc.status[row.code as keyof typeof grpc.status] as number;
      assert.equal(typeof code, "number", row.code);
      const e = errorFromStatus("127.0.0.1:4041", code, "details");
      expectKind(e, row.error);
      assert.equal(e.grpcCode, code);
    },
  }));
  const httpCases = v.http.map((row) => ({
    name: `http-${row.name}`,
    run: async () => {
      const target =
        row.outcome === "refused"
          ? { addr: await closedPort(), server: undefined }
          : await serve(row.outcome === "timeout" ? null : row.outcome);
      try {
        const client = new HttpClient({ addr: target.addr, callTimeoutMs: 300 });
        const e = await client.leadership().then(
          () => assert.fail("no error"),
          (e: unknown) => e,
        );
        expectKind(e, row.error);
        if (typeof row.outcome === "number") assert.equal((e as BatonError).httpStatus, row.outcome);
      } finally {
        target.server?.closeAllConnections();
        target.server?.close();
      }
    },
  }));
  await eachCase(t, "errors", [...grpcCases, ...httpCases], (c) => c.run());
});
