// A client of the notes graph on the official A2A SDK, as docs/serve-a-graph.md shows it: the
// server's card found at its root, the graph's question as an input-required task, the answer
// as the next message on the task.
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } = await import(
  pathToFileURL(process.env.A2A_SDK).href
);
const { Role, TaskState } = await import(pathToFileURL(process.env.A2A_SDK.replace(/client[/\\]index\.js$/, "index.js")).href);

const withToken = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${process.env.TOKEN}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })],
  }),
);
const client = await factory.createFromUrl(process.env.SERVER_URL);
assert.equal((await client.getAgentCard()).name, "notes");

const message = (text, taskId = "") => ({
  messageId: crypto.randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text } }],
  taskId,
  contextId: "",
});
const text = (m) => (m?.parts ?? []).map((p) => p.content?.value ?? "").join("");

const asked = await client.sendMessage({ message: message("kites") });
assert.equal(asked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
assert.equal(text(asked.status.message), "Publish this? A short note on kites.");

const done = await client.sendMessage({ message: message("yes", asked.id) });
assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
assert.equal(text(done.artifacts[0]), "Published: A short note on kites.");
