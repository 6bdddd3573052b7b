// CLOCK_BOOTTIME from CLOCK_MONOTONIC and /proc/uptime: never early, tight
// once a read falls before a tick, and a suspend noticed at the next reading.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { BoottimeClock, boottimeMs, sharesSidecarClock } from "../src/clock.js";

/** A machine whose clocks advance 2 µs at every read, and that can be suspended. */
class FakeMachine {
  monotonicMs = 5_000_000.0004;
  suspendedMs = 123.4567; // CLOCK_BOOTTIME - CLOCK_MONOTONIC
  private tick(): void {
    this.monotonicMs += 0.002;
  }
  boottime(): number {
    return this.monotonicMs + this.suspendedMs;
  }
  readonly monotonic = (): number => {
    this.tick();
    return this.monotonicMs;
  };
  readonly uptime = (): number => {
    this.tick();
    return Math.floor(this.boottime() / 10) * 10;
  };
  /** Time passing outside the clock's reads. */
  advance(ms: number): void {
    this.monotonicMs += ms;
  }
}

test("BoottimeClock is never early, and within 10 ms after its first reading", () => {
  const m = new FakeMachine();
  const clock = new BoottimeClock(m.uptime, m.monotonic);
  const before = m.boottime();
  const first = clock.now();
  assert.ok(first >= before, `${first} >= ${before}`);
  assert.ok(first - m.boottime() < 10, `${first - m.boottime()} ms late`);
});

test("BoottimeClock tightens to microseconds once a reading falls just before a tick", () => {
  const m = new FakeMachine();
  const clock = new BoottimeClock(m.uptime, m.monotonic);
  for (let i = 0; i < 2000; i++) {
    m.advance(0.0173); // readings at every phase of /proc/uptime's 10 ms
    const truth = m.boottime();
    const reading = clock.now();
    assert.ok(reading >= truth, `reading ${i} early by ${truth - reading} ms`);
  }
  const late = clock.now() - m.boottime();
  assert.ok(late >= 0 && late < 0.02, `${late} ms late`);
});

test("BoottimeClock notices a suspend at the next reading and stays never early", () => {
  const m = new FakeMachine();
  const clock = new BoottimeClock(m.uptime, m.monotonic);
  for (let i = 0; i < 1000; i++) {
    m.advance(0.0173);
    clock.now();
  }
  m.suspendedMs += 42_000; // the machine slept 42 s: CLOCK_MONOTONIC did not count it
  const reading = clock.now();
  assert.ok(reading >= m.boottime(), `early by ${m.boottime() - reading} ms after a suspend`);
  assert.ok(reading - m.boottime() < 10, `${reading - m.boottime()} ms late after a suspend`);
});

test(
  "boottimeMs agrees with /proc/uptime: at or after it, within its 10 ms resolution",
  { skip: !sharesSidecarClock() },
  (t) => {
    boottimeMs();
    for (let i = 0; i < 50; i++) {
      const [secs, centis] = readFileSync("/proc/uptime", "latin1").split(" ")[0]!.split(".");
      const uptimeMs = Number(secs) * 1000 + Number(centis) * 10;
      const reading = boottimeMs();
      assert.ok(reading >= uptimeMs, `${reading} >= ${uptimeMs}`);
      assert.ok(reading < uptimeMs + 10 + 50, `${reading} within a tick (and a slow read) of ${uptimeMs}`);
    }
    const n = 10000;
    const start = performance.now();
    for (let i = 0; i < n; i++) boottimeMs();
    t.diagnostic(`boottimeMs: ${(((performance.now() - start) / n) * 1000).toFixed(1)} µs a reading`);
  },
);
