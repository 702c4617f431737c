// Push notifications: a little HTTP server of the script receives the task as its state
// changes (A2A 1.0: {"task": …}), with the token it gave, until the task completes.
import { assert, connect, message } from "./lib.mjs";
import http from "node:http";

const received = [];
let completed;
const done = new Promise((resolve) => (completed = resolve));
const hook = http.createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    assert.equal(req.headers["x-a2a-notification-token"], "hook-secret");
    const { task } = JSON.parse(body);
    received.push(task.status.state);
    res.writeHead(200).end();
    if (task.status.state === "TASK_STATE_COMPLETED") completed(task);
  });
});
await new Promise((resolve) => hook.listen(0, "127.0.0.1", resolve));
const hookURL = `http://127.0.0.1:${hook.address().port}/hook`;

const client = await connect("ada");
const task = await client.sendMessage({
  message: message("Research the history of the kite."),
  configuration: { returnImmediately: true, acceptedOutputModes: [], taskPushNotificationConfig: { url: hookURL, token: "hook-secret", id: "", taskId: "", tenant: "" } },
});
const cfg = await client.getTaskPushNotificationConfig({ taskId: task.id, id: task.id });
assert.equal(cfg.url, hookURL);
const pushed = await done;
assert.equal(pushed.id, task.id);
assert.equal(pushed.kind, undefined);
hook.close();
