// The API's errors reach the caller as one class, MemoryApiError, with status, code, message and
// field errors; nothing is written by a refused call.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { MAX_URL_BYTES, MemoryApiError, MemoryClient } from "../src/index.js";
import { type DemoSite, demoSite } from "./demo-site.js";

const USER = "ts-errors";
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
let site: DemoSite;
let memory: MemoryClient;

before(async () => {
  site = await demoSite();
  memory = new MemoryClient({ baseUrl: site.apiUrl, token: site.backend.token, userId: USER });
});
after(() => site.stop());

/** The MemoryApiError `call` rejects with. */
async function refusal(call: Promise<unknown>): Promise<MemoryApiError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof MemoryApiError, `expected a MemoryApiError, got ${error}`);
    return error;
  }
  assert.fail("the call succeeded");
}

test("a 400 names the field, the limit and the size, and writes nothing", async () => {
  const before = await memory.stats({ scope: "*" });
  const error = await refusal(memory.save({ title: "t".repeat(301), content: "Too long a title." }));
  assert.equal(error.status, 400);
  assert.equal(error.name, "MemoryApiError");
  assert.equal(error.code, "max_length");
  assert.deepEqual(Object.keys(error.fieldErrors), ["title"]);
  assert.match(error.fieldErrors.title![0]!, /300/);
  assert.match(error.message, /title/);
  assert.equal(error.limit, 300);
  assert.equal(error.size, 301);
  assert.deepEqual(await memory.stats({ scope: "*" }), before);
});

test("a 400 for a query: a blank search and an out-of-range limit", async () => {
  const blank = await refusal(memory.search("   "));
  assert.equal(blank.status, 400);
  assert.deepEqual(Object.keys(blank.fieldErrors), ["q"]); // as search(q) and the API spell it

  const limit = await refusal(memory.context({ limit: 101 }));
  assert.equal(limit.status, 400);
  assert.equal(limit.code, "max_value");
  assert.ok("limit" in limit.fieldErrors);
});

test("a 400 for a negative min_score names min_score and its limit", async () => {
  const negative = await refusal(memory.search("plan", { min_score: -0.1 }));
  assert.equal(negative.status, 400);
  assert.equal(negative.code, "min_value");
  assert.equal(negative.limit, 0);
  assert.deepEqual(Object.keys(negative.fieldErrors), ["min_score"]);
});

test("a query too long for a URL is refused before it is sent, naming q", async () => {
  let sent = 0;
  const counting = new MemoryClient({
    baseUrl: site.apiUrl,
    token: site.backend.token,
    userId: USER,
    fetch: (request) => {
      sent += 1;
      return fetch(request);
    },
  });
  const long = await refusal(counting.search("ask ".repeat(MAX_URL_BYTES / 4)));
  assert.equal(long.status, 400);
  assert.equal(long.code, "max_length");
  assert.deepEqual(Object.keys(long.fieldErrors), ["q"]);
  assert.equal(long.limit, MAX_URL_BYTES);
  assert.ok(long.size! > MAX_URL_BYTES);
  assert.equal(sent, 0);
  // One the API's own limit refuses (MAX_QUERY_CHARS, 500) is sent, and the API names q too.
  const api = await refusal(counting.search("ask ".repeat(200)));
  assert.equal(api.code, "max_length");
  assert.deepEqual(Object.keys(api.fieldErrors), ["q"]);
  assert.equal(api.limit, 500);
  assert.equal(sent, 1);
});

test("a 400 for a scope that is not a slug, and for '*' on a write", async () => {
  const slug = await refusal(memory.save({ scope: "Support", title: "x", content: "y" }));
  assert.equal(slug.code, "invalid_scope");
  assert.ok("scope" in slug.fieldErrors);
  const star = await refusal(memory.start({ scope: "*" }));
  assert.equal(star.code, "one_scope_required");
});

test("a 401 without a token or with a wrong one", async () => {
  const anonymous = new MemoryClient({ baseUrl: site.apiUrl });
  const missing = await refusal(anonymous.stats());
  assert.equal(missing.status, 401);
  assert.equal(missing.code, "not_authenticated");

  const wrong = new MemoryClient({ baseUrl: site.apiUrl, token: "not-a-token" });
  const invalid = await refusal(wrong.save({ title: "x", content: "y" }));
  assert.equal(invalid.status, 401);
  assert.equal(invalid.code, "authentication_failed");
  assert.deepEqual(invalid.fieldErrors, {});
});

