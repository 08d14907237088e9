// The committed types are what openapi-typescript makes of the API's schema today: a change to
// the API that is not regenerated (`npm run generate`) fails here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { projectSchema, SCHEMA_TS, typesFrom } from "../scripts/schema.js";

const schema = projectSchema();

test("src/schema.ts matches the API's OpenAPI schema", async () => {
  const generated = await typesFrom(schema);
  assert.ok(readFileSync(SCHEMA_TS, "utf8") === generated, "src/schema.ts is stale: run `npm run generate` and commit it");
});

test("every operation of the schema has its path in the types", () => {
  const types = readFileSync(SCHEMA_TS, "utf8");
  for (const path of Object.keys(schema.paths ?? {})) assert.ok(types.includes(`"${path}": {`), path);
});
