// The calls TestCompare makes of each server, ours and LangGraph's own, on the graph "compare"
// (graph.mjs, and its Go twin in compare_test.go): the same calls of the official client, one
// after the other, their answers printed as one JSON object, each named by the call. A call
// that fails is recorded as {error: {status, body}}. The graph's runs on the topic "hold" wait
// until the script creates the file $COMPARE_GATE.
import { writeFileSync } from "node:fs";
import { client } from "../lib.mjs";

const graph = "compare";
const out = {};

async function call(name, fn) {
  try {
    out[name] = await fn();
  } catch (err) {
    let body = err.text;
    try {
      body = JSON.parse(err.text);
    } catch {}
    out[name] = { error: { status: err.status ?? String(err), body } };
  }
  return out[name];
}

async function collect(stream) {
  const events = [];
  for await (const { event, data } of stream) events.push({ event, data });
  return events;
}

const assistants = await call("assistants.search", () => client.assistants.search({ graphId: graph }));
const assistant = assistants[0].assistant_id;
await call("assistants.get", () => client.assistants.get(assistant));
await call("assistants.getGraph", () => client.assistants.getGraph(assistant));

// A thread run to its interrupt and answered.
const thread = await call("threads.create", () => client.threads.create({ metadata: { owner: "ann" } }));
const id = thread.thread_id;
await call("threads.get.new", () => client.threads.get(id));
await call("threads.getState.new", () => client.threads.getState(id));
await call("runs.wait.interrupt", () => client.runs.wait(id, graph, { input: { topic: "go" } }));
await call("threads.get.interrupted", () => client.threads.get(id));
await call("threads.getState.interrupted", () => client.threads.getState(id));
// The history from step 0: the engine has no step -1, whose checkpoint LangGraph's has.
const fromStep0 = async (thread) => (await client.threads.getHistory(thread)).filter((st) => st.metadata.step >= 0);
await call("threads.getHistory.interrupted", () => fromStep0(id));
await call("runs.wait.resume", () => client.runs.wait(id, graph, { command: { resume: "yes" } }));
await call("threads.get.done", () => client.threads.get(id));
await call("threads.getState.done", () => client.threads.getState(id));
await call("runs.list", () => client.runs.list(id));
const first = [...out["runs.list"]].sort((a, b) => (a.created_at < b.created_at ? -1 : 1))[0];
await call("runs.get", () => client.runs.get(id, first.run_id));
await call("threads.update", () => client.threads.update(id, { metadata: { tag: "x" } }));
await call("threads.search", () => client.threads.search({ metadata: { owner: "ann" } }));

// A thread of the graph fanout, whose history shows what each task of a superstep wrote.
const fan = await client.threads.create();
await client.runs.wait(fan.thread_id, "fanout", { input: { topic: "go" } });
await call("threads.getHistory.fanout", () => fromStep0(fan.thread_id));

// Each stream mode, on a thread of its own, to the interrupt.
for (const mode of ["values", "updates", "messages-tuple", "messages", "custom", "tasks", "checkpoints", "debug", "events"]) {
  const t = await client.threads.create();
  await call(`runs.stream.${mode}`, () =>
    collect(client.runs.stream(t.thread_id, graph, { input: { topic: "go" }, streamMode: mode })),
  );
}

// Errors: an unknown thread, an invalid command, a busy thread under reject.
const unknown = "00000000-0000-4000-8000-000000000000";
await call("threads.get.unknown", () => client.threads.get(unknown));
await call("runs.wait.unknown-thread", () => client.runs.wait(unknown, graph, { input: { topic: "go" } }));
const paused = await client.threads.create();
await client.runs.wait(paused.thread_id, graph, { input: { topic: "go" } });
await call("runs.wait.invalid-command", () => client.runs.wait(paused.thread_id, graph, { command: {} }));
const busy = await client.threads.create();
await call("runs.create.first", () => client.runs.create(busy.thread_id, graph, { input: { topic: "hold" } }));
await call("runs.create.reject", () =>
  client.runs.create(busy.thread_id, graph, { input: { topic: "hold" }, multitaskStrategy: "reject" }),
);
writeFileSync(process.env.COMPARE_GATE, "");
await client.runs.join(busy.thread_id, out["runs.create.first"].run_id);

process.stdout.write(JSON.stringify(out, null, 1));