test("a 403 scope_bound for a bound account naming another scope; unnamed, it acts in its own", async () => {
  const bot = new MemoryClient({ baseUrl: site.apiUrl, token: site.supportBot.token });
  const calls = [() => bot.search("refund", { scope: "coding" }), () => bot.stats({ scope: "*" }), () => bot.start({ scope: "" })];
  for (const call of calls) {
    const error = await refusal(call());
    assert.equal(error.status, 403);
    assert.equal(error.code, "scope_bound");
    assert.match(error.message, /support/);
  }
  const saved = await bot.save({ title: "Refund", content: "Refund for order 881 sent." });
  assert.equal(saved.observation.scope, "support");
});

test("a 403 for a plain account naming another user_id says whose token it is", async () => {
  const agent = new MemoryClient({ baseUrl: site.apiUrl, token: site.agent.token, userId: USER });
  const error = await refusal(agent.context());
  assert.equal(error.status, 403);
  assert.equal(error.code, "act_for_any_user_required");
  assert.equal(
    error.message,
    `This token belongs to user ${site.agent.user_id}; omit user_id or use an account allowed to act for any user.`,
  );
});

test("whoami tells a token its user id, its scope and whether it may act for any user", async () => {
  const plain = new MemoryClient({ baseUrl: site.apiUrl, token: site.agent.token });
  assert.deepEqual(await plain.whoami(), { user_id: site.agent.user_id, scope: null, may_act_for_any_user: false });
  const backend = new MemoryClient({ baseUrl: site.apiUrl, token: site.backend.token });
  assert.equal((await backend.whoami()).may_act_for_any_user, true);
  const bot = new MemoryClient({ baseUrl: site.apiUrl, token: site.supportBot.token });
  assert.equal((await bot.whoami()).scope, "support");
});

test("a 404 for an unknown id, another user's id, and no active session", async () => {
  const unknown = await refusal(memory.get(UNKNOWN_ID));
  assert.equal(unknown.status, 404);
  assert.equal(unknown.code, "observation_not_found");

  const theirs = (await memory.save({ title: "Mine", content: "Only ts-errors reads this." })).observation;
  const agent = new MemoryClient({ baseUrl: site.apiUrl, token: site.agent.token });
  const id = theirs.id;
  const calls = [() => agent.get(id), () => agent.revisions(id), () => agent.timeline(id), () => agent.delete(id)];
  for (const call of calls) {
    const error = await refusal(call());
    assert.equal(error.status, 404);
    assert.equal(error.code, "observation_not_found");
  }
  assert.deepEqual(await agent.search("ts-errors"), []);
  assert.equal((await memory.get(theirs.id)).deleted_at, null);

  await memory.end();
  const none = await refusal(memory.end());
  assert.equal(none.status, 404);
  assert.equal(none.code, "no_active_session");
  assert.equal((await refusal(memory.session(UNKNOWN_ID))).code, "session_not_found");
});

test("another user's memory is in none of a plain account's reads", async () => {
  const saved = (await memory.save({ title: "Private plan", content: "Only ts-errors reads this plan." })).observation;
  const agent = new MemoryClient({ baseUrl: site.apiUrl, token: site.agent.token });
  const own = (await agent.save({ title: "Own note", content: "The agent account's own plan." })).observation;
  const ids = new Set<string>();
  for await (const row of agent.observations({ scope: "*" })) ids.add(row.id);
  for (const row of await agent.search("plan", { scope: "*" })) ids.add(row.id);
  for (const row of await agent.context({ scope: "*" })) ids.add(row.id);
  const document = await agent.export();
  for (const row of document.observations) ids.add(row.id);
  assert.ok(ids.size > 0, "the agent's own memory is read");
  assert.ok(!ids.has(saved.id), "another user's memory reached a plain account");
  assert.ok(document.user_id !== USER);
  // Only this test's note goes: the README's example runs on the demo's own memories of this account.
  await agent.delete(own.id, { hard: true });
});

test("a baseUrl at the site's root says it must be the API's mount and names the URL tried", async () => {
  const lost = new MemoryClient({ baseUrl: site.url, token: site.agent.token });
  const error = await refusal(lost.stats());
  assert.equal(error.status, 404);
  assert.equal(error.code, "http_404");
  assert.ok(error.message.startsWith(`No memory API at ${site.url}/stats/.`), error.message);
  assert.match(error.message, /baseUrl must be the API's mount/);
  assert.match(error.message, /\/api\/memory\//);
});

test("an answer that is not the API's JSON keeps its status, with a code made of it", () => {
  const response = new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway" });
  const error = MemoryApiError.fromResponse(response, "<html>Bad gateway</html>");
  assert.equal(error.status, 502);
  assert.equal(error.code, "http_502");
  assert.equal(error.message, "Bad Gateway");
  assert.deepEqual(error.fieldErrors, {});

  const throttled = new Response("{}", { status: 429, headers: { "Retry-After": "7" } });
  const body = { detail: "Request was throttled.", code: "throttled" };
  assert.equal(MemoryApiError.fromResponse(throttled, body).retryAfter, 7);
});
