// The thread's stream: the runs of a thread, one after the other, until the client leaves.
import { client, assert, entered, release } from "./lib.mjs";

const thread = await client.threads.create();
const held = await client.runs.create(thread.thread_id, "slow", { input: { topic: "a" } });
await entered();
const queued = await client.runs.create(thread.thread_id, "echo", { input: { topic: "b" }, multitaskStrategy: "enqueue" });

// From the start of the held run on (as a client that saw none of its events asks).
const controller = new AbortController();
const chunks = [];
const reading = (async () => {
  const stream = client.threads.joinStream(thread.thread_id, {
    signal: controller.signal, lastEventId: `${held.run_id}:0`, streamMode: ["values"],
  });
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.event === "values" && chunk.data.messages?.includes("hello b")) controller.abort();
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  }
})();
await release();
await reading;
const values = chunks.filter((c) => c.event === "values").map((c) => c.data.messages ?? []);
assert.deepEqual(values.at(-1), ["done a", "hello b"]);
assert.ok(chunks.every((c) => c.event === "values" || c.event === "metadata"), chunks.map((c) => c.event).join());
assert.equal((await client.runs.get(thread.thread_id, queued.run_id)).status, "success");
