// A compiled graph as an A2A agent: its interrupt is the task's question (input-required), the
// answer on the task resumes it, and the final state's output is the task's artifact.
import { assert, connectTo, message, text, collect, stateOf, TaskState } from "./lib.mjs";

const client = await connectTo(process.env.A2A_GRAPH_URL);
const card = await client.getAgentCard();
assert.equal(card.name, "story");

const asked = await client.sendMessage({ message: message("kites") });
assert.equal(asked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
assert.equal(text(asked.status.message), "Which year?");

const events = await collect(client.sendMessageStream({ message: message("1901", asked.id) }));
const states = events.map(stateOf);
assert.equal(states.at(-1), TaskState.TASK_STATE_COMPLETED, JSON.stringify(states));
assert.ok(events.some((e) => e.$case === "statusUpdate" && text(e.value.status.message) === "step 2: write"), "a status update per superstep");
const output = events.find((e) => e.$case === "artifactUpdate");
assert.equal(text(output.value.artifact), "The history of kites, from 1901.");

const task = await client.getTask({ id: asked.id });
assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
assert.equal(text(task.status.message), "The history of kites, from 1901.");
