// The page: a sidebar of agents and their workers, and a main view — the coordinator's chat, a
// worker's activity, the work board, the run's files or the agent's memory — kept live by the
// agent's event stream. Routes live in the address's hash: #/a/<agent>[/w/<worker> | /board[/<node>]
// | /files[/<path>] | /memory[/<path>]], and #/new.
// The graphs the server serves over the LangGraph API are at #/g (see graphs.js).

import { api, Stream, Unauthorized } from './api.js';
import { h, clear, debounce, time, usageText, addUsage } from './dom.js';
import { renderMarkdown, renderText } from './md.js';
import { renderBoard } from './board.js';
import { Timeline } from './timeline.js';
import { stepsView } from './steps.js';
import { graphsView, servesGraphs } from './graphs.js';

const main = document.getElementById('main');
const sidebar = document.getElementById('agents');
const toasts = document.getElementById('toasts');

// The page's state: the agents' summaries, the models a new agent may use, and the state of the
// agent whose events are followed.
const page = { agents: [], models: [''], agent: null, view: null, expanded: new Set() };

// Agent is what the page knows of the agent it follows, built from its events.
class Agent {
  constructor(id) {
    this.id = id;
    this.events = [];
    this.workers = new Map(); // id → worker
    this.usage = { run: {}, workers: new Map(), nodes: new Map() };
    this.questions = new Map(); // who → the question event
    this.unread = new Map(); // worker id or "coordinator" → count
    this.board = null;
    this.refreshBoard = debounce(() => this.loadBoard(), 300);
    this.stream = null;
  }

  start() {
    this.stream = new Stream(this.id, {
      onEvent: (ev) => this.event(ev),
      onDelta: (d) => page.view?.delta?.(d),
      onStatus: (s) => setLive(s),
    });
    this.loadWorkers();
    this.loadBoard();
  }

  stop() {
    this.stream?.close();
  }

  async loadWorkers() {
    try {
      const r = await api(`/agents/${enc(this.id)}/workers`);
      for (const w of r.workers || []) this.workers.set(w.id, { ...this.workers.get(w.id), ...w });
      drawSidebar();
    } catch (err) {
      if (!(err instanceof Error)) throw err;
    }
  }

  async loadBoard() {
    try {
      this.board = await api(`/agents/${enc(this.id)}/board`);
      for (const w of this.board.workers || []) this.workers.set(w.id, { ...this.workers.get(w.id), ...w });
      page.view?.board?.(this.board);
      drawSidebar();
    } catch (err) {
      if (err instanceof Unauthorized) askToken();
    }
  }

  // who returns the id of the worker (or "coordinator") an event concerns, from its id or name.
  who(ev) {
    const w = ev.worker || '';
    if (!w) return '';
    if (w === 'coordinator' || this.workers.has(w)) return w;
    for (const x of this.workers.values()) if (x.name === w) return x.id;
    return w;
  }

  names() {
    const m = new Map();
    for (const w of this.workers.values()) m.set(w.id, w.name || w.id);
    return m;
  }

