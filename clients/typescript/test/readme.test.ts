// The README's worked example is examples/quickstart.ts, word for word, and it runs against the
// demo site as the README says.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { PACKAGE_DIR } from "../scripts/project.js";
import { type DemoSite, demoSite } from "./demo-site.js";

const EXAMPLE = "examples/quickstart.ts";
// The package imports itself by name: the condition resolves it to src/ (no build needed).
const RUN = ["--conditions=ilab-memory-source", "--import", "tsx", EXAMPLE];
let site: DemoSite;

before(async () => {
  site = await demoSite();
});
after(() => site.stop());

test("the README shows examples/quickstart.ts as it is", () => {
  const readme = readFileSync(`${PACKAGE_DIR}README.md`, "utf8");
  const shown = readme.match(/<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```\n/);
  assert.ok(shown, "the README has no marked example");
  assert.equal(shown[1], EXAMPLE);
  assert.equal(shown[2], readFileSync(`${PACKAGE_DIR}${EXAMPLE}`, "utf8"));
  assert.ok(readme.includes(`\nnode ${RUN.join(" ")}\n`), "the README runs the example as this test does");
});

test("the example runs against the demo site with a plain account's token", async () => {
  const env = { ...process.env, ILAB_MEMORY_API: site.apiUrl, ILAB_MEMORY_TOKEN: site.agent.token };
  const { stdout } = await promisify(execFile)(process.execPath, RUN, { cwd: PACKAGE_DIR, env });
  const printed = stdout.trim().split("\n");
  // The README's "it prints:" block, but for the session's id (a new one each run).
  const readme = readFileSync(`${PACKAGE_DIR}README.md`, "utf8");
  const said = readme.match(/it prints:\n\n```text\n([\s\S]*?)```\n/)![1]!.trim().split("\n");
  assert.match(said[0]!, /^session 0f1e…: 3 memories in context$/);
  assert.match(printed[0]!, /^session [0-9a-f-]{36}: 3 memories in context$/);
  assert.deepEqual(printed.slice(1), said.slice(1));
  assert.equal(said.length, 9);
});
