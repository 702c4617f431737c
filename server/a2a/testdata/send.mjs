// Card discovery and a task sent, waited for, and read again: in A2A 1.0, then in 0.3.
import { assert, connect, connect03, message, text, TaskState, Role } from "./lib.mjs";

for (const client of [await connect("ada"), await connect03("ada")]) {
  const card = await client.getAgentCard();
  assert.equal(card.name, "ada");
  assert.ok(card.capabilities.streaming);
  assert.ok(card.capabilities.pushNotifications);

  const result = await client.sendMessage({ message: message("Research the history of the kite.") });
  assert.ok(result.id, `a task: ${JSON.stringify(result)}`);
  const task = result;
  assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(text(task.status.message), /# Report/);
  const names = task.artifacts.map((a) => a.name);
  assert.ok(names.includes("output"), `artifacts ${names}`);
  const findings = task.artifacts.find((a) => a.name === "n1/findings.md");
  assert.ok(findings, `artifacts ${names}`);
  assert.equal(findings.parts[0].content.$case, "raw");
  assert.match(Buffer.from(findings.parts[0].content.value).toString(), /^#/);
  assert.equal(task.history[0].role, Role.ROLE_USER);
  assert.equal(text(task.history[0]), "Research the history of the kite.");

  const got = await client.getTask({ id: task.id, historyLength: 1 });
  assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(got.history.length, 1);

  await assert.rejects(client.getTask({ id: "20200101-000000" }), (err) => {
    assert.match(String(err), /no task/);
    return true;
  });
}