  event(ev) {
    this.events.push(ev);
    document.body.dataset.events = String(this.events.length);
    document.body.dataset.lastSeq = String(ev.seq);
    const d = ev.data || {};
    const who = this.who(ev);
    switch (ev.type) {
      case 'worker.spawned':
        this.workers.set(d.id || who, { ...d, status: d.status || 'idle' });
        drawSidebar();
        break;
      case 'worker.busy':
      case 'worker.idle':
      case 'worker.stopped':
        if (this.workers.has(who)) {
          const w = this.workers.get(who);
          w.status = ev.type.slice('worker.'.length);
          w.node = ev.type === 'worker.busy' ? ev.node : w.node;
          drawSidebar();
        }
        break;
      case 'human.question':
        this.questions.set(who || 'coordinator', ev);
        if (live(ev)) questionToast(this.id, who || 'coordinator', ev.text);
        drawSidebar();
        break;
      case 'human.response':
        this.questions.delete(who || 'coordinator');
        dismissQuestion(this.id, who || 'coordinator');
        page.view?.answered?.(who || 'coordinator', ev.text);
        drawSidebar();
        break;
      case 'x.model_turn':
        addUsage(this.usage.run, d);
        if (who) this.usage.workers.set(who, addUsage(this.usage.workers.get(who) || {}, d));
        if (ev.node) this.usage.nodes.set(ev.node, addUsage(this.usage.nodes.get(ev.node) || {}, d));
        page.view?.usage?.();
        break;
    }
    if (ev.type.startsWith('node.') || ev.type.startsWith('stage.') || ev.type === 'worker.spawned') this.refreshBoard();
    if (ev.type.startsWith('agent.')) refreshAgents();
    else if (ev.type.startsWith('human.')) refreshAgentsSoon(); // the agent waits, or no longer
    const shown = page.view?.event?.(ev);
    if (!shown && who && live(ev) && countsAsUnread(ev)) {
      this.unread.set(who, (this.unread.get(who) || 0) + 1);
      drawSidebar();
    }
  }
}

const enc = encodeURIComponent;

// live reports whether ev happened in the last minute: older ones are history being replayed.
function live(ev) {
  return Date.now() - new Date(ev.time).getTime() < 60_000;
}

function countsAsUnread(ev) {
  return ['message.sent', 'message.received', 'x.model_turn', 'human.question', 'node.completed', 'node.failed'].includes(ev.type);
}

// ---- the sidebar

async function refreshAgents() {
  try {
    const r = await api('/agents');
    page.agents = r.agents || [];
    drawSidebar();
    drawHeadStatus();
  } catch (err) {
    if (err instanceof Unauthorized) askToken();
  }
}

const refreshAgentsSoon = debounce(refreshAgents, 500);

// drawHeadStatus shows the open agent's status, as last listed, in its view's head.
function drawHeadStatus() {
  const a = page.agents.find((x) => x.id === page.route?.agent);
  const status = main.querySelector('.view-head [data-status]');
  if (!a || !status) return;
  status.textContent = (a.status || '').replaceAll('_', ' ');
  status.parentElement.querySelector('.dot').replaceWith(dot(a.status));
  status.parentElement.querySelector('[data-stage]').textContent = stageText(a);
}

// stageText names the current stage of the agent's run, once it began.
function stageText(a) {
  return a.stage ? `stage ${a.stage}` : '';
}

function statusClass(status) {
  switch (status) {
    case 'working':
    case 'busy':
    case 'queued':
      return 'working';
    case 'waiting_for_human':
    case 'waiting':
      return 'waiting';
    case 'completed':
    case 'idle':
      return 'done';
    case 'failed':
    case 'damaged':
      return 'failed';
    case 'stopped':
    case 'retired':
    case 'interrupted':
    case 'paused':
    case 'over_budget':
      return 'retired';
    default:
      return 'idle';
  }
}

function dot(status, label) {
  return h('span', { class: `dot status-${statusClass(status)}`, role: 'img', 'aria-label': label || status || 'idle', title: status || 'idle' });
}

function badge(n) {
  return n ? h('span', { class: 'badge', 'aria-label': `${n} unread` }, String(n)) : null;
}

// drawSidebar draws the sidebar again with the next frame, once however often it is asked.
let sidebarFrame = 0;
function drawSidebar() {
  if (!sidebarFrame) sidebarFrame = requestAnimationFrame(() => {
    sidebarFrame = 0;
    drawSidebarNow();
  });
}

// sidebarDrawn is what the sidebar shows, so that it is drawn again only when that changes: a
// link is not replaced under a pointer about to click it.
let sidebarDrawn = '';

