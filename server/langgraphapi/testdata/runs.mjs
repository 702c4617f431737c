// Runs: stream with its modes, background and join, wait, list, get, cancel, stateless runs,
// reject and enqueue, if_not_exists.
import { client, assert, rejectsWith, collect, entered } from "./lib.mjs";

const thread = await client.threads.create();
let created; // what the client reads of the answer's Content-Location
const chunks = await collect(
  client.runs.stream(thread.thread_id, "echo", {
    input: { topic: "sse" },
    streamMode: ["values", "updates", "custom", "debug", "events"],
    onRunCreated: (meta) => (created = meta),
  }),
);
assert.equal(chunks[0].event, "metadata");
const runId = chunks[0].data.run_id;
assert.deepEqual(created, { run_id: runId, thread_id: thread.thread_id });
const of = (event) => chunks.filter((c) => c.event === event).map((c) => c.data);
assert.deepEqual(of("values").at(-1), { messages: ["hello sse"], topic: "sse" });
assert.deepEqual(of("updates"), [{ greet: { messages: ["hello sse"] } }]);
assert.deepEqual(of("custom"), [{ greeting: "sse" }]);
assert.ok(of("debug").some((d) => d.type === "checkpoint"));
assert.ok(of("debug").some((d) => d.type === "task_result" && d.payload.name === "greet"));
assert.ok(of("events").some((e) => e.event === "on_chain_end" && e.name === "greet"));

const run = await client.runs.get(thread.thread_id, runId);
assert.equal(run.status, "success");
assert.equal(run.assistant_id, (await client.assistants.get("echo")).assistant_id);

const bg = await client.runs.create(thread.thread_id, "echo", { input: { topic: "bg" } });
assert.equal(bg.status, "pending");
const joined = await client.runs.join(thread.thread_id, bg.run_id);
assert.deepEqual(joined.messages, ["hello sse", "hello bg"]);
const listed = await client.runs.list(thread.thread_id);
assert.deepEqual(listed.map((r) => r.run_id).sort(), [runId, bg.run_id].sort());

// Stateless: the run's thread is gone when it ends.
const once = await client.runs.wait(null, "echo", { input: { topic: "once" }, onRunCreated: (meta) => (created = meta) });
assert.equal(created.thread_id, undefined);
assert.deepEqual(once, { messages: ["hello once"], topic: "once" });
assert.equal((await client.threads.search({ limit: 100 })).length, 1);

// A busy thread: reject, enqueue, cancel.
const busy = await client.threads.create();
const slow = await client.runs.create(busy.thread_id, "slow", { input: { topic: "first" } });
await entered();
assert.equal((await client.threads.get(busy.thread_id)).status, "busy");
await rejectsWith(client.runs.create(busy.thread_id, "echo", { input: { topic: "x" } }), 409);
const queued = await client.runs.create(busy.thread_id, "echo", { input: { topic: "queued" }, multitaskStrategy: "enqueue" });
await client.runs.cancel(busy.thread_id, slow.run_id, true);
assert.equal((await client.runs.get(busy.thread_id, slow.run_id)).status, "interrupted");
const after = await client.runs.join(busy.thread_id, queued.run_id);
assert.deepEqual(after.messages, ["hello queued"]);

// if_not_exists.
const fresh = "0190f0a0-0000-7000-8000-000000000001";
await rejectsWith(client.runs.wait(fresh, "echo", { input: { topic: "n" } }), 404);
const made = await client.runs.wait(fresh, "echo", { input: { topic: "n" }, ifNotExists: "create" });
assert.deepEqual(made.messages, ["hello n"]);
await rejectsWith(client.runs.create(fresh, "nope", { input: {} }), 404);
await rejectsWith(client.runs.create(fresh, "echo", { input: { nope: 1 } }), 422);
