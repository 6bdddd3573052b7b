// Leadership beyond the conformance vectors: the server-side-apply field
// manager, the same in every baton client.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Leadership } from "../src/leadership.js";

const manager = (identity: string) => new Leadership({ identity }).fieldManager;

test("fieldManager is the identity when the API server takes it", () => {
  for (const id of ["web-0_3f9a1c", "a".repeat(128), "pod name with spaces", ""]) assert.equal(manager(id), id);
});

test("fieldManager is the same in every client for identities the API server would refuse", () => {
  assert.equal(manager(`${"x".repeat(200)}_1`), `${"x".repeat(111)}-090fac22cfc2b4ad`);
  assert.equal(manager("tab\there"), "tab_here-778309ed1f28b0f9");
  assert.equal(manager("ünïcode"), "__n__code-b1b0d40350a25beb");
});
