// Runs the graph specs of TestLangGraphJS with LangGraph.js: one spec a line on stdin, one result
// a line on stdout, in the same order. LG_MODULES is the node_modules folder that holds
// @langchain/langgraph. The meaning of a spec is documented in graph/lgdiff_test.go; this file
// and that one must build the same graph from it.
import { setMaxListeners } from "node:events";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

setMaxListeners(0); // every stream adds an abort listener to the run's signal
const require = createRequire(process.env.LG_MODULES + "/");
const { StateGraph, Annotation, MemorySaver, Send, START, END, interrupt, Command } = require("@langchain/langgraph");

const State = Annotation.Root({
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  topic: Annotation(),
});

const ends = (name) => (name === "START" ? START : name === "END" ? END : name);

// route is the routers' function of the state: see lgRoute in lgdiff_test.go.
function route(r, log) {
  if (log.length >= r.bound) return [END];
  const last = log[log.length - 1] ?? "";
  let h = log.length * 7 + new Set(log).size * 3;
  for (const c of Buffer.from(last)) h += c;
  const out = [ends(r.targets[h % r.targets.length])];
  if (h % 5 === 0) out.push(ends(r.targets[Math.floor(h / 5) % r.targets.length]));
  if (r.send) {
    for (let i = 0; i < h % 3; i++) out.push(new Send(r.send, { topic: `s${h % 10}${i}` }));
  }
  return out;
}

function build(spec) {
  const g = new StateGraph(State);
  for (const n of spec.nodes) {
    g.addNode(
      n.name,
      (s) => {
        let entry = s.topic ? `${n.name}<${s.topic}>` : n.name;
        if (n.interrupt) entry += "=" + interrupt(entry);
        if (n.fail) throw new Error("fail " + entry);
        if (n.goto) return new Command({ update: { log: [entry] }, goto: ends(n.goto[(s.log ?? []).length % n.goto.length]) });
        return { log: [entry] };
      },
      { defer: n.defer ?? false, ends: (n.goto ?? []).map(ends) },
    );
  }
  for (const [from, to] of spec.edges ?? []) g.addEdge(ends(from), ends(to));
  for (const j of spec.joins ?? []) g.addEdge(j.from, j.to);
  for (const r of spec.routers ?? []) g.addConditionalEdges(ends(r.from), (s) => route(r, s.log));
  return g.compile({
    checkpointer: new MemorySaver(),
    interruptBefore: spec.interruptBefore ?? [],
    interruptAfter: spec.interruptAfter ?? [],
  });
}

function errorKind(e) {
  if (e?.name === "GraphRecursionError") return "recursion";
  if (String(e?.message).startsWith("fail ")) return "node: " + e.message;
  return "other: " + (e?.stack ?? e);
}

// run runs a spec as lgRunGo does: invoke, then invoke again while paused (a Command answering
// every interrupt "ok" by ID, or null to pass a breakpoint); once the thread has ended (or at its
// first pause, with reinvoke), invoke with the log ["again"], and so on while paused; at most 60
// times. A run pauses when it
// yields __interrupt__ (LangGraph.js may also end a run with a task left in the state's next,
// which only a later invoke would run: see TestLangGraphJS).
async function run(spec) {
  const g = build(spec);
  const cfg = { configurable: { thread_id: "t" }, recursionLimit: 1000, streamMode: ["debug", "updates"] };
  const runs = [];
  let input = { log: ["in"] };
  let again = false; // the thread was invoked a second time
  let edited = false; // a resume carried the update of spec.edit
  for (let i = 0; i < 60; i++) {
    const steps = new Map();
    let error = "";
    let paused = false;
    try {
      for await (const [mode, ev] of await g.stream(input, cfg)) {
        if (mode === "updates" && ev.__interrupt__) paused = true;
        if (mode !== "debug" || ev.type !== "task_result" || ev.payload.error || ev.payload.interrupts.length > 0) continue;
        const entries = steps.get(ev.step) ?? [];
        entries.push(...(ev.payload.result.log ?? []));
        steps.set(ev.step, entries);
      }
    } catch (e) {
      error = errorKind(e);
    }
    const one = { steps: [...steps.values()].map((s) => s.sort()), error };
    runs.push(one);
    if (error || (!paused && again)) break;
    if (!paused) {
      again = true;
      input = { log: ["again"] };
      continue;
    }
    const state = await g.getState(cfg);
    const interrupts = state.tasks.flatMap((t) => t.interrupts);
    one.paused = { next: [...state.next].sort(), interrupts: interrupts.map((it) => it.value) };
    if (spec.reinvoke && !again) {
      again = true;
      input = { log: ["again"] };
    } else {
      const resume = interrupts.length > 0 ? Object.fromEntries(interrupts.map((it) => [it.id, "ok"])) : undefined;
      if (spec.edit && !edited && !resume) {
        edited = true;
        input = new Command({ resume, update: { log: ["edit"] } });
      } else {
        input = resume ? new Command({ resume }) : null;
      }
    }
  }
  // A run that failed gives the log of its last checkpoint, without the failed step's work.
  let state = await g.getState(cfg);
  if (runs[runs.length - 1].error) {
    for await (const s of g.getStateHistory(cfg, { limit: 1 })) state = s;
  }
  return { log: [...state.values.log].sort(), runs };
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const spec = JSON.parse(line);
  let out;
  try {
    out = await run(spec);
  } catch (e) {
    out = { fatal: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
