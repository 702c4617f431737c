// A client of the notes graph on the official LangGraph SDK, as docs/serve-a-graph.md shows it:
// a run pauses at the graph's question, a command answers it; a streamed run.
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const { Client } = await import(pathToFileURL(process.env.LANGGRAPH_SDK).href);

const client = new Client({ apiUrl: process.env.LANGGRAPH_URL, apiKey: process.env.TOKEN });

const thread = await client.threads.create();
const paused = await client.runs.wait(thread.thread_id, "notes", { input: { topic: "kites" } });
assert.equal(paused.__interrupt__[0].value, "Publish this? A short note on kites.");

const done = await client.runs.wait(thread.thread_id, "notes", { command: { resume: "yes" } });
assert.equal(done.output, "Published: A short note on kites.");

const updates = [];
for await (const chunk of client.runs.stream(thread.thread_id, "notes", { input: { topic: "tea" }, streamMode: "updates" })) {
  if (chunk.event === "updates") updates.push(...Object.keys(chunk.data));
}
assert.deepEqual(updates, ["draft", "__interrupt__"]);
const later = await client.runs.wait(thread.thread_id, "notes", { command: { resume: "not yet" } });
assert.equal(later.output, 'Not published ("not yet").');

// Without the server's token, nothing.
const stranger = new Client({ apiUrl: process.env.LANGGRAPH_URL, apiKey: "wrong", callerOptions: { maxRetries: 0 } });
await assert.rejects(stranger.threads.create(), (err) => err.status === 401);
