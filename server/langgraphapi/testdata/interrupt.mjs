// An interrupt answered with commands: resume with an update and a goto, then resume by ID.
import { client, assert, rejectsWith, collect } from "./lib.mjs";

const thread = await client.threads.create();
const paused = await client.runs.wait(thread.thread_id, "approve", { input: { topic: "cats" } });
assert.equal(paused.__interrupt__.length, 1);
assert.deepEqual(paused.__interrupt__[0].value, { question: "publish?" });
const t = await client.threads.get(thread.thread_id);
assert.equal(t.status, "interrupted");
assert.deepEqual(Object.values(t.interrupts).flat()[0].value, { question: "publish?" });
assert.deepEqual((await client.threads.getState(thread.thread_id)).next, ["review"]);

await rejectsWith(client.runs.wait(thread.thread_id, "approve", { command: {} }), 422);
await rejectsWith(client.runs.wait(thread.thread_id, "approve", { command: { goto: "nowhere" } }), 422);

// The answer, streamed, with an update and a node to go to: draft runs beside the answered
// review and leads to another review, which asks again.
const chunks = await collect(
  client.runs.stream(thread.thread_id, "approve", {
    command: { resume: "yes", update: { topic: "dogs" }, goto: "draft" },
    streamMode: ["values", "updates"],
  }),
);
const last = chunks.filter((c) => c.event === "values").at(-1).data;
assert.deepEqual(last.messages, ["draft about cats", "review: yes", "draft about dogs"]);
assert.deepEqual(last.__interrupt__[0].value, { question: "publish?" });
assert.ok(chunks.some((c) => c.event === "updates" && c.data.__interrupt__));
assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

// The answer given by the interrupt's ID.
const id = last.__interrupt__[0].id;
const done = await client.runs.wait(thread.thread_id, "approve", { command: { resume: { [id]: "no" } } });
assert.deepEqual(done, { messages: ["draft about cats", "review: yes", "draft about dogs", "review: no"], topic: "dogs" });
assert.equal((await client.threads.get(thread.thread_id)).status, "idle");

// A thread that has finished has nothing to resume: the run fails and says so.
await assert.rejects(
  client.runs.wait(thread.thread_id, "approve", { command: { resume: "again" } }),
  /nothing to resume/,
);
assert.equal((await client.threads.get(thread.thread_id)).status, "error");
