// The committed src/gen/descriptor.ts is what scripts/generate.js makes of
// proto/ now: a proto change without `npm run generate` fails here.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

test("src/gen/descriptor.ts is up to date with proto/baton/v1", async () => {
  const generator = new URL("../../scripts/generate.js", import.meta.url).href; // from build/test/
  const { descriptorSource } = (await import(generator)) as { descriptorSource: () => string };
  const committed = readFileSync(new URL("../../src/gen/descriptor.ts", import.meta.url), "utf8");
  assert.equal(committed, descriptorSource(), "run `npm run generate` and commit src/gen");
});