function drawSidebarNow() {
  const route = page.route || {};
  const f = page.agent;
  const shown = JSON.stringify([route, [...page.expanded], page.agents.map((a) => [a.id, a.status, a.goal, a.waiting_for]),
    f && [f.id, [...f.workers.values()].map((w) => [w.id, w.name, w.status]), [...f.questions.keys()], [...f.unread]]]);
  if (shown === sidebarDrawn) return;
  sidebarDrawn = shown;
  clear(sidebar);
  for (const a of page.agents) {
    const open = a.id === route.agent || page.expanded.has(a.id);
    const ag = page.agent && page.agent.id === a.id ? page.agent : null;
    const link = (href, label, extra, current) => h('li', {}, h('a', { href, 'aria-current': current ? 'page' : null }, label, extra));
    const items = [];
    if (ag || open) {
      const coordWaiting = ag?.questions.has('coordinator') || (a.status === 'waiting_for_human' && a.waiting_for === 'coordinator');
      items.push(link(`#/a/${enc(a.id)}`, [dot(coordWaiting ? 'waiting' : a.status, coordWaiting ? 'waiting for you' : a.status), 'Coordinator'], badge(ag?.unread.get('coordinator')), route.agent === a.id && route.kind === 'chat'));
      for (const w of ag ? ag.workers.values() : []) {
        const waiting = ag.questions.has(w.id);
        items.push(link(`#/a/${enc(a.id)}/w/${enc(w.id)}`, [dot(waiting ? 'waiting' : w.status, waiting ? 'waiting for you' : w.status), w.name || w.id], badge(ag.unread.get(w.id)), route.kind === 'worker' && route.worker === w.id));
      }
      items.push(link(`#/a/${enc(a.id)}/board`, 'Work Board', null, route.agent === a.id && route.kind === 'board'));
      items.push(link(`#/a/${enc(a.id)}/files`, 'Files', null, route.agent === a.id && route.kind === 'files'));
      items.push(link(`#/a/${enc(a.id)}/memory`, 'Memory', null, route.agent === a.id && route.kind === 'memory'));
      items.push(link(`#/a/${enc(a.id)}/steps`, 'Steps', null, route.agent === a.id && route.kind === 'steps'));
    }
    const details = h('details', { ...(open ? { open: true } : {}), 'data-agent': a.id },
      h('summary', {}, dot(a.status), h('span', { class: 'agent-name', title: a.goal || a.id }, a.goal || a.id),
        a.status === 'waiting_for_human' ? h('span', { class: 'badge', 'aria-label': 'waiting for you' }, '?') : null),
      h('ul', {}, items));
    details.addEventListener('toggle', () => {
      if (details.open) page.expanded.add(a.id);
      else page.expanded.delete(a.id);
      if (details.open && !ag && !items.length) drawSidebar();
    });
    sidebar.append(h('li', {}, details));
  }
  if (!page.agents.length) sidebar.append(h('li', { class: 'empty' }, 'No agents yet.'));
}

function setLive(status) {
  document.body.dataset.stream = status;
  const el = document.getElementById('live');
  if (el) el.textContent = status === 'live' ? 'live' : status === 'reconnecting' ? 'reconnecting…' : status;
  if (status === 'unauthorized') askToken();
}

// ---- toasts and the token

function toast(text, action, key) {
  if (key && toasts.querySelector(`[data-key="${CSS.escape(key)}"]`)) return;
  const t = h('div', { class: 'toast', role: 'alert', 'data-key': key }, h('span', {}, text),
    action ? h('a', { href: action.href, onclick: () => t.remove() }, action.label) : null,
    h('button', { type: 'button', 'aria-label': 'Dismiss', onclick: () => t.remove() }, '×'));
  toasts.append(t);
  setTimeout(() => t.remove(), 15_000);
}

function questionToast(agent, who, text) {
  const name = who === 'coordinator' ? 'The coordinator' : page.agent?.names().get(who) || who;
  const href = who === 'coordinator' ? `#/a/${enc(agent)}` : `#/a/${enc(agent)}/w/${enc(who)}`;
  toast(`${name} asks: ${text}`, { href, label: 'Answer' }, `question:${agent}:${who}`);
}

