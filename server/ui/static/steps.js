// The steps of a run, one a tick: a timeline of its ticks; for each, the run's state as the tick
// ended (its stage, the question pending, the output, the board), what the tick changed, node by
// node and field by field, and "fork from here", which starts a new run from that tick, in the
// agent or as a new agent.

import { api } from './api.js';
import { h, clear, time } from './dom.js';

const enc = encodeURIComponent;

// value shows a field's value in a diff.
function value(v) {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// diffList shows what a step changed: changes are {kind, id, added, fields: {name: [was, is]}},
// one a thing changed (a squad's board node, a graph's task); none says empty.
export function diffList(changes, none) {
  if (!changes.length) return h('p', { class: 'meta' }, none);
  return h('ul', { class: 'diff' }, changes.map((c) => h('li', { 'data-id': c.id },
    h('strong', {}, `${c.kind} ${c.id}`), c.added ? ' (new)' : '',
    h('ul', {}, Object.entries(c.fields).map(([k, [was, is]]) => h('li', {}, `${k}: `, h('del', {}, value(was)), ' → ', h('ins', {}, value(is))))))));
}

// stepsView fills root with the steps of the agent a's run, showing tick (the last when 0).
// toast reports an error; forked is called with the summary of the agent the fork is in (a new
// one, forked as a new agent) once it has started.
export function stepsView(root, a, run, tick, { toast, forked }) {
  const list = h('ol', { class: 'steps', 'aria-label': 'Ticks' });
  const panel = h('section', { class: 'step-panel', 'aria-label': 'Step', 'aria-live': 'polite' });
  root.append(h('div', { class: 'steps-wrap' }, list, panel));
  if (!run) {
    panel.append(h('p', { class: 'meta' }, 'The agent has no run yet.'));
    return { event: () => false };
  }
  const base = `/agents/${enc(a.id)}/runs/${enc(run)}/steps`;
  const fail = (err) => panel.append(h('p', { class: 'error' }, err.message));

  const show = async (n) => {
    let d;
    try {
      d = await api(`${base}/${n}`);
    } catch (err) {
      fail(err);
      return;
    }
    const s = d.step;
    const answer = h('input', { type: 'text', name: 'answer', 'aria-label': 'Another answer', placeholder: 'Another answer to the question' });
    const model = h('input', { type: 'text', name: 'coordinator_model', 'aria-label': "The fork's coordinator model", placeholder: 'Another coordinator model (optional)' });
    const agent = h('input', { type: 'text', name: 'agent', 'aria-label': 'The new agent\'s id', placeholder: 'A new agent\'s id, to fork as a new agent' });
    const fork = async (e) => {
      e.preventDefault();
      const body = { tick: n };
      if (answer.value.trim()) body.answer = answer.value.trim();
      if (model.value.trim()) body.coordinator_model = model.value.trim();
      if (e.submitter?.value === 'agent') {
        if (!agent.value.trim()) {
          toast('Fork: give the new agent an id');
          return;
        }
        body.agent = agent.value.trim();
      }
      try {
        forked(await api(`/agents/${enc(a.id)}/runs/${enc(run)}/fork`, { method: 'POST', body }));
      } catch (err) {
        toast(`Fork: ${err.message}`);
      }
    };
    clear(panel).append(h('div', { class: 'step-detail', 'data-tick': n },
      h('h3', {}, `Tick ${n}`, h('span', { class: 'meta' }, ` · stage ${s.stage} · ${time(s.time)} · ${s.messages} bus records`)),
      s.question ? h('p', { class: 'question' }, 'Question pending: ', s.question) : null,
      s.output ? [h('h4', {}, 'Output'), h('pre', { class: 'step-output' }, s.output)] : null,
      h('h4', {}, 'What the tick changed'),
      diffList(d.diff, 'Nothing on the board.'),
      h('h4', {}, 'Board'),
      h('table', { class: 'step-board' },
        h('tr', {}, h('th', {}, 'Node'), h('th', {}, 'Status'), h('th', {}, 'Worker'), h('th', {}, 'Task')),
        (s.nodes || []).map((x) => h('tr', { 'data-node': x.id }, h('td', {}, x.id), h('td', {}, x.status), h('td', {}, x.worker || ''), h('td', {}, x.task)))),
      h('h4', {}, 'Fork from here'),
      h('form', { class: 'fork', onsubmit: fork }, s.question ? answer : null, model, h('button', { type: 'submit', value: 'here' }, 'Fork from here'),
        agent, h('button', { type: 'submit', value: 'agent', title: 'A new agent, with the memory, events and conversation as they were at this tick' }, 'Fork as a new agent'))));
  };

  (async () => {
    let steps;
    try {
      steps = (await api(base)).steps || [];
    } catch (err) {
      fail(err);
      return;
    }
    if (!steps.length) {
      panel.append(h('p', { class: 'meta' }, 'This run has no steps recorded.'));
      return;
    }
    const cur = steps.some((s) => s.tick === tick) ? tick : steps[steps.length - 1].tick;
    for (const s of steps) {
      const notes = [`${s.nodes} nodes`, s.changed?.length ? `${s.changed.length} changed` : '', s.question ? 'question' : '', s.finished ? 'finished' : ''].filter(Boolean);
      list.append(h('li', {}, h('a', { href: `#/a/${enc(a.id)}/steps/${enc(run)}/${s.tick}`, 'data-tick': s.tick, 'aria-current': s.tick === cur ? 'page' : null },
        `Tick ${s.tick}`, h('span', { class: 'meta' }, ` · ${notes.join(' · ')}`))));
    }
    await show(cur);
  })();
  return { event: () => false };
}
