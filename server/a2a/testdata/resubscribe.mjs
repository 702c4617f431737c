// A stream dropped after its first event, and the task followed again to its end.
import { assert, connect, message, collect, stateOf, TaskState } from "./lib.mjs";

const client = await connect("ada");
const dropped = new AbortController();
let id;
try {
  for await (const event of client.sendMessageStream({ message: message("Research the history of the kite.") }, { signal: dropped.signal })) {
    // The first event is the task. Events the stream had read before the abort may still come.
    id ??= event.payload.value.id;
    dropped.abort();
  }
} catch (err) {
  assert.equal(err.name, "AbortError", String(err));
}
assert.ok(id);
const events = await collect(client.resubscribeTask({ id }));
assert.equal(events[0].$case, "task");
assert.equal(events[0].value.id, id);
assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED, JSON.stringify(events.map(stateOf)));
