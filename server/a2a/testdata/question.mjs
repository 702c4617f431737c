// A stream that ends with the squad's question (input-required), answered on the task: the
// answer's stream ends with the task completed.
import { assert, connect, message, text, collect, stateOf, TaskState } from "./lib.mjs";
import { readFileSync } from "node:fs";

const question = process.env.A2A_QUESTION;
const client = await connect("asker");
let events = await collect(client.sendMessageStream({ message: message("Research the history of the kite.") }));
assert.equal(events[0].$case, "task");
const id = events[0].value.id;
const last = events.at(-1);
assert.equal(stateOf(last), TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(events.map(stateOf)));
assert.equal(text(last.value.status.message), question);
assert.ok(events.some((e) => stateOf(e) === TaskState.TASK_STATE_WORKING), "the squad's events come as status updates");

events = await collect(client.sendMessageStream({ message: message("Yes, with an outlook to 2031.", id) }));
assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED, JSON.stringify(events.map(stateOf)));
assert.ok(events.some((e) => e.$case === "artifactUpdate" && e.value.artifact.name === "output"));

const task = await client.getTask({ id });
assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
const said = task.history.map(text);
assert.ok(said.includes(question), said);
assert.ok(said.includes("Yes, with an outlook to 2031."), said);
