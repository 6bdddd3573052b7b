// Leadership beyond the conformance vectors: the server-side-apply field
// manager, the same in every baton client.

import assert from "node:assert/strict";
import { test } from "node:test";

import { formatDurationNs, Leadership, leadershipFromJson, leadershipFromProto } from "../src/leadership.js";

const manager = (identity: string) => new Leadership({ identity }).fieldManager;

test("fieldManager is the identity when the API server takes it", () => {
  for (const id of ["web-0_3f9a1c", "a".repeat(128), "pod name with spaces", ""]) assert.equal(manager(id), id);
});

test("fieldManager is the same in every client for identities the API server would refuse", () => {
  assert.equal(manager(`${"x".repeat(200)}_1`), `${"x".repeat(111)}-090fac22cfc2b4ad`);
  assert.equal(manager("tab\there"), "tab_here-778309ed1f28b0f9");
  assert.equal(manager("ünïcode"), "__n__code-b1b0d40350a25beb");
});

test("a leader answer keeps the sidecar's deadline to the nanosecond", () => {
  const json = JSON.stringify({ isLeader: true, validFor: "1s", validUntilBoottime: "1234567.123456789s" });
  assert.equal(leadershipFromJson(json, 0).validUntilBoottimeNs, 1_234_567_123_456_789n);
  const m = {
    isLeader: true,
    fencingRevision: "0",
    validFor: { seconds: "1", nanos: 0 },
    validUntilBoottime: { seconds: "1234567", nanos: 123_456_789 },
  };
  const l = leadershipFromProto(m as unknown as Parameters<typeof leadershipFromProto>[0], 0);
  assert.equal(l.validUntilBoottimeNs, 1_234_567_123_456_789n);
  assert.equal(l.expired().validUntilBoottimeNs, 0n);
  assert.equal(formatDurationNs(1_234_567_000_000_001n), "1234567.000000001s");
});
