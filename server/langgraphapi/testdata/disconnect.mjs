// A client that disconnects mid-stream loses nothing: the run goes on, and can be joined, or its
// stream joined again from the last event the client had.
import { client, assert, entered, release, collect } from "./lib.mjs";

const thread = await client.threads.create();
const controller = new AbortController();
let runId;
let lastId;
for await (const chunk of client.runs.stream(thread.thread_id, "slow", {
  input: { topic: "first" },
  streamMode: ["values"],
  signal: controller.signal,
})) {
  lastId = chunk.id;
  if (chunk.event === "metadata") runId = chunk.data.run_id;
  if (chunk.event === "values") {
    controller.abort(); // the state after the input: the node is about to run
    break;
  }
}
await entered();
assert.equal((await client.runs.get(thread.thread_id, runId)).status, "running");
await release();
const result = await client.runs.join(thread.thread_id, runId);
assert.deepEqual(result.messages, ["done first"]);
assert.equal((await client.runs.get(thread.thread_id, runId)).status, "success");

const rest = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: lastId }));
assert.deepEqual(rest.map((c) => c.event), ["values"]);
assert.deepEqual(rest[0].data, { messages: ["done first"], topic: "first" });
