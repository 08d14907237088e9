import { MemoryApiError, MemoryClient } from "@ilab/memory-client";

const memory = new MemoryClient({
  baseUrl: process.env.ILAB_MEMORY_API ?? "http://127.0.0.1:8000/api/memory/",
  token: process.env.ILAB_MEMORY_TOKEN, // a plain account's token: its own memory only
});

// Whenever the user shows up: open (or reuse) the session, with the memories worth knowing.
const { session_id, memories } = await memory.start();
console.log(`session ${session_id}: ${memories.length} memories in context`);

// Save what was learned. <private> blocks are redacted before anything is stored.
const { action, observation } = await memory.save({
  title: "Use PostgreSQL in production",
  content: "SQLite stays for embedded mode. DB password: <private>hunter2</private>",
  type: "decision",
  topic_key: "database choice",
});
console.log(`${action}: ${observation.content}`);

// Search, then walk every memory: the iterator fetches the next page when the loop needs it.
for (const hit of await memory.search("postgresql")) console.log(`found: ${hit.title}`);
for await (const row of memory.observations({ page_size: 50 })) console.log(`listed: ${row.title}`);

// Every refusal is a MemoryApiError: the status, the API's code, the message and the field errors.
try {
  await memory.save({ title: "x".repeat(1000), content: "A title far over the limit." });
} catch (error) {
  if (!(error instanceof MemoryApiError)) throw error;
  console.log(`refused: ${error.status} ${error.code} on ${Object.keys(error.fieldErrors).join(", ")}`);
}

await memory.end({ summary: "Chose the production database." });
