// What the scripts share: the official client (@a2a-js/sdk) as a user sets it up, pointed at
// the server under test, with its token: speaking A2A 1.0, or 0.3 (legacyCompat).
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const sdk = await import(pathToFileURL(process.env.A2A_SDK).href);
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } = sdk;
export const { TaskState, Role } = await import(pathToFileURL(process.env.A2A_SDK.replace(/client[/\\]index\.js$/, "index.js")).href);

export const url = process.env.A2A_URL;
export const token = process.env.A2A_TOKEN;
export { assert };

// authorized is fetch with the server's token.
export function authorized(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
}

// connect discovers agent id of the server by its card and returns a client of it, which
// speaks A2A 1.0.
export async function connect(id) {
  return connectTo(`${url}/a2a/${id}/`);
}

// connectTo discovers the agent at agentURL by its card and returns a client of it, which
// speaks A2A 1.0.
export async function connectTo(agentURL) {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authorized })],
    }),
  );
  const client = await factory.createFromUrl(agentURL);
  assert.equal(client.protocolVersion, "1.0");
  return client;
}

// connect03 returns a client of agent id that speaks A2A 0.3, as a client that knows only
// 0.3 reads the agent's card: its url, protocolVersion and preferredTransport.
export async function connect03(id) {
  const res = await fetch(`${url}/a2a/${id}/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const card = await res.json();
  assert.ok(card.supportedInterfaces.some((i) => i.protocolVersion === "0.3"), "the card announces 0.3");
  delete card.supportedInterfaces;
  delete card.securityRequirements;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authorized, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    }),
  );
  const client = await factory.createFromAgentCard(card);
  assert.equal(client.protocolVersion, "0.3");
  return client;
}

// message is a user's message.
export function message(text, taskId = "") {
  return { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }], taskId, contextId: "" };
}

// text returns the text of a message's (or an artifact's) text parts.
export function text(m) {
  return (m?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n");
}

// collect reads a stream of the client to its end.
export async function collect(stream) {
  const out = [];
  for await (const event of stream) out.push(event.payload);
  return out;
}

// stateOf returns the task state an event (a task or a status update) carries, or undefined.
export function stateOf(event) {
  if (event.$case === "task" || event.$case === "statusUpdate") return event.value.status.state;
  return undefined;
}

// run returns the id of agent id's run, through the server's REST API.
export async function run(id) {
  const res = await authorized(`${url}/agents/${id}`);
  assert.equal(res.status, 200);
  return (await res.json()).run;
}
