// Threads: create (if_exists), get, update metadata, search, state, update with as_node, state
// at a checkpoint, state metadata patched, history, copy, delete.
import { client, assert, rejectsWith } from "./lib.mjs";

const thread = await client.threads.create({ metadata: { owner: "ana" }, graphId: "echo" });
assert.equal(thread.status, "idle");
assert.deepEqual(thread.metadata, { owner: "ana", graph_id: "echo" });
await rejectsWith(client.threads.create({ threadId: thread.thread_id }), 409);
const same = await client.threads.create({ threadId: thread.thread_id, ifExists: "do_nothing" });
assert.equal(same.thread_id, thread.thread_id);

const updated = await client.threads.update(thread.thread_id, { metadata: { tag: "x" } });
assert.deepEqual(updated.metadata, { owner: "ana", graph_id: "echo", tag: "x" });

await client.runs.wait(thread.thread_id, "echo", { input: { topic: "go" } });
const state = await client.threads.getState(thread.thread_id);
assert.deepEqual(state.values, { messages: ["hello go"], topic: "go" });
assert.deepEqual(state.next, []);
const first = state.checkpoint.checkpoint_id;

const edit = await client.threads.updateState(thread.thread_id, { values: { messages: ["edited"] }, asNode: "greet" });
assert.notEqual(edit.checkpoint.checkpoint_id, first);
await rejectsWith(client.threads.updateState(thread.thread_id, { values: { nope: 1 } }), 422);
assert.deepEqual((await client.threads.getState(thread.thread_id)).values.messages, ["hello go", "edited"]);
assert.deepEqual((await client.threads.getState(thread.thread_id, first)).values.messages, ["hello go"]);
assert.deepEqual(
  (await client.threads.getState(thread.thread_id, { checkpoint_id: first, checkpoint_ns: "" })).values.messages,
  ["hello go"],
);

// The latest state's metadata, patched.
await client.threads.patchState(thread.thread_id, { reviewed: "yes" });
assert.equal((await client.threads.getState(thread.thread_id)).metadata.reviewed, "yes");
await rejectsWith(client.threads.patchState(thread.thread_id, { count: 1 }), 422);

const history = await client.threads.getHistory(thread.thread_id, { limit: 2 });
assert.equal(history.length, 2);
assert.deepEqual(history[0].values.messages, ["hello go", "edited"]);
assert.equal(history[1].checkpoint.checkpoint_id, first);

const copy = await client.threads.copy(thread.thread_id);
assert.notEqual(copy.thread_id, thread.thread_id);
assert.deepEqual(copy.values.messages, ["hello go", "edited"]);

const found = await client.threads.search({ metadata: { tag: "x" } });
assert.deepEqual(found.map((t) => t.thread_id).sort(), [thread.thread_id, copy.thread_id].sort());
const byValues = await client.threads.search({ values: { topic: "go" }, limit: 1 });
assert.equal(byValues.length, 1);

await client.threads.delete(thread.thread_id);
await rejectsWith(client.threads.get(thread.thread_id), 404);
assert.deepEqual((await client.threads.get(copy.thread_id)).values.messages, ["hello go", "edited"]);
