// The graphs the server serves over the LangGraph API, read through that API as any client reads
// it: the assistants, a graph's threads, and a thread's supersteps, one a checkpoint — the state
// at each, the tasks that ran and what they changed, and "fork from here", which edits the state
// or gives new input at a checkpoint and runs the graph on from it: a new branch of the thread.
// Beside what a step changed, each task that made it with what it wrote (its result in the
// history, as LangGraph gives it).
// Routes: #/g[/<assistant>[/t/<thread>[/<checkpoint>]]].

import { api } from './api.js';
import { h, clear, time } from './dom.js';
import { diffList } from './steps.js';

const enc = encodeURIComponent;
const lg = '/langgraph';

// servesGraphs reports whether the server serves the LangGraph API, as its info says.
export async function servesGraphs() {
  try {
    return (await api('/info')).langgraph === lg;
  } catch {
    return false;
  }
}

// ranBefore returns the tasks that made checkpoint st from its parent's: the parent's next tasks,
// for a step of the loop (an input, an update or a fork has none).
function ranBefore(st, parent) {
  return st.metadata?.source === 'loop' ? parent?.tasks || [] : [];
}

// changes lists what a checkpoint changed from its parent's values, as diffList shows it: one
// change, named by the tasks that ran (or the input or update that made it), with the fields
// whose values differ.
function changes(st, parent) {
  const was = parent?.values || {};
  const is = st.values || {};
  const fields = {};
  for (const k of new Set([...Object.keys(was), ...Object.keys(is)])) {
    if (JSON.stringify(was[k]) !== JSON.stringify(is[k])) fields[k] = [was[k], is[k]];
  }
  if (!Object.keys(fields).length) return [];
  const ran = ranBefore(st, parent).map((t) => t.name).join(', ');
  return [{ kind: ran ? 'task' : st.metadata?.source || '', id: ran, fields }];
}

// json shows a value as indented JSON.
function json(v) {
  return h('pre', { class: 'graph-values' }, JSON.stringify(v ?? null, null, 2));
}

// folded is the longest value shown whole in a task's writes; a longer one is folded.
const folded = 80;

// writes shows what task t wrote: a list of key → value, a long value folded to its start.
function writes(t) {
  const entries = Object.entries(t.result ?? {});
  if (!entries.length) return h('span', { class: 'meta' }, t.result ? ' · wrote nothing' : t.interrupts?.length ? ' · waits for input' : ' · has not run');
  return h('ul', {}, entries.map(([k, v]) => {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    return h('li', { 'data-key': k }, h('strong', {}, `${k}: `), text.length <= folded
      ? text
      : h('details', { class: 'fold' }, h('summary', {}, `${text.slice(0, folded)}…`), h('pre', { class: 'graph-values' }, typeof v === 'string' ? v : JSON.stringify(v, null, 2))));
  }));
}

// taskWrites lists tasks, each with what it wrote.
function taskWrites(tasks) {
  return h('ul', { class: 'task-writes' }, tasks.map((t) => h('li', { 'data-task': t.name }, h('span', { class: 'task-name' }, t.name), writes(t))));
}

// graphsView fills root with the view route names: the assistants, an assistant's threads, or a
// thread's steps. toast reports an error.
export function graphsView(root, route, { toast }) {
  const body = h('div', { class: 'graphs' });
  root.append(h('header', { class: 'view-head' }, h('div', { class: 'title' }, h('h2', {}, 'Graphs'))), body);
  const fail = (err) => body.append(h('p', { class: 'error' }, err.message));
  const draw = route.thread ? threadSteps : route.assistant ? threads : assistants;
  draw(body, route, toast).catch(fail);
  return { event: () => false };
}

async function assistants(body) {
  const all = (await api(`${lg}/assistants/search`, { method: 'POST', body: { limit: 100 } }))
    .filter((a) => a.graph_id !== 'squad'); // the server's agents, whose steps the agents' views show
  if (!all.length) {
    body.append(h('p', { class: 'meta' }, 'The server serves no graph.'));
    return;
  }
  body.append(h('h3', {}, 'Assistants'), h('ul', { class: 'assistants' }, all.map((a) => h('li', {},
    h('a', { href: `#/g/${enc(a.assistant_id)}`, 'data-graph': a.graph_id }, a.name || a.graph_id),
    h('span', { class: 'meta' }, ` · graph ${a.graph_id} · version ${a.version}`)))));
}

async function threads(body, route) {
  const a = await api(`${lg}/assistants/${enc(route.assistant)}`);
  const list = await api(`${lg}/threads/search`, { method: 'POST', body: { metadata: { graph_id: a.graph_id }, limit: 100, sort_by: 'updated_at' } });
  body.append(h('h3', {}, `Threads of ${a.name || a.graph_id}`));
  if (!list.length) {
    body.append(h('p', { class: 'meta' }, 'No thread has run this graph yet.'));
    return;
  }
  body.append(h('ul', { class: 'graph-threads' }, list.map((t) => h('li', {},
    h('a', { href: `#/g/${enc(route.assistant)}/t/${enc(t.thread_id)}`, 'data-thread': t.thread_id }, t.thread_id),
    h('span', { class: 'meta' }, ` · ${t.status} · ${time(t.updated_at)}`)))));
}

// branch returns the steps of the branch through checkpoint id (the latest when none, or when
// id is not there), first to last: the newest checkpoint that descends from id, and its
// ancestors. history is newest first, every branch's checkpoints together.
function branch(history, id) {
  const byID = new Map(history.map((st) => [st.checkpoint.checkpoint_id, st]));
  const chain = (st) => {
    const out = [];
    for (; st; st = byID.get(st.parent_checkpoint?.checkpoint_id)) out.unshift(st);
    return out;
  };
  for (const st of history) {
    const c = chain(st);
    if (!id || c.some((x) => x.checkpoint.checkpoint_id === id)) return c;
  }
  return chain(history[0]);
}

