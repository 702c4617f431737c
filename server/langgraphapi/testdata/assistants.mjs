// Assistants: search, get, graph, schemas.
import { client, assert, rejectsWith } from "./lib.mjs";

const all = await client.assistants.search();
assert.deepEqual(all.map((a) => a.graph_id).sort(), ["approve", "echo", "slow", "squad", "writer"]);

const [echo] = await client.assistants.search({ graphId: "echo" });
assert.equal(echo.name, "echo");
assert.deepEqual(echo.metadata, { created_by: "system" });
assert.deepEqual(await client.assistants.get(echo.assistant_id), echo);
assert.deepEqual(await client.assistants.get("echo"), echo);
await rejectsWith(client.assistants.get("nope"), 404);

const drawn = await client.assistants.getGraph("approve");
assert.deepEqual(drawn.edges.map((e) => [e.source, e.target]), [
  ["__start__", "draft"],
  ["draft", "review"],
  ["review", "__end__"],
]);
assert.deepEqual(drawn.nodes.map((n) => n.id), ["__start__", "draft", "review", "__end__"]);

const schemas = await client.assistants.getSchemas(echo.assistant_id);
assert.equal(schemas.graph_id, "echo");
assert.deepEqual(Object.keys(schemas.state_schema.properties).sort(), ["messages", "topic"]);

// Assistants of one's own: create, update (a version each time), versions, set latest, delete.
const mine = await client.assistants.create({
  graphId: "approve", name: "strict", config: { recursion_limit: 1 }, metadata: { team: "a" },
});
assert.equal(mine.version, 1);
assert.equal(mine.graph_id, "approve");
assert.notEqual(mine.assistant_id, (await client.assistants.get("approve")).assistant_id);
await rejectsWith(client.assistants.create({ graphId: "approve", assistantId: mine.assistant_id }), 409);
assert.deepEqual(
  await client.assistants.create({ graphId: "approve", assistantId: mine.assistant_id, ifExists: "do_nothing" }),
  mine,
);
await rejectsWith(client.assistants.create({ graphId: "nope" }), 404);
assert.equal(await client.assistants.count({ graphId: "approve" }), 2);

// The assistant's config is its runs' config: a recursion limit of one step stops the graph.
await assert.rejects(client.runs.wait(null, mine.assistant_id, { input: { topic: "x" } }), /recursion limit of 1/);
const lenient = await client.runs.wait(null, mine.assistant_id, { input: { topic: "x" }, config: { recursion_limit: 10 } });
assert.ok(lenient.__interrupt__);

const v2 = await client.assistants.update(mine.assistant_id, { config: { recursion_limit: 10 }, metadata: { stage: 2 } });
assert.equal(v2.version, 2);
assert.deepEqual(v2.metadata, { team: "a", stage: 2 });
assert.ok((await client.runs.wait(null, mine.assistant_id, { input: { topic: "x" } })).__interrupt__);
const versions = await client.assistants.getVersions(mine.assistant_id);
assert.deepEqual(versions.map((v) => v.version), [2, 1]);
assert.deepEqual((await client.assistants.getVersions(mine.assistant_id, { metadata: { stage: 2 } })).map((v) => v.version), [2]);

const back = await client.assistants.setLatest(mine.assistant_id, 1);
assert.equal(back.version, 1);
assert.deepEqual(back.config, { recursion_limit: 1 });
assert.deepEqual((await client.assistants.get(mine.assistant_id)).config, { recursion_limit: 1 });
await rejectsWith(client.assistants.setLatest(mine.assistant_id, 7), 404);
const v3 = await client.assistants.update(mine.assistant_id, { name: "renamed" });
assert.equal(v3.version, 3, "a new version follows the highest");

const kept = await client.threads.create();
await client.runs.wait(kept.thread_id, mine.assistant_id, { input: { topic: "y" }, config: { recursion_limit: 10 } });
await client.assistants.delete(mine.assistant_id, { deleteThreads: true });
await rejectsWith(client.assistants.get(mine.assistant_id), 404);
await rejectsWith(client.threads.get(kept.thread_id), 404);
