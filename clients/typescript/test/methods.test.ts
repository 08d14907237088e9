// Every method of the client against the running demo site, as an agent backend acting for a
// user_id of this file's own (so files sharing the site never see each other's rows).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { MemoryClient } from "../src/index.js";
import { type DemoSite, demoSite } from "./demo-site.js";

const USER = "ts-methods";
let site: DemoSite;
let memory: MemoryClient;

before(async () => {
  site = await demoSite();
  memory = new MemoryClient({ baseUrl: site.apiUrl, token: site.backend.token, userId: USER });
});
after(() => site.stop());

test("a session starts, is reused, summarized, read and ended", async () => {
  const started = await memory.start();
  assert.equal(started.is_new, true);
  assert.deepEqual(started.memories, []);
  const again = await memory.start();
  assert.equal(again.session_id, started.session_id);
  assert.equal(again.is_new, false);

  const summarized = await memory.summary("Talked about databases.");
  assert.equal(summarized.summary, "Talked about databases.");
  assert.equal(summarized.status, "active");

  const record = await memory.session(started.session_id);
  assert.equal(record.id, started.session_id);
  assert.equal(record.user_id, USER);

  const ended = await memory.end({ summary: "Chose PostgreSQL." });
  assert.equal(ended.id, started.session_id);
  assert.equal(ended.status, "completed");
  assert.equal(ended.summary, "Chose PostgreSQL.");
});

test("save creates, revises by topic_key and counts duplicates; private text is redacted", async () => {
  const created = await memory.save({
    title: "Use PostgreSQL in production",
    content: "SQLite stays for embedded mode. DB password: <private>hunter2</private>",
    type: "decision",
    topic_key: "Database choice",
    metadata: { source: "ts" },
  });
  assert.equal(created.action, "created");
  assert.equal(created.observation.topic_key, "database-choice");
  assert.equal(created.observation.content, "SQLite stays for embedded mode. DB password: [REDACTED]");
  assert.equal(created.observation.redacted_blocks, 1);
  assert.deepEqual(created.observation.metadata, { source: "ts" });

  const revised = await memory.save({
    title: "Use PostgreSQL 16", content: "Upgraded.", type: "decision", topic_key: "database choice",
  });
  assert.equal(revised.action, "revised");
  assert.equal(revised.observation.id, created.observation.id);

  const note = { title: "Standup", content: "Standup moved to 9:30." };
  const original = await memory.save(note);
  const duplicate = await memory.save(note);
  assert.equal(duplicate.action, "duplicate");
  assert.equal(duplicate.observation.id, original.observation.id);
  assert.equal(duplicate.observation.duplicate_count, 2);
});

test("get, update, revisions, timeline, search and context read what was saved", async () => {
  const first = (await memory.save({ title: "Editor", content: "Four-space indents everywhere." })).observation;
  const second = (await memory.save({ title: "Shell", content: "Prefers zsh with vi keys." })).observation;

  const full = await memory.get(first.id);
  assert.equal(full.content, "Four-space indents everywhere.");
  assert.equal(full.type, "manual");

  const updated = await memory.update(first.id, { title: "Editor settings", topic_key: "editor" });
  assert.equal(updated.title, "Editor settings");
  assert.equal(updated.revision_count, 2);
  const revisions = await memory.revisions(first.id);
  assert.equal(revisions.length, 1);
  assert.equal(revisions[0]!.title, "Editor");
  assert.deepEqual(await memory.revisions(second.id), []);

  const timeline = await memory.timeline(second.id, { before: 5, after: 0 });
  assert.equal(timeline.anchor.id, second.id);
  assert.deepEqual(timeline.after, []);
  assert.ok(timeline.before.some((row) => row.id === first.id));

  const found = await memory.search("zsh");
  assert.deepEqual(found.map((row) => row.id), [second.id]);
  assert.equal(found[0]!.score?.kind, "search");
  assert.deepEqual(await memory.search("zsh", { type: "decision" }), []);

  const context = await memory.context({ limit: 2 });
  assert.equal(context.length, 2);
  assert.ok(context.every((row) => row.score?.kind === "context"));
});

