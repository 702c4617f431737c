// A timeline of an agent's events as a person reads them: chat bubbles for messages, the model's
// words as they stream, tool calls collapsed with their results, questions with an answer box, and
// system events as one-line notes. Long timelines are virtualized.

import { h, time } from './dom.js';
import { renderMarkdown } from './md.js';
import { VirtualList } from './vlist.js';

// Timeline shows the events that `accepts` takes, in a VirtualList in container. answer(item,
// text) is called when the person answers a question shown in it.
export class Timeline {
  constructor(container, { accepts, answer, names }) {
    this.accepts = accepts;
    this.answer = answer;
    this.names = names || (() => new Map());
    this.calls = new Map(); // tool call id → index of its item
    this.streams = new Map(); // who → index of the item their streamed text goes to
    this.turns = new Map(); // who → index of their latest turn, which their reply to the human repeats
    this.asked = new Map(); // who → the text of their latest question
    this.list = new VirtualList(container, (item) => this.render(item));
  }

  // add shows ev if the timeline takes it.
  add(ev) {
    if (!this.accepts(ev)) return;
    const d = ev.data || {};
    if (ev.type === 'tool.result') {
      const i = this.calls.get(d.id);
      if (i !== undefined) {
        const item = this.list.items[i];
        this.list.update(i, { ...item, result: d.result ?? ev.text, isError: d.is_error || d.isError });
        return;
      }
    }
    if (ev.type === 'x.model_turn') {
      const i = this.streams.get(ev.worker);
      this.streams.delete(ev.worker);
      if (i !== undefined) {
        const item = this.list.items[i];
        // The log keeps a turn's first 500 bytes; the streamed text may hold all of it.
        const text = item.text.length > (ev.text || '').length ? item.text : ev.text;
        this.list.update(i, { ...item, kind: 'turn', text, time: ev.time, streaming: false });
        this.turns.set(ev.worker, i);
        return;
      }
    }
    const item = itemOf(ev);
    if (!item) return;
    // A question reaches the human also as a message: it is shown once, as the question.
    if (item.kind === 'question') this.asked.set(item.who, item.text);
    else if (item.kind === 'chat' && item.who !== 'human' && [...this.asked.values()].includes(item.text)) return;
    // A reply in plain text is the model's turn and a message to the human: it is shown once, as
    // the turn, with the message's whole text (the logged turn keeps its first 500 bytes).
    if (item.kind === 'chat' && item.who !== 'human') {
      const i = this.turns.get(item.who);
      const turn = i === undefined ? null : this.list.items[i];
      if (turn && !turn.streaming && repeats(turn.text, item.text)) {
        this.turns.delete(item.who);
        this.list.update(i, { ...turn, text: item.text });
        return;
      }
    }
    if (item.kind === 'tool') this.calls.set(item.id, this.list.length);
    if (item.kind === 'turn') this.turns.set(item.who, this.list.length);
    this.list.append(item);
  }

  // delta adds streamed text of a model's answer that is not logged yet.
  delta(d) {
    const who = d.worker || 'coordinator';
    if (!this.accepts({ type: 'x.model_turn', worker: who, node: d.node })) return;
    const i = this.streams.get(who);
    if (i === undefined) {
      this.streams.set(who, this.list.length);
      this.turns.set(who, this.list.length);
      this.list.append({ kind: 'turn', who, text: d.text || '', streaming: true, time: d.time });
      return;
    }
    const item = this.list.items[i];
    this.list.update(i, { ...item, text: item.text + (d.text || '') });
  }

  destroy() {
    this.list.destroy();
  }

  render(item) {
    switch (item.kind) {
      case 'chat':
        return h('div', { class: `bubble from-${item.who === 'human' ? 'human' : 'agent'}` },
          h('div', { class: 'meta' }, item.who === 'human' ? 'You' : this.label(item.who), ' · ', time(item.time)),
          h('div', { class: 'md' }, renderMarkdown(item.text)));
      case 'turn':
        return h('div', { class: `bubble from-agent${item.streaming ? ' streaming' : ''}`, 'aria-busy': item.streaming ? 'true' : null },
          h('div', { class: 'meta' }, this.label(item.who), item.streaming ? ' · writing…' : ` · ${time(item.time)}`),
          h('div', { class: 'md' }, renderMarkdown(item.text)));
      case 'msg':
        return h('div', { class: 'note message' },
          h('span', { class: 'meta' }, `${this.label(item.from)} → ${this.label(item.to)} · ${time(item.time)}`),
          h('div', { class: 'md' }, renderMarkdown(item.text)));
      case 'question':
        return this.question(item);
      case 'tool':
        return h('details', { class: `tool${item.isError ? ' error' : ''}` },
          h('summary', {}, h('span', { class: 'tool-name' }, item.name), ' ', h('span', { class: 'meta' }, `${item.result === undefined ? 'running' : item.isError ? 'failed' : 'done'} · ${time(item.time)}`)),
          h('pre', { class: 'args' }, JSON.stringify(item.args ?? {}, null, 2)),
          item.result === undefined ? null : h('pre', { class: 'result' }, String(item.result)));
      default:
        return h('div', { class: `note system type-${item.type.replace(/[^a-z]/g, '-')}` },
          h('span', { class: 'meta' }, time(item.time)), ' ', item.text);
    }
  }

