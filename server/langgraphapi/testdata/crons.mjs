// Crons: on a thread and stateless, searched, counted, updated, deleted, and run on schedule
// (the test server's cron clock moves a minute at /__test/advance).
import { client, assert, url } from "./lib.mjs";

async function advance() {
  const res = await fetch(`${url}/__test/advance`, { method: "POST" });
  assert.equal(res.status, 204);
}

// until waits for what the server does on its own after the clock moved.
async function until(check) {
  for (;;) {
    const got = await check();
    if (got) return got;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const thread = await client.threads.create();
const cron = await client.crons.createForThread(thread.thread_id, "echo", {
  schedule: "* * * * *",
  input: { topic: "tick" },
});
assert.equal(cron.thread_id, thread.thread_id);
assert.ok(cron.next_run_date);
await advance();
const runs = await until(async () => {
  const r = await client.runs.list(thread.thread_id);
  return r.length === 1 && r[0].status === "success" && r;
});
assert.equal(runs[0].assistant_id, (await client.assistants.get("echo")).assistant_id);
assert.deepEqual((await client.threads.getState(thread.thread_id)).values.messages, ["hello tick"]);

const stateless = await client.crons.create("echo", { schedule: "0 9 * * MON", input: { topic: "weekly" } });
assert.equal(stateless.thread_id, null);
assert.equal(await client.crons.count({ assistantId: "echo" }), 2);
assert.deepEqual((await client.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id), [cron.cron_id]);

const off = await client.crons.update(cron.cron_id, { enabled: false, schedule: "*/5 * * * *" });
assert.equal(off.enabled, false);
assert.equal(off.schedule, "*/5 * * * *");
assert.deepEqual((await client.crons.search({ enabled: true })).map((c) => c.cron_id), [stateless.cron_id]);

await client.crons.delete(cron.cron_id);
await client.crons.delete(stateless.cron_id);
assert.equal(await client.crons.count(), 0);
