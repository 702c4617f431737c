// Tokens: a graph whose node calls a model streams the model's answer as it is written, in the
// messages-tuple mode (what useStream asks for) and the older messages mode.
import { client, assert, collect } from "./lib.mjs";

const thread = await client.threads.create();
const chunks = await collect(
  client.runs.stream(thread.thread_id, "writer", {
    input: { topic: "time" },
    streamMode: ["messages-tuple", "values"],
  }),
);
const tuples = chunks.filter((c) => c.event === "messages").map((c) => c.data);
assert.equal(tuples.length, 4);
const ids = new Set(tuples.map(([chunk]) => chunk.id));
assert.equal(ids.size, 1, "the chunks of one answer share its ID");
assert.equal(tuples.map(([chunk]) => chunk.content).join(""), "once upon a time");
for (const [chunk, metadata] of tuples) {
  assert.equal(chunk.type, "AIMessageChunk");
  assert.equal(metadata.langgraph_node, "write");
  assert.equal(metadata.thread_id, thread.thread_id);
}
// The tokens come before the state they end in.
const lastToken = chunks.findLastIndex((c) => c.event === "messages");
assert.ok(lastToken < chunks.findLastIndex((c) => c.event === "values"));
assert.deepEqual(chunks.at(-1).data, { messages: ["once upon a time"], topic: "time" });

const legacy = await collect(
  client.runs.stream(null, "writer", { input: { topic: "dream" }, streamMode: "messages" }),
);
const partial = legacy.filter((c) => c.event === "messages/partial").map((c) => c.data[0].content);
assert.equal(partial.at(-1), "once upon a dream");
const [meta] = legacy.filter((c) => c.event === "messages/metadata").map((c) => c.data);
assert.equal(Object.values(meta)[0].metadata.langgraph_node, "write");