test("min_score leaves out the results scoring below it", async () => {
  const user = "ts-min-score";
  const mine = new MemoryClient({ baseUrl: site.apiUrl, token: site.backend.token, userId: user });
  await mine.save({ title: "Boiler service", content: "The boiler is serviced every October by Acme Heating." });
  await mine.save({ title: "Boiler pressure", content: "Keep the boiler at 1.5 bar." });
  const all = await mine.search("boiler serviced October");
  assert.ok(all.length >= 2);
  const scores = all.map((row) => row.score!.value);
  assert.ok(scores[0]! > scores.at(-1)!);
  const cut = (scores[0]! + scores.at(-1)!) / 2;
  const kept = await mine.search("boiler serviced October", { min_score: cut });
  assert.deepEqual(kept.map((row) => row.id), all.filter((row) => row.score!.value >= cut).map((row) => row.id));
  assert.ok(kept.length > 0 && kept.length < all.length);
  assert.deepEqual(await mine.search("boiler serviced October", { min_score: scores[0]! + 0.01 }), []);
  await mine.forget({ confirm: user });
});

test("delete hides an observation, hard delete erases it; stats count both", async () => {
  const kept = (await memory.save({ title: "Kept", content: "Stays." })).observation;
  const soft = (await memory.save({ title: "Soft", content: "Hidden, restorable." })).observation;
  const hard = (await memory.save({ title: "Hard", content: "Gone for good." })).observation;
  const before = await memory.stats();

  assert.equal(await memory.delete(soft.id), undefined);
  await memory.delete(hard.id, { hard: true });

  const after = await memory.stats();
  assert.equal(after.user_id, USER);
  assert.equal(after.observations, before.observations - 2);
  assert.equal(after.deleted_observations, before.deleted_observations + 1);
  assert.equal((await memory.get(kept.id)).id, kept.id);
});

test("the observations and sessions iterators list the user's rows", async () => {
  const titles = [];
  for await (const row of memory.observations({ type: "decision" })) titles.push(row.title);
  assert.deepEqual(titles, ["Use PostgreSQL 16"]);
  const statuses = new Set();
  for await (const session of memory.sessions()) statuses.add(session.status);
  assert.deepEqual([...statuses].sort(), ["active", "completed"]);
});

test("export, forget and import round-trip a user's memory", async () => {
  const exported = await memory.export();
  assert.equal(exported.format, "ilab_memory.export");
  assert.equal(exported.user_id, USER);
  const stats = await memory.stats({ scope: "*" });

  const erased = await memory.forget({ confirm: USER });
  assert.equal(erased.observations, stats.observations + stats.deleted_observations);
  assert.equal((await memory.stats({ scope: "*" })).observations, 0);

  const imported = await memory.import(exported);  // the soft-deleted one comes back deleted
  assert.equal(imported.observations_created, stats.observations + stats.deleted_observations);
  const again = await memory.import(exported);
  assert.equal(again.observations_created, 0);
  assert.equal((await memory.stats({ scope: "*" })).observations, stats.observations);
});

test("import takes a version 1 document, written before scopes and time", async () => {
  const user = "ts-methods-v1";
  const session = "11111111-1111-4111-8111-111111111111";
  const imported = await memory.import(
    {
      format: "ilab_memory.export",
      version: 1,
      sessions: [
        { id: session, status: "completed", started_at: "2025-01-02T10:00:00Z", last_activity_at: "2025-01-02T10:05:00Z",
          ended_at: "2025-01-02T10:06:00Z", summary: "Talked about tea." },
      ],
      observations: [
        { id: "22222222-2222-4222-8222-222222222222", session_id: session, title: "Tea", content: "Likes green tea.",
          created_at: "2025-01-02T10:01:00Z" },
      ],
      revisions: [],
    },
    { user_id: user },
  );
  assert.equal(imported.observations_created, 1);
  const [found] = await memory.search("green tea", { user_id: user });
  assert.equal(found?.title, "Tea");
  assert.equal(found?.scope, "");
  await memory.forget({ user_id: user, confirm: user });
});
