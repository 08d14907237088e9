// Cursor pages as async iterators, the API under another mount, and scopes through the client.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { MemoryClient, type MemoryClientOptions } from "../src/index.js";
import { type DemoSite, demoSite } from "./demo-site.js";

let site: DemoSite;

before(async () => {
  site = await demoSite();
});
after(() => site.stop());

/** A client acting for `user`, and the URLs it requested (the real fetch sends them). */
function recording(user: string, options: Partial<MemoryClientOptions> = {}) {
  const requested: URL[] = [];
  const memory = new MemoryClient({
    baseUrl: site.apiUrl,
    token: site.backend.token,
    userId: user,
    fetch: (request) => {
      requested.push(new URL(request.url));
      return fetch(request);
    },
    ...options,
  });
  return { memory, requested };
}

test("observations page to the end, newest first, one request per page", async () => {
  const { memory, requested } = recording("ts-paging");
  const saved = [];
  for (let n = 1; n <= 7; n++) saved.push((await memory.save({ title: `Note ${n}`, content: `Paged note ${n}.` })).observation);

  requested.length = 0;
  const listed = [];
  for await (const row of memory.observations({ page_size: 3 })) listed.push(row.id);
  assert.deepEqual(listed, saved.map((row) => row.id).reverse());
  assert.equal(requested.length, 3);
  assert.deepEqual(requested.map((url) => url.searchParams.has("cursor")), [false, true, true]);
  assert.ok(requested.every((url) => url.searchParams.get("page_size") === "3"));
});

test("leaving the loop early fetches no further page", async () => {
  const { memory, requested } = recording("ts-paging");
  for await (const row of memory.observations({ page_size: 2 })) {
    assert.equal(row.title, "Note 7");
    break;
  }
  assert.equal(requested.length, 1);
});

test("sessions page to the end with their filters", async () => {
  const { memory } = recording("ts-paging-sessions");
  for (let n = 0; n < 5; n++) {
    await memory.start();
    await memory.end({ summary: `Session ${n}.` });
  }
  await memory.start();
  const completed = [];
  for await (const session of memory.sessions({ status: "completed", page_size: 2 })) completed.push(session.summary);
  assert.deepEqual(completed, ["Session 4.", "Session 3.", "Session 2.", "Session 1.", "Session 0."]);
  let all = 0;
  for await (const _ of memory.sessions({ page_size: 100 })) all++;
  assert.equal(all, 6);
  let human = 0;
  for await (const _ of memory.sessions({ is_auto_generated: false, status: "completed" })) human++;
  assert.equal(human, 5);
});

test("a call's signal cancels it, a page fetch included", async () => {
  const { memory } = recording("ts-paging");
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(memory.search("note", {}, { signal: controller.signal }), { name: "AbortError" });
  await assert.rejects(memory.observations({}, { signal: controller.signal }).next(), { name: "AbortError" });
});

test("a client given another mount reaches the API there, pages included", async () => {
  const { memory, requested } = recording("ts-paging", { baseUrl: `${site.url}/memory/v1` });
  const listed = [];
  for await (const row of memory.observations({ page_size: 4 })) listed.push(row.title);
  assert.equal(listed.length, 7);
  assert.ok(requested.every((url) => url.pathname === "/memory/v1/observations/"), requested.join(" "));
  const saved = await memory.save({ title: "Remounted", content: "Saved through /memory/v1/." });
  assert.equal((await memory.get(saved.observation.id)).title, "Remounted");
  assert.ok(requested.at(-1)!.pathname.startsWith("/memory/v1/observations/"));
});

test("scopes: a write lands in one, a read sees one with the shared space, a list or every scope", async () => {
  const { memory, requested } = recording("ts-scopes");
  await memory.save({ title: "Name", content: "Ana prefers Ani." });
  const refund = (await memory.save({ scope: "support", title: "Refund", content: "Refund for order 881 sent." })).observation;
  const branch = (await memory.save({ scope: "coding", title: "Branch", content: "Ani works on branch refund-fix." })).observation;
  assert.equal(refund.scope, "support");

  const titles = async (scope: string | string[]) => (await memory.context({ scope })).map((row) => row.title).sort();
  assert.deepEqual(await titles("support"), ["Name", "Refund"]);
  assert.deepEqual(await titles("coding"), ["Branch", "Name"]);
  assert.deepEqual(await titles(["support", "coding"]), ["Branch", "Refund"]);
  assert.deepEqual(await titles("*"), ["Branch", "Name", "Refund"]);
  assert.deepEqual(requested.at(-2)!.searchParams.getAll("scope"), ["support", "coding"]);

  assert.deepEqual((await memory.search("refund", { scope: "coding" })).map((row) => row.id), [branch.id]);
  assert.equal((await memory.stats({ scope: "*" })).observations_by_scope.support, 1);
  await assert.rejects(memory.get(refund.id, { scope: "coding" }), { status: 404 });
  await assert.rejects(memory.delete(refund.id), { code: "observation_not_found" });
  await memory.delete(refund.id, { scope: "support" });

  const exported = await memory.export({ scope: "coding" });
  assert.deepEqual((exported.observations as { id: string }[]).map((row) => row.id), [branch.id]);
  const erased = await memory.forget({ confirm: "ts-scopes", scope: "coding" });
  assert.equal(erased.observations, 1);
  assert.deepEqual(await titles("*"), ["Name"]);
});