// dismissQuestion removes the toast of who's question.
function dismissQuestion(agent, who) {
  toasts.querySelector(`[data-key="${CSS.escape(`question:${agent}:${who}`)}"]`)?.remove();
}

function askToken() {
  const dlg = document.getElementById('token-dialog');
  if (dlg.open) return;
  dlg.showModal();
  dlg.querySelector('input').focus();
}

document.getElementById('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const tok = document.getElementById('token-input').value.trim();
  if (tok) location.href = `/?token=${enc(tok)}`;
});

// ---- views

// agentHeader is the head of an agent's views: its goal, status, controls and usage.
function agentHeader(a, title) {
  const ag = page.agent;
  const usage = h('span', { class: 'usage', 'data-usage': 'run' }, usageText(ag?.usage.run));
  const goalInput = h('input', { type: 'text', 'aria-label': 'Goal of the new run', placeholder: 'Goal of a new run' });
  const act = (label, path, body) => h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await api(`/agents/${enc(a.id)}/${path}`, { method: 'POST', body: body ? body() : {} });
        refreshAgentsSoon();
      } catch (err) {
        toast(`${label}: ${err.message}`);
      }
    },
  }, label);
  return h('header', { class: 'view-head' },
    h('div', { class: 'title' }, dot(a.status), h('h2', {}, title), h('span', { class: 'status', 'data-status': '' }, (a.status || '').replaceAll('_', ' ')),
      h('span', { class: 'meta', 'data-stage': '' }, stageText(a)),
      h('span', { id: 'live', class: 'live' }, document.body.dataset.stream || '')),
    h('div', { class: 'controls' },
      act('Stop', 'stop'), act('Pause', 'pause'), act('Resume', 'resume'),
      h('form', {
        class: 'new-run',
        onsubmit: async (e) => {
          e.preventDefault();
          if (!goalInput.value.trim()) return;
          try {
            await api(`/agents/${enc(a.id)}/runs`, { method: 'POST', body: { goal: goalInput.value.trim() } });
            goalInput.value = '';
            refreshAgentsSoon();
          } catch (err) {
            toast(`New run: ${err.message}`);
          }
        },
      }, goalInput, h('button', { type: 'submit' }, 'New run')),
      usage),
    a.error ? h('p', { class: 'error', role: 'alert' }, a.error) : null);
}

function composer(placeholder, label, send) {
  const input = h('textarea', { rows: 2, placeholder, 'aria-label': label });
  const form = h('form', {
    class: 'composer',
    onsubmit: async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      try {
        await send(text);
        input.value = '';
      } catch (err) {
        toast(err.message);
      }
    },
  }, input, h('button', { type: 'submit' }, 'Send'));
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  return form;
}

async function answer(agent, who, text) {
  const body = { response: text };
  if (who !== 'coordinator') body.worker = who;
  try {
    await api(`/agents/${enc(agent)}/respond`, { method: 'POST', body });
    page.agent?.questions.delete(who);
    dismissQuestion(agent, who);
    drawSidebar();
  } catch (err) {
    toast(`Answer: ${err.message}`);
  }
}

