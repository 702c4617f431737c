// The store API: put, get, search, delete, list namespaces.
import { client, assert, rejectsWith } from "./lib.mjs";

await client.store.putItem(["users", "ada", "prefs"], "theme", { colour: "green", size: 2 });
await client.store.putItem(["users", "ada", "notes"], "a/b", { text: "Engines compute numbers" });
await client.store.putItem(["users", "bob", "prefs"], "theme", { colour: "blue", size: 2 });

const got = await client.store.getItem(["users", "ada", "prefs"], "theme");
assert.deepEqual(got.value, { colour: "green", size: 2 });
assert.deepEqual(got.namespace, ["users", "ada", "prefs"]);
assert.equal(got.key, "theme");
assert.ok(got.created_at && got.updated_at);
assert.equal(await client.store.getItem(["users", "ada", "prefs"], "none"), null);
assert.deepEqual((await client.store.getItem(["users", "ada", "notes"], "a/b")).value.text, "Engines compute numbers");

await client.store.putItem(["users", "ada", "prefs"], "theme", { colour: "red", size: 2 });
const again = await client.store.getItem(["users", "ada", "prefs"], "theme");
assert.equal(again.value.colour, "red");
assert.equal(again.created_at, got.created_at);

const ada = await client.store.searchItems(["users", "ada"]);
assert.deepEqual(ada.items.map((i) => i.key).sort(), ["a/b", "theme"]);
const sized = await client.store.searchItems(["users"], { filter: { size: 2 } });
assert.equal(sized.items.length, 2);
const found = await client.store.searchItems(["users"], { query: "engines" });
assert.deepEqual(found.items.map((i) => i.key), ["a/b"]);
assert.equal((await client.store.searchItems(["users"], { limit: 1 })).items.length, 1);

const all = await client.store.listNamespaces();
assert.deepEqual(all.namespaces, [["users", "ada", "notes"], ["users", "ada", "prefs"], ["users", "bob", "prefs"]]);
const prefs = await client.store.listNamespaces({ suffix: ["prefs"], maxDepth: 2 });
assert.deepEqual(prefs.namespaces, [["users", "ada"], ["users", "bob"]]);
assert.deepEqual((await client.store.listNamespaces({ prefix: ["users", "bob"] })).namespaces, [["users", "bob", "prefs"]]);

await client.store.deleteItem(["users", "ada", "prefs"], "theme");
assert.equal(await client.store.getItem(["users", "ada", "prefs"], "theme"), null);
