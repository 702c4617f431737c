// What the scripts share: the official client, pointed at the server under test, and the test
// server's controls of its "slow" graph.
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const { Client } = await import(pathToFileURL(process.env.LANGGRAPH_SDK).href);

export const url = process.env.LANGGRAPH_API_URL;
export const client = new Client({ apiUrl: url, apiKey: null, callerOptions: { maxRetries: 0 } });
export { assert };

// entered waits until the slow graph's node runs.
export async function entered() {
  const res = await fetch(`${url}/__test/entered`);
  assert.equal(res.status, 204);
}

// release lets the slow graph's node finish.
export async function release() {
  const res = await fetch(`${url}/__test/release`, { method: "POST" });
  assert.equal(res.status, 204);
}

// status expects a promise to fail with an HTTP status.
export async function rejectsWith(promise, status) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, String(err));
    return true;
  });
}

// collect reads a stream of the client to its end.
export async function collect(stream) {
  const out = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}
