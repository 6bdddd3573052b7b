// The conformance suite (clients/conformance): its vector files, and the
// report a passing scenario appends its id to ($BATON_CONFORMANCE_REPORT).

import { appendFileSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { TestContext } from "node:test";

const SUITE = fileURLToPath(new URL("../../../conformance/", import.meta.url));

/** A vector file: `{description, cases: [{name, ...}]}` (errors.json has other keys). */
export function loadVectors<T>(file: string): T {
  return JSON.parse(readFileSync(`${SUITE}vectors/${file}`, "utf8")) as T;
}

/** Appends `id` to $BATON_CONFORMANCE_REPORT, if set. Call it after a scenario's last assertion. */
export function reportPassed(id: string): void {
  const report = process.env.BATON_CONFORMANCE_REPORT;
  if (report) appendFileSync(report, `${id}\n`);
}

/**
 * Runs one subtest per case (named after it) and reports `id` once every
 * case has passed.
 */
export async function eachCase<C extends { name: string }>(
  t: TestContext,
  id: string,
  cases: C[],
  check: (c: C) => void | Promise<void>,
): Promise<void> {
  let passed = 0;
  for (const c of cases) {
    await t.test(c.name, async () => {
      await check(c);
      passed++;
    });
  }
  if (cases.length > 0 && passed === cases.length) reportPassed(id);
}