  question(item) {
    if (item.approval && !item.answered) return this.approval(item);
    const input = h('textarea', { rows: 2, 'aria-label': `Answer to ${this.label(item.who)}`, placeholder: 'Your answer' });
    const form = h('form', {
      class: 'answer',
      onsubmit: (e) => {
        e.preventDefault();
        const text = input.value.trim();
        if (text) this.answer(item, text);
      },
    }, input, h('button', { type: 'submit' }, 'Answer'));
    return h('div', { class: `bubble question${item.answered ? ' answered' : ''}`, role: 'group', 'aria-label': `Question from ${this.label(item.who)}` },
      h('div', { class: 'meta' }, `${this.label(item.who)} asks · ${time(item.time)}`),
      h('div', { class: 'md' }, renderMarkdown(item.text)),
      item.answered ? h('div', { class: 'meta' }, 'Answered: ', item.answered) : form);
  }

  // approval is a tool call waiting for the person's approval: its arguments, editable, and the
  // three answers (see hooks.ParseVerdict).
  approval(item) {
    const ap = item.approval;
    const who = this.label(item.who);
    const args = h('textarea', { rows: 4, class: 'args', 'aria-label': `Arguments of ${ap.tool}` });
    args.value = JSON.stringify(ap.args ?? {}, null, 2);
    const reason = h('input', { type: 'text', 'aria-label': 'Reason to reject', placeholder: 'Reason (to reject)' });
    const button = (label, text) => h('button', { type: 'button', onclick: () => this.answer(item, text()) }, label);
    return h('div', { class: 'bubble question approval', role: 'group', 'aria-label': `Approval asked by ${who}` },
      h('div', { class: 'meta' }, `${who} asks to run `, h('span', { class: 'tool-name' }, ap.tool), ` · ${time(item.time)}`),
      args, reason,
      h('div', { class: 'answer' },
        button('Approve', () => 'approve'),
        button('Run edited', () => `edit ${args.value}`),
        button('Reject', () => `reject ${reason.value.trim()}`)));
  }

  // markAnswered shows the question of who as answered with text.
  markAnswered(who, text) {
    for (let i = this.list.length - 1; i >= 0; i--) {
      const item = this.list.items[i];
      if (item.kind === 'question' && item.who === who && !item.answered) {
        this.list.update(i, { ...item, answered: text });
        return;
      }
    }
  }

  label(who) {
    if (!who) return 'someone';
    if (who === 'coordinator') return 'Coordinator';
    if (who === 'human') return 'You';
    return this.names().get(who) || who;
  }
}

// systemText is how the timeline words events shown as notes.
const systemText = {
  'agent.created': 'Agent created',
  'agent.started': 'Run started',
  'agent.paused': 'Paused',
  'agent.resumed': 'Resumed',
  'agent.completed': 'Run completed',
  'agent.failed': 'Run failed',
  'agent.waiting': 'Waiting',
  'stage.started': 'Stage started',
  'stage.reconvened': 'Reconvened',
  'stage.completed': 'Stage completed',
  'worker.spawned': 'Worker spawned',
  'worker.stopped': 'Worker stopped',
  'node.created': 'Node created',
  'node.assigned': 'Node assigned',
  'node.started': 'Node started',
  'node.completed': 'Node completed',
  'node.failed': 'Node failed',
  'memory.written': 'Memory written',
  'memory.compacted': 'Compacted',
};

// repeats reports whether message says what a model's turn said: the same text, or, for a turn
// the log cut short (its first 500 bytes, then "…"), the same beginning.
function repeats(turn, message) {
  const t = (turn || '').trim();
  const m = (message || '').trim();
  if (t === m) return true;
  if (!t.endsWith('…')) return false;
  const head = t.slice(0, -1).replace(/\uFFFD+$/, ''); // a character the cut split is lost
  return head !== '' && m.startsWith(head);
}

// itemOf turns an event into a timeline item, or null for events shown otherwise.
export function itemOf(ev) {
  const d = ev.data || {};
  const base = { time: ev.time, seq: ev.seq, type: ev.type };
  switch (ev.type) {
    case 'tool.called':
      return { ...base, kind: 'tool', id: d.id, name: d.name || ev.text, args: d.args };
    case 'tool.result':
      return { ...base, kind: 'tool', id: d.id, name: d.name || 'tool', result: d.result ?? ev.text, isError: d.is_error };
    case 'x.model_turn':
      return ev.text ? { ...base, kind: 'turn', who: ev.worker, text: ev.text } : null;
    case 'message.sent':
    case 'message.received':
      if (ev.type === 'message.received' && d.to !== 'human' && d.from !== 'human') return null; // the sent one shows it
      return { ...base, kind: d.to === 'human' ? 'chat' : 'msg', who: d.from, from: d.from, to: d.to, text: d.body ?? ev.text };
    case 'human.nudge':
    case 'human.response':
      return { ...base, kind: 'chat', who: 'human', text: ev.text };
    case 'human.question':
      return { ...base, kind: 'question', who: ev.worker || 'coordinator', node: ev.node, text: ev.text, approval: ev.data?.tool ? ev.data : null };
    case 'worker.busy':
    case 'worker.idle':
      return null;
    default: {
      const what = systemText[ev.type] || ev.type;
      return { ...base, kind: 'system', text: ev.text ? `${what}: ${ev.text.split('\n')[0]}` : what };
    }
  }
}
