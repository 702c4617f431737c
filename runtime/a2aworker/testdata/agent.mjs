// A remote A2A agent built on the official SDK (@a2a-js/sdk), serving A2A over JSON-RPC with the
// SDK's request handler — 1.0 when A2A_VERSION is "1.0", else 0.3 — and a card of that version
// only: it prints its URL, then serves until it is killed. Given a
// task, it asks "Which year?" (input-required); given the answer on the task, it writes
// answer.md as an artifact and completes with "Answered.".
import http from "node:http";
import { pathToFileURL } from "node:url";

const dist = process.env.A2A_SDK_DIST;
const load = (p) => import(pathToFileURL(`${dist}/${p}`).href);
const { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext } = await load("server/index.js");
const { LegacyJsonRpcTransportHandler } = await load("compat/v0_3/server/index.js");
const { Role, TaskState } = await load("index.js");

const text = (m) => (m?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n");
const message = (taskId, contextId, value) => ({
  messageId: crypto.randomUUID(), taskId, contextId, role: Role.ROLE_AGENT,
  parts: [{ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (ctx, state, value) => ({
  kind: "statusUpdate",
  data: { taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message: value ? message(ctx.taskId, ctx.contextId, value) : undefined, timestamp: new Date().toISOString() }, metadata: undefined },
});

const executor = {
  async execute(ctx, bus) {
    if (!ctx.task) {
      bus.publish({ kind: "task", data: { id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined } });
      bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, "Reading the task."));
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, "Which year?"));
    } else {
      bus.publish({ kind: "task", data: { ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } } });
      bus.publish({
        kind: "artifactUpdate",
        data: { taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
          artifact: { artifactId: "answer", name: "answer.md", description: "", metadata: undefined, extensions: [],
            parts: [{ content: { $case: "text", value: `The year is ${text(ctx.userMessage)}.\n` }, metadata: undefined, filename: "answer.md", mediaType: "text/markdown" }] } },
      });
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, "Answered."));
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish({ kind: "statusUpdate", data: { taskId, contextId: taskId, status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined } });
    bus.finished();
  },
};

let base;
const v1 = process.env.A2A_VERSION === "1.0";
const about = { name: "year-asker", description: "Asks which year, then answers.", version: "1.0.0", capabilities: { streaming: true },
  defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"], skills: [] };
const card = () => v1
  ? { ...about, supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }] }
  : { ...about, protocolVersion: "0.3.0", url: `${base}/rpc`, preferredTransport: "JSONRPC" };
const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
const rpc = v1 ? new JsonRpcTransportHandler(handler) : new LegacyJsonRpcTransportHandler(handler);

const server = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/.well-known/agent-card.json") {
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(card()));
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  try {
    const out = await rpc.handle(body, new ServerCallContext());
    if (out && typeof out[Symbol.asyncIterator] === "function") {
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      for await (const event of out) res.write(`data: ${JSON.stringify(event)}\n\n`);
      res.end();
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(out));
  } catch (err) {
    console.error(err);
    res.destroy();
  }
});
server.listen(0, "127.0.0.1", () => {
  base = `http://127.0.0.1:${server.address().port}`;
  console.log(base);
});
