// Time against the running demo site: happened_at and expiry on writes, since/until on every read
// (strings with offsets or Dates), date phrases read at `now` in a time zone, bad times refused
// naming the field, and a memory past its ttl gone from every read at once.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";

import { MemoryApiError, MemoryClient } from "../src/index.js";
import { type DemoSite, demoSite } from "./demo-site.js";

let site: DemoSite;
let memory: MemoryClient;
let user = 0;

before(async () => {
  site = await demoSite();
});
after(() => site.stop());

/** A client acting for a user of its own: each test starts from an empty memory. */
function fresh(): MemoryClient {
  user += 1;
  return new MemoryClient({ baseUrl: site.apiUrl, token: site.backend.token, userId: `ts-time-${user}` });
}

/** 08:00 … 12:00 UTC on 2 March 2026. */
const at = (hour: number) => new Date(Date.UTC(2026, 2, 2, hour));

async function standups(): Promise<MemoryClient> {
  memory = fresh();
  for (let hour = 8; hour <= 12; hour++) {
    await memory.save({ title: `${hour}h`, content: "standup notes", happened_at: at(hour) });
  }
  return memory;
}

async function listed(options: Parameters<MemoryClient["observations"]>[0]): Promise<string[]> {
  const titles = [];
  for await (const row of memory.observations(options)) titles.push(row.title);
  return titles.sort();
}

async function refused(call: Promise<unknown>, field: string, code: string): Promise<MemoryApiError> {
  const error = await call.then(
    () => assert.fail("expected a 400"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof MemoryApiError);
  assert.equal(error.status, 400);
  assert.equal(error.code, code);
  assert.deepEqual(Object.keys(error.fieldErrors), [field]);
  return error;
}

test("happened_at goes in as a Date or with an offset and comes back in UTC; ttl sets expires_at", async () => {
  memory = fresh();
  const moved = await memory.save({ title: "Moved", content: "to Berlin", happened_at: "2026-03-01T09:30:00+01:00" });
  assert.equal(moved.observation.happened_at, "2026-03-01T08:30:00+00:00");
  assert.equal(moved.observation.expires_at, null);
  const dated = await memory.save({ title: "Dated", content: "a Date", happened_at: at(9) });
  assert.equal(dated.observation.happened_at, "2026-03-02T09:00:00+00:00");

  const started = Date.now();
  const trip = await memory.save({ title: "Trip", content: "in Lisbon", ttl: 3600 });
  const expires = Date.parse(trip.observation.expires_at!);
  assert.ok(expires >= started + 3_599_000 && expires <= Date.now() + 3_601_000);

  const updated = await memory.update(moved.observation.id, { happened_at: at(10), expires_at: new Date(Date.UTC(2099, 0, 1)) });
  assert.equal(updated.happened_at, "2026-03-02T10:00:00+00:00");
  assert.equal(updated.expires_at, "2099-01-01T00:00:00+00:00");
  const [revision] = await memory.revisions(moved.observation.id);
  assert.equal(revision!.happened_at, "2026-03-01T08:30:00+00:00");
  assert.equal((await memory.update(moved.observation.id, { expires_at: null })).expires_at, null);

  const [compact] = await memory.search("berlin");
  assert.equal(compact!.happened_at, "2026-03-02T10:00:00+00:00");
});

test("since is inclusive and until exclusive on the list, search and context", async () => {
  await standups();
  const period = { since: at(9), until: at(11) };
  assert.deepEqual(await listed(period), ["10h", "9h"]);
  assert.deepEqual((await memory.search("standup", period)).map((row) => row.title).sort(), ["10h", "9h"]);
  assert.deepEqual((await memory.context(period)).map((row) => row.title).sort(), ["10h", "9h"]);
  assert.deepEqual(await listed({ since: "2026-03-02T12:00:00+01:00" }), ["11h", "12h"]);
  assert.deepEqual(await listed({ until: "2026-03-02T09:00:00Z" }), ["8h"]);
  assert.deepEqual(await listed({ since: "2026-03-02", until: "2026-03-03" }), ["10h", "11h", "12h", "8h", "9h"]);
});

test("a date phrase is read at now in the time zone, and the breakdown says which period", async () => {
  memory = fresh();
  await memory.save({ title: "Retro", content: "the retro went well", happened_at: "2026-03-05T15:00:00Z" });
  const [hit] = await memory.search("retro yesterday", {
    now: new Date(Date.UTC(2026, 2, 6, 23, 30)), // 7 March already in Madrid
    time_zone: "Europe/Madrid",
  });
  const period = hit!.score!.breakdown.period as { phrase: string; start: string; end: string };
  assert.equal(period.phrase, "yesterday");
  assert.equal(Date.parse(period.start), Date.parse("2026-03-06T00:00:00+01:00"));
  assert.equal(Date.parse(period.end), Date.parse("2026-03-07T00:00:00+01:00"));
});

test("bad times are a 400 naming the field", async () => {
  memory = fresh();
  await refused(memory.save({ title: "Bad", content: "naive", happened_at: "2026-03-01T09:30:00" }), "happened_at",
    "naive_datetime");
  await refused(memory.save({ title: "Bad", content: "invalid", happened_at: new Date("not a date") }), "happened_at",
    "invalid_datetime");
  assert.equal((await refused(memory.save({ title: "Bad", content: "zero", ttl: 0 }), "ttl", "min_value")).limit, 1);
  await refused(memory.save({ title: "Bad", content: "negative", ttl: -60 }), "ttl", "min_value");
  await refused(memory.save({ title: "Bad", content: "huge", ttl: 1e12 }), "ttl", "max_value");
  await refused(memory.search("standup", { since: "2026-03-02T09:00:00" }), "since", "naive_datetime");
  await refused(memory.context({ since: at(10), until: at(9) }), "until", "empty_period");
  await refused(memory.search("standup", { time_zone: "Mars/Olympus" }), "time_zone", "invalid_time_zone");
  assert.deepEqual(await listed({}), []);
});

test("a memory past its ttl is gone from every read at once", async () => {
  memory = fresh();
  const brief = (await memory.save({ title: "Brief", content: "standup notes", ttl: 1 })).observation;
  await memory.save({ title: "Kept", content: "standup notes" });
  assert.equal((await memory.get(brief.id)).title, "Brief");
  await sleep(1100); // a real second: the site reads the real clock

  const missing = await memory.get(brief.id).then(() => assert.fail("expected a 404"), (error: unknown) => error);
  assert.ok(missing instanceof MemoryApiError);
  assert.equal(missing.code, "observation_not_found");
  assert.deepEqual(await listed({}), ["Kept"]);
  assert.deepEqual((await memory.search("standup")).map((row) => row.title), ["Kept"]);
  assert.deepEqual((await memory.context()).map((row) => row.title), ["Kept"]);
  assert.equal((await memory.stats()).observations, 1);
});