// timelineView is the coordinator's chat (worker null) or a worker's activity.
function timelineView(a, worker) {
  const ag = page.agent;
  const list = h('div', { class: 'timeline', 'aria-label': worker ? 'Activity' : 'Conversation' });
  const isCoordinator = !worker;
  const system = /^(agent|stage)\.|^worker\.spawned$/;
  const accepts = (ev) => {
    const who = ag.who(ev);
    if (isCoordinator) return system.test(ev.type) || who === 'coordinator' || (ev.type.startsWith('human.') && !who);
    return who === worker;
  };
  const tl = new Timeline(list, { accepts, answer: (item, text) => answer(a.id, item.who, text), names: () => ag.names() });
  const info = h('section', { class: 'worker-info' });
  const output = h('section', { class: 'output' });
  const head = agentHeader(a, isCoordinator ? 'Coordinator' : ag.names().get(worker) || worker);
  clear(main).append(head, info, h('div', { class: 'timeline-wrap' }, list), output,
    composer(isCoordinator ? 'Message the coordinator' : `Message ${ag.names().get(worker) || worker}`,
      isCoordinator ? 'Message to the coordinator' : 'Message to the worker',
      (text) => api(`/agents/${enc(a.id)}/send`, { method: 'POST', body: isCoordinator ? { message: text } : { to: worker, message: text } })));
  for (const ev of ag.events) tl.add(ev);
  ag.unread.delete(worker || 'coordinator');
  drawSidebar();

  // drawInfo draws the worker's header, then its node's spec once fetched; a draw that starts
  // while another waits for its node supersedes it: only the latest one adds its node.
  let draws = 0;
  const drawInfo = async () => {
    if (isCoordinator) {
      clear(output);
      if (a.output) output.append(h('details', { open: a.status === 'completed' }, h('summary', {}, 'Output'), h('div', { class: 'md' }, renderMarkdown(a.output))));
      return;
    }
    const draw = ++draws;
    const w = ag.workers.get(worker) || {};
    const node = w.node || (ag.board?.nodes || []).filter((n) => n.worker === worker).map((n) => n.id).pop();
    clear(info).append(h('p', {}, dot(w.status), ` ${w.status || 'idle'} · ${w.kind || ''}`, node ? [' · on ', h('a', { href: `#/a/${enc(a.id)}/board/${enc(node)}` }, node)] : null,
      ' · ', h('span', { 'data-usage': 'worker' }, usageText(ag.usage.workers.get(worker)))));
    if (!node) return;
    let parts;
    try {
      const n = await api(`/agents/${enc(a.id)}/board/${enc(node)}`);
      const pub = n.published || [];
      parts = [h('details', {}, h('summary', {}, `Spec of ${node}`), h('div', { class: 'md' }, renderMarkdown(n.spec || n.node?.task || ''))),
        pub.length ? h('div', { class: 'published' }, 'Published: ', pub.map((p) => h('a', { href: `#/a/${enc(a.id)}/files/${publishedPath(n, p)}` }, p))) : null];
    } catch (err) {
      parts = [h('p', { class: 'error' }, err.message)];
    }
    if (draw === draws) info.append(...parts.filter(Boolean));
  };
  drawInfo();
  return {
    event: (ev) => {
      tl.add(ev);
      if (!isCoordinator && ev.type.startsWith('worker.') && ag.who(ev) === worker) drawInfo();
      return accepts(ev);
    },
    delta: (d) => tl.delta(d),
    answered: (who, text) => tl.markAnswered(who, text),
    usage: () => {
      for (const el of main.querySelectorAll('[data-usage=run]')) el.textContent = usageText(ag.usage.run);
      for (const el of main.querySelectorAll('[data-usage=worker]')) el.textContent = usageText(ag.usage.workers.get(worker));
    },
    summary: (s) => {
      const changed = s.output !== a.output || s.status !== a.status;
      a = s;
      if (isCoordinator && changed) drawInfo();
    },
    unmount: () => tl.destroy(),
  };
}

// nodeControls are the operator's buttons on a node: Retry a failed one, Skip a pending or
// failed one (with a note for the nodes after it); done runs after either succeeded.
function nodeControls(a, id, node, done) {
  const operate = async (verb, body) => {
    try {
      await api(`/agents/${enc(a.id)}/board/${enc(id)}/${verb}`, { method: 'POST', body });
      done();
    } catch (err) {
      toast(`${verb} ${id}: ${err.message}`);
    }
  };
  const canSkip = node.status === 'pending' || node.status === 'failed';
  if (!canSkip) return null;
  const note = h('input', { type: 'text', 'aria-label': `Why skip ${id}`, placeholder: 'Why skip it (told to the nodes after it)' });
  return h('div', { class: 'node-controls' },
    node.status === 'failed' ? h('button', { type: 'button', 'data-op': 'retry', onclick: () => operate('retry', {}) }, 'Retry') : null,
    h('form', { class: 'skip', onsubmit: (e) => { e.preventDefault(); operate('skip', { note: note.value.trim() }); } },
      note, h('button', { type: 'submit', 'data-op': 'skip' }, 'Skip')));
}

