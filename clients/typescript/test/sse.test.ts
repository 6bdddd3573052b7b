// The text/event-stream parser, fed canned bytes of the sidecar's
// GET /leader/watch split in every way a network can split them.

import assert from "node:assert/strict";
import { test } from "node:test";

import { type SseItem, SseParser, SseTooLargeError } from "../src/sse.js";

const LEADER = '{"isLeader":true,"fencingToken":7,"validUntilBoottime":"12345.678s"}';
const FOLLOWER = '{"isLeader":false,"fencingToken":7}';
// What the sidecar writes (sidecar/api/sse_leadership.h).
const STREAM = `event: leadership\ndata: ${LEADER}\n\n: heartbeat\n\nevent: leadership\ndata: ${FOLLOWER}\n\n`;
const EXPECTED: SseItem[] = [
  { kind: "event", event: "leadership", data: LEADER, id: undefined },
  { kind: "comment", text: "heartbeat" },
  { kind: "event", event: "leadership", data: FOLLOWER, id: undefined },
];

function parseChunks(chunks: string[]): SseItem[] {
  const p = new SseParser();
  return chunks.flatMap((c) => p.push(c));
}

test("SseParser reads the sidecar's stream: an event per data line, heartbeats as comments", () => {
  assert.deepEqual(parseChunks([STREAM]), EXPECTED);
});

test("SseParser gives the same items however the bytes are split", () => {
  for (let i = 0; i <= STREAM.length; i++) {
    assert.deepEqual(parseChunks([STREAM.slice(0, i), STREAM.slice(i)]), EXPECTED, `split at ${i}`);
  }
  assert.deepEqual(parseChunks([...STREAM]), EXPECTED, "one character at a time");
});

test("SseParser accepts CRLF and CR line ends, even split between chunks", () => {
  for (const eol of ["\r\n", "\r"]) {
    const text = STREAM.replaceAll("\n", eol);
    for (let i = 0; i <= text.length; i++) {
      assert.deepEqual(
        parseChunks([text.slice(0, i), text.slice(i)]),
        EXPECTED,
        `${JSON.stringify(eol)} split at ${i}`,
      );
    }
  }
});

test("SseParser names an event without an event field 'message'", () => {
  assert.deepEqual(parseChunks([`data: ${LEADER}\n\n`]), [
    { kind: "event", event: "message", data: LEADER, id: undefined },
  ]);
});

test("SseParser joins multi-line data, keeps event names and ids, ignores other fields", () => {
  const items = parseChunks(['event: leadership\nid: 4\nretry: 100\nfoo: bar\ndata: {\ndata:"a":1}\n\n']);
  assert.deepEqual(items, [{ kind: "event", event: "leadership", data: '{\n"a":1}', id: "4" }]);
});

test("SseParser dispatches nothing for an event without its blank line, or without data", () => {
  assert.deepEqual(parseChunks([`data: ${LEADER}\n`]), []);
  assert.deepEqual(parseChunks(["event: x\n\n"]), []);
});

test("SseParser refuses an event or a line beyond its limit", () => {
  const p = new SseParser(64);
  assert.throws(() => p.push(`data: ${"x".repeat(100)}\n\n`), SseTooLargeError);
  assert.throws(() => new SseParser(64).push("x".repeat(100)), SseTooLargeError);
});
