// A run rolled back by a second one: the second starts from the state before the first, and the
// first is gone.
import { client, assert, rejectsWith, entered } from "./lib.mjs";

const thread = await client.threads.create();
await client.runs.wait(thread.thread_id, "echo", { input: { topic: "zero" } });
const first = await client.runs.create(thread.thread_id, "slow", { input: { topic: "first" } });
await entered();
const second = await client.runs.wait(thread.thread_id, "echo", { input: {}, multitaskStrategy: "rollback" });
assert.deepEqual(second, { messages: ["hello zero", "hello zero"], topic: "zero" });
await rejectsWith(client.runs.get(thread.thread_id, first.run_id), 404);
assert.equal((await client.runs.list(thread.thread_id)).length, 2);
