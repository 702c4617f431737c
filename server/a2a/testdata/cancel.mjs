// A task in progress cancelled: its run is paused; a task that ended cannot be cancelled.
import { assert, connect, run, TaskState } from "./lib.mjs";

const client = await connect("slow");
const id = await run("slow");
const task = await client.cancelTask({ id });
assert.equal(task.status.state, TaskState.TASK_STATE_CANCELED);
assert.equal((await client.getTask({ id })).status.state, TaskState.TASK_STATE_CANCELED);
await assert.rejects(client.cancelTask({ id }), (err) => {
  assert.match(String(err), /cannot be canceled/);
  return true;
});