function publishedPath(n, file) {
  return `nodes/${enc(n.node?.id || '')}/published/${file.split('/').map(enc).join('/')}`;
}

function boardView(a, nodeID) {
  const ag = page.agent;
  const canvas = h('div', { class: 'board', 'aria-label': 'Work board' });
  const panel = h('aside', { class: 'node-panel', 'aria-label': 'Node' });
  clear(main).append(agentHeader(a, 'Work Board'), h('div', { class: 'board-wrap' }, canvas, panel));
  let selected = nodeID;
  let opened = 0; // the number of the panel's latest load (shown as its data-loaded): an answer to an older one is dropped
  // The panel's detail: its head (the title and the operator's controls) is redrawn only when the
  // node or its status changes, so a note being typed survives the node's other events.
  const head = h('div', { class: 'node-head' });
  const body = h('div', { class: 'node-body' });
  let shown = ''; // the node and status the head shows
  const draw = (board) => {
    if (!board) return;
    renderBoard(canvas, board, { selected, onOpenNode: (id) => { location.hash = `#/a/${enc(a.id)}/board/${enc(id)}`; } });
  };
  const say = (p) => {
    shown = '';
    clear(panel).append(p);
  };
  const open = async (id) => {
    const mine = ++opened;
    if (!id) {
      say(h('p', { class: 'meta' }, 'Choose a node to see its spec, references, files and log.'));
      return;
    }
    try {
      const n = await api(`/agents/${enc(a.id)}/board/${enc(id)}`);
      if (mine !== opened) return;
      const node = n.node || {};
      const refs = Object.entries(node.refs || {});
      const log = ag.events.filter((ev) => ev.node === id).slice(-200);
      panel.dataset.loaded = String(mine);
      if (!shown) clear(panel).append(h('div', { class: 'node-detail' }, head, body));
      if (shown !== `${id} ${node.status}`) {
        shown = `${id} ${node.status}`;
        clear(head).append(h('h3', {}, `${id} · ${node.status}`), nodeControls(a, id, node, () => open(id)) || '');
      }
      clear(body).append(
        h('p', { class: 'meta' }, node.worker ? `Worker ${ag.names().get(node.worker) || node.worker}` : 'Not assigned', ' · stage ', String(node.stage ?? ''), ' · ', usageText(ag.usage.nodes.get(id))),
        node.summary ? h('p', {}, node.summary) : '',
        h('h4', {}, 'Spec'), h('div', { class: 'md' }, renderMarkdown(n.spec || node.task || '')),
        ...(refs.length ? [h('h4', {}, 'References'), h('ul', {}, refs.map(([k, v]) => h('li', {}, `${k}: `, h('a', { href: `#/a/${enc(a.id)}/board/${enc(String(v).split('/')[0])}` }, String(v)))))] : []),
        h('h4', {}, 'Published'),
        (n.published || []).length ? h('ul', {}, n.published.map((p) => h('li', {}, h('a', { href: `#/a/${enc(a.id)}/files/${publishedPath(n, p)}` }, p)))) : h('p', { class: 'meta' }, 'Nothing yet.'),
        h('h4', {}, 'Scratch'), h('p', {}, h('a', { href: `#/a/${enc(a.id)}/files/nodes/${enc(id)}/scratch` }, `nodes/${id}/scratch`)),
        h('h4', {}, 'Log'), h('ol', { class: 'log' }, log.map((ev) => h('li', {}, h('span', { class: 'meta' }, time(ev.time)), ` ${ev.type} `, ev.text ? ev.text.split('\n')[0].slice(0, 200) : ''))));
    } catch (err) {
      if (mine === opened) say(h('p', { class: 'error' }, err.message));
    }
  };
  const reopen = debounce(() => open(selected), 100); // a replayed history asks once, not once an event
  draw(ag.board);
  open(selected);
  return {
    board: draw,
    event: (ev) => {
      if (selected && ev.node === selected && (ev.type.startsWith('node.') || ev.type === 'tool.called')) reopen();
      return false;
    },
    summary: () => {},
  };
}

