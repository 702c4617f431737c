// A squad as an assistant: a thread is an agent; its run streams what the squad does, its
// question to the human is the run's interrupt, and a command answers it.
import { client, assert, collect, rejectsWith } from "./lib.mjs";

const [squad] = await client.assistants.search({ graphId: "squad" });
const thread = await client.threads.create();
const chunks = await collect(
  client.runs.stream(thread.thread_id, squad.assistant_id, {
    input: { messages: [{ type: "human", content: "AI chips" }] },
    streamMode: ["values", "custom", "messages-tuple"],
  }),
);
const of = (event) => chunks.filter((c) => c.event === event).map((c) => c.data);
assert.ok(of("custom").some((e) => e.type === "node.created"));
assert.ok(of("messages").every(([chunk, meta]) => chunk.type === "AIMessageChunk" && meta.langgraph_node));
const last = of("values").at(-1);
const [question] = last.__interrupt__;
assert.match(question.value.question, /outlook/);
assert.deepEqual(last.messages[0].content, "AI chips");

const state = await client.threads.getState(thread.thread_id);
assert.deepEqual(state.next, ["coordinator"]);
assert.equal(state.tasks[0].interrupts[0].id, question.id);
assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

const done = await client.runs.wait(thread.thread_id, squad.assistant_id, { command: { resume: "yes" } });
assert.ok(done.messages.some((m) => m.type === "human" && m.content === "yes"));
assert.equal((await client.threads.get(thread.thread_id)).status, "idle");

await rejectsWith(client.runs.wait(thread.thread_id, squad.assistant_id, { command: { goto: "coordinator" } }), 422);
await rejectsWith(client.threads.copy(thread.thread_id), 422);
await client.threads.delete(thread.thread_id);