// leaves are the checkpoints no other continues from: the ends of the thread's branches.
function leaves(history) {
  const parents = new Set(history.map((st) => st.parent_checkpoint?.checkpoint_id));
  return history.filter((st) => !parents.has(st.checkpoint.checkpoint_id));
}

async function threadSteps(body, route, toast) {
  const a = await api(`${lg}/assistants/${enc(route.assistant)}`);
  const thread = `${lg}/threads/${enc(route.thread)}`;
  const history = await api(`${thread}/history`, { method: 'POST', body: { limit: 1000 } });
  const href = (cp) => `#/g/${enc(route.assistant)}/t/${enc(route.thread)}${cp ? `/${enc(cp)}` : ''}`;
  body.append(h('h3', {}, h('a', { href: `#/g/${enc(route.assistant)}` }, a.name || a.graph_id), ` · thread ${route.thread}`));
  if (!history.length) {
    body.append(h('p', { class: 'meta' }, 'This thread has no steps yet.'));
    return;
  }
  const steps = branch(history, route.checkpoint);
  const cur = steps.find((st) => st.checkpoint.checkpoint_id === route.checkpoint) || steps[steps.length - 1];
  const ends = leaves(history);
  if (ends.length > 1) {
    body.append(h('p', { class: 'branches' }, 'Branches: ', ends.map((st, i) => [i ? ' · ' : '',
      h('a', { href: href(st.checkpoint.checkpoint_id), 'aria-current': steps.includes(st) ? 'true' : null }, `step ${st.metadata.step} (${time(st.created_at)})`)])));
  }
  const list = h('ol', { class: 'steps graph-steps', 'aria-label': 'Steps' }, steps.map((st, i) => {
    const ran = st.metadata.source === 'loop' ? ranBefore(st, steps[i - 1]).map((t) => t.name).join(', ') : st.metadata.source;
    const notes = [ran, st.interrupts.length ? 'interrupt' : '', st.next.length ? '' : 'end'].filter(Boolean);
    return h('li', {}, h('a', { href: href(st.checkpoint.checkpoint_id), 'data-checkpoint': st.checkpoint.checkpoint_id, 'data-step': st.metadata.step, 'aria-current': st === cur ? 'page' : null },
      `Step ${st.metadata.step}`, h('span', { class: 'meta' }, ` · ${notes.join(' · ')}`)));
  }));
  const panel = h('section', { class: 'step-panel', 'aria-label': 'Step', 'aria-live': 'polite' });
  body.append(h('div', { class: 'steps-wrap' }, list, panel));

  const parent = steps[steps.indexOf(cur) - 1];
  const input = h('textarea', { name: 'input', rows: 3, 'aria-label': 'New input (JSON)', placeholder: 'New input, as JSON (optional)' });
  const edit = h('textarea', { name: 'edit', rows: 3, 'aria-label': 'State edit (JSON)', placeholder: 'Values to change in the state, as JSON (optional)' });
  const parse = (el, what) => {
    const text = el.value.trim();
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new Error(`${what}: not JSON (${err.message})`);
    }
  };
  const fork = async (e) => {
    e.preventDefault();
    const button = e.target.querySelector('button');
    button.disabled = true;
    try {
      const values = parse(edit, 'the state edit');
      let from = cur.checkpoint.checkpoint_id;
      if (values !== undefined) {
        from = (await api(`${thread}/state`, { method: 'POST', body: { values, checkpoint_id: from } })).checkpoint.checkpoint_id;
      }
      await api(`${thread}/runs/wait`, { method: 'POST', body: { assistant_id: a.assistant_id, input: parse(input, 'the input') ?? null, checkpoint_id: from } });
      const latest = await api(`${thread}/state`);
      location.hash = href(latest.checkpoint.checkpoint_id);
    } catch (err) {
      toast(`Fork: ${err.message}`);
      button.disabled = false;
    }
  };
  const tasks = cur.tasks || [];
  const ran = ranBefore(cur, parent);
  panel.append(h('div', { class: 'step-detail', 'data-checkpoint': cur.checkpoint.checkpoint_id },
    h('h3', {}, `Step ${cur.metadata.step}`, h('span', { class: 'meta' }, ` · ${cur.metadata.source} · ${time(cur.created_at)} · checkpoint ${cur.checkpoint.checkpoint_id}`)),
    cur.interrupts.length ? cur.interrupts.map((i) => h('p', { class: 'question' }, 'Interrupt: ', typeof i.value === 'string' ? i.value : JSON.stringify(i.value))) : null,
    h('div', { class: 'step-changes' },
      h('div', {}, h('h4', {}, 'What the step changed'),
        diffList(changes(cur, parent), parent ? 'Nothing in the state.' : 'The first step.')),
      ran.length ? h('div', {}, h('h4', {}, 'What each task wrote'), taskWrites(ran)) : null),
    h('h4', {}, 'State'), json(cur.values),
    h('h4', {}, 'Next'),
    tasks.length
      ? h('div', { class: 'graph-tasks' }, taskWrites(tasks))
      : h('p', { class: 'meta' }, 'Nothing: the run ended here.'),
    h('h4', {}, 'Fork from here'),
    h('p', { class: 'meta' }, 'Runs the graph on from this step, after the state edit and with the input given: a new branch of the thread.'),
    h('form', { class: 'fork graph-fork', onsubmit: fork }, edit, input, h('button', { type: 'submit' }, 'Fork from here'))));
}