// treeView lists a folder of the run (base "workspace") or the agent's memory and previews files.
function treeView(a, base, path) {
  const title = base === 'workspace' ? 'Files' : 'Memory';
  const tree = h('nav', { class: 'tree', 'aria-label': title });
  const preview = h('article', { class: 'preview', 'aria-live': 'polite' });
  clear(main).append(agentHeader(a, title), h('div', { class: 'tree-wrap' }, tree, preview));
  const href = (p) => `#/a/${enc(a.id)}/${base === 'workspace' ? 'files' : 'memory'}/${p.split('/').map(enc).join('/')}`;
  const show = (p, content) => {
    clear(preview).append(h('h3', {}, p), /\.(md|markdown)$/i.test(p) ? h('div', { class: 'md' }, renderMarkdown(content)) : renderText(content));
  };
  const list = async () => {
    if (base === 'memory') {
      const r = await api(`/agents/${enc(a.id)}/memory`);
      clear(tree).append(h('ul', {}, (r.files || []).map((f) => h('li', {}, h('a', { href: href(f) }, f)))));
      if (path) show(path, (await api(`/agents/${enc(a.id)}/memory/${path.split('/').map(enc).join('/')}`)).content);
      return;
    }
    const dir = async (p, ul) => {
      const r = await api(`/agents/${enc(a.id)}/workspace${p ? '/' + p.split('/').map(enc).join('/') : ''}`);
      if (r.content !== undefined) return r;
      for (const e of r.entries || []) {
        const child = p ? `${p}/${e.name}` : e.name;
        if (e.dir) {
          const sub = h('ul', {});
          const d = h('details', { open: path && (path === child || path.startsWith(child + '/')) }, h('summary', {}, e.name + '/'), sub);
          let loaded = false;
          const load = () => { if (!loaded) { loaded = true; dir(child, sub).catch((err) => sub.append(h('li', { class: 'error' }, err.message))); } };
          d.addEventListener('toggle', () => d.open && load());
          if (d.open) load();
          ul.append(h('li', {}, d));
        } else {
          ul.append(h('li', {}, h('a', { href: href(child), 'aria-current': child === path ? 'page' : null }, e.name), h('span', { class: 'meta' }, ` ${e.size} B`)));
        }
      }
      return null;
    };
    const root = h('ul', {});
    clear(tree).append(root);
    await dir('', root);
    if (path) {
      const r = await api(`/agents/${enc(a.id)}/workspace/${path.split('/').map(enc).join('/')}`);
      if (r.content !== undefined) show(path, r.content);
    }
  };
  list().catch((err) => {
    if (err instanceof Unauthorized) askToken();
    clear(preview).append(h('p', { class: 'error' }, err.message));
  });
  return { event: () => false, summary: () => {} };
}

function newAgentView() {
  const goal = h('textarea', { id: 'new-goal', rows: 4, required: true, placeholder: 'What should the agent do?' });
  const model = h('select', { id: 'new-model' }, page.models.map((m) => h('option', { value: m }, m || 'server default')));
  const mode = h('select', { id: 'new-mode' }, h('option', { value: 'finite' }, 'finite: finish the goal'), h('option', { value: 'infinite' }, 'infinite: keep going'));
  const form = h('form', {
    class: 'new-agent',
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const body = { goal: goal.value.trim(), mode: mode.value };
        if (model.value) body.model = model.value;
        const s = await api('/agents', { method: 'POST', body });
        await refreshAgents();
        location.hash = `#/a/${enc(s.id)}`;
      } catch (err) {
        toast(`New agent: ${err.message}`);
      }
    },
  },
  h('h2', {}, 'New agent'),
  h('label', { for: 'new-goal' }, 'Goal'), goal,
  h('label', { for: 'new-model' }, 'Model'), model,
  h('label', { for: 'new-mode' }, 'Mode'), mode,
  h('button', { type: 'submit' }, 'Start'));
  clear(main).append(form);
  goal.focus();
  return { event: () => false };
}

