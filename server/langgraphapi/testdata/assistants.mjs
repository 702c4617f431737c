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