// ---- the router

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'new') return { kind: 'new' };
  if (parts[0] === 'g') return { kind: 'graphs', assistant: parts[1], thread: parts[2] === 't' ? parts[3] : undefined, checkpoint: parts[4] };
  if (parts[0] !== 'a' || !parts[1]) return { kind: 'home' };
  const r = { agent: parts[1], kind: 'chat' };
  switch (parts[2]) {
    case 'w': return { ...r, kind: 'worker', worker: parts[3] };
    case 'board': return { ...r, kind: 'board', node: parts[3] };
    case 'files': return { ...r, kind: 'files', path: parts.slice(3).join('/') };
    case 'memory': return { ...r, kind: 'memory', path: parts.slice(3).join('/') };
    case 'steps': return { ...r, kind: 'steps', run: parts[3], tick: Number(parts[4]) || 0 };
  }
  return r;
}

async function route() {
  const r = parseRoute();
  page.route = r;
  page.view?.unmount?.();
  page.view = null;
  if (r.kind === 'new') {
    page.view = newAgentView();
    drawSidebar();
    return;
  }
  if (r.kind === 'graphs') {
    page.view = graphsView(clear(main), r, { toast });
    drawSidebar();
    return;
  }
  if (!page.agents.length) await refreshAgents();
  if (page.route !== r) return; // the address changed meanwhile: its own route draws the page
  if (r.kind === 'home') {
    const first = page.agents[0];
    if (first) {
      location.replace(`#/a/${enc(first.id)}`);
      return;
    }
    clear(main).append(h('div', { class: 'welcome' }, h('h2', {}, 'No agents yet'), h('p', {}, h('a', { href: '#/new' }, 'Start one'), ' with a goal.')));
    return;
  }
  const a = page.agents.find((x) => x.id === r.agent);
  if (!a) {
    clear(main).append(h('p', { class: 'error' }, `No agent ${r.agent}.`));
    return;
  }
  if (page.agent?.id !== a.id) {
    page.agent?.stop();
    page.agent = new Agent(a.id);
    page.agent.start();
  }
  switch (r.kind) {
    case 'worker': page.view = timelineView(a, r.worker); break;
    case 'board': page.view = boardView(a, r.node); break;
    case 'files': page.view = treeView(a, 'workspace', r.path); break;
    case 'memory': page.view = treeView(a, 'memory', r.path); break;
    case 'steps':
      clear(main).append(agentHeader(a, 'Steps'));
      page.view = stepsView(main, a, r.run || a.run, r.tick, {
        toast,
        forked: (sum) => {
          refreshAgentsSoon();
          location.hash = `#/a/${enc(sum.id || a.id)}`;
        },
      });
      break;
    default: page.view = timelineView(a, null);
  }
  drawSidebar();
  main.focus({ preventScroll: true });
  if (!window.agiraphFirstRender) {
    window.agiraphFirstRender = performance.now();
    document.body.dataset.ready = '1';
  }
}

async function start() {
  document.getElementById('new-agent').addEventListener('click', () => { location.hash = '#/new'; });
  window.addEventListener('hashchange', route);
  try {
    page.models = (await api('/models')).models || [''];
  } catch (err) {
    if (err instanceof Unauthorized) {
      askToken();
      return;
    }
  }
  servesGraphs().then((yes) => { document.getElementById('graphs').hidden = !yes; });
  await refreshAgents();
  await route();
  setInterval(async () => {
    await refreshAgents();
    const a = page.agents.find((x) => x.id === page.route?.agent);
    if (a) page.view?.summary?.(a);
  }, 3000);
}

start();
