// The work board drawn as a graph: one column per stage, one card per work node, and arrows for
// dependencies (solid), references (dashed) and parent → child links (dotted).
//
// Everything a node carries (its task, summary, worker, status, id) is model output and so
// untrusted: it only ever reaches the page as text (textContent) or as the value of a harmless
// attribute (class, data-*, aria-*). Nothing here parses HTML, and the module touches no DOM
// until renderBoard is called.

const SVG = 'http://www.w3.org/2000/svg';

// Geometry of the layout, in SVG user units (pixels at scale 1).
const NODE_W = 200; // card width
const NODE_H = 64; // card height
const COL_GAP = 72; // horizontal room between columns, where the edges run
const ROW_GAP = 20; // vertical room between cards in a column
const PAD = 16; // margin around the drawing
const HEAD = 28; // room above the cards for the stage labels (and a lane for edges under them)

// Built-in colors per status, so the board reads right without any CSS; the classes
// `node status-<status>` let style sheets restyle it (CSS rules beat these presentation attributes).
const GREY = { fill: '#f1f1f3', stroke: '#9a9aa0' };
const PALETTE = {
  completed: { fill: '#e6f4ea', stroke: '#2e9b57' },
  running: { fill: '#e7effc', stroke: '#2f6fde' },
  assigned: { fill: '#e7effc', stroke: '#2f6fde' },
  waiting: { fill: '#fff4de', stroke: '#d98a00' },
  failed: { fill: '#fbe7e7', stroke: '#c83a3a' },
  pending: GREY,
  ready: GREY,
  cancelled: { fill: '#f7f7f8', stroke: '#b8b8bd' },
  skipped: { fill: '#f7f7f8', stroke: '#b8b8bd' },
};
const OTHER = { fill: '#ffffff', stroke: '#9a9aa0' }; // statuses not in the palette
const INK = '#1d1d1f';
const MUTED = '#6b6b70';
const ACCENT = '#2f6fde';

// How each kind of edge is drawn.
const EDGE_STYLE = {
  dep: { stroke: '#8a8a90', dash: null, label: 'depends on' },
  ref: { stroke: '#7b68c8', dash: '6 4', label: 'references' },
  parent: { stroke: '#a8a8ae', dash: '2 3', label: 'parent of' },
};

const collator = new Intl.Collator('en', { numeric: true });
let boardSeq = 0; // makes marker ids unique per drawing

// byId orders node ids the way people count them: n2 before n10.
function byId(a, b) {
  return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}

// stageOf is the column key of a node: its numeric stage, 0 when missing or not a number.
function stageOf(n) {
  const s = Number(n?.stage);
  return Number.isFinite(s) ? s : 0;
}

// layoutBoard places work nodes on a grid: one column per distinct stage (ascending; a missing
// stage counts as 0), cards within a column ordered by numeric id and stacked top to bottom.
// It is pure (no DOM) and runs in one pass over the nodes plus a sort per column. Returns
// {positions: Map(id → {x, y, w, h}), width, height} — the size of the whole drawing — and,
// for drawing stage labels, columns: [{stage, x, ids}] in column order. Nodes without an id are
// left out; a repeated id keeps its first node.
export function layoutBoard(nodes) {
  const stages = new Map(); // stage → ids
  const seen = new Set();
  for (const n of Array.isArray(nodes) ? nodes : []) {
    if (!n || n.id === undefined || n.id === null || n.id === '') continue;
    const id = String(n.id);
    if (seen.has(id)) continue;
    seen.add(id);
    const s = stageOf(n);
    let ids = stages.get(s);
    if (!ids) stages.set(s, (ids = []));
    ids.push(id);
  }

  const positions = new Map();
  const columns = [];
  let rows = 0;
  const order = [...stages.keys()].sort((a, b) => a - b);
  order.forEach((stage, col) => {
    const ids = stages.get(stage).sort(byId);
    const x = PAD + col * (NODE_W + COL_GAP);
    ids.forEach((id, row) => positions.set(id, { x, y: PAD + HEAD + row * (NODE_H + ROW_GAP), w: NODE_W, h: NODE_H }));
    columns.push({ stage, x, ids });
    rows = Math.max(rows, ids.length);
  });

  const cols = columns.length;
  const width = cols ? 2 * PAD + cols * NODE_W + (cols - 1) * COL_GAP : 2 * PAD + NODE_W;
  const height = rows ? 2 * PAD + HEAD + rows * NODE_H + (rows - 1) * ROW_GAP : 2 * PAD + HEAD;
  return { positions, width, height, columns };
}

// edgesOf lists the edges between known nodes, each {from, to, kind} with kind "dep"
// (dependency → node), "ref" (referenced node → node) or "parent" (parent → child); edges to
// unknown ids, self-loops and repeats are left out.
function edgesOf(nodes, positions) {
  const edges = [];
  const seen = new Set();
  const add = (from, to, kind) => {
    if (from === undefined || from === null || to === undefined || to === null) return;
    from = String(from);
    to = String(to);
    if (from === to || !positions.has(from) || !positions.has(to)) return;
    const key = `${kind}\u0000${from}\u0000${to}`;
    if (seen.has(key)) return;
    seen.add(key);
    edges.push({ from, to, kind });
  };
  for (const n of nodes) {
    if (!n || n.id === undefined || n.id === null) continue;
    const id = String(n.id);
    if (Array.isArray(n.deps)) for (const d of n.deps) add(d, id, 'dep');
    if (n.refs && typeof n.refs === 'object') {
      // A reference names a node, optionally followed by "/" and a path inside it.
      for (const v of Object.values(n.refs)) if (v !== null && v !== undefined) add(String(v).split('/')[0], id, 'ref');
    }
    if (n.parent !== undefined && n.parent !== null && n.parent !== '') add(n.parent, id, 'parent');
    if (Array.isArray(n.children)) for (const c of n.children) add(id, c, 'parent');
  }
  return edges;
}

// laneOf is the height of the horizontal gap above grid row r (r = rows: below the last row).
// Rows line up across columns, so these gaps run the whole width of the board.
function laneOf(r) {
  return PAD + HEAD + r * (NODE_H + ROW_GAP) - ROW_GAP / 2;
}

// rowOf is the grid row of a card.
function rowOf(p) {
  return Math.round((p.y - PAD - HEAD) / (NODE_H + ROW_GAP));
}

// edgePath is the SVG path of an edge from card a to card b, ending (where the arrowhead goes) on
// b's side facing the way it came:
//   - to the next column: a curve from a's right side to b's left side;
//   - further right, or to an earlier column: out of a into the column gap beside it, along the
//     row gap next to b (so it passes between cards rather than through them), and into b;
//   - within one column: a loop out of a's right side into b's right side.
function edgePath(a, b) {
  const ay = a.y + a.h / 2;
  const by = b.y + b.h / 2;
  const half = COL_GAP / 2;
  if (a.x + a.w < b.x && b.x - (a.x + a.w) <= COL_GAP) {
    const sx = a.x + a.w;
    const dx = (b.x - sx) / 2;
    return `M${sx},${ay} C${sx + dx},${ay} ${b.x - dx},${by} ${b.x},${by}`;
  }
  if (a.x === b.x) {
    const sx = a.x + a.w;
    const bend = 28 + Math.min(40, Math.abs(by - ay) / 8);
    return `M${sx},${ay} C${sx + bend},${ay} ${sx + bend},${by} ${sx},${by}`;
  }
  // The row gap just above or just below b, whichever is nearer a.
  const rb = rowOf(b);
  const above = laneOf(rb);
  const below = laneOf(rb + 1);
  const lane = Math.abs(ay - above) <= Math.abs(ay - below) ? above : below;
  if (a.x < b.x) {
    const sx = a.x + a.w;
    const tx = b.x;
    return `M${sx},${ay} C${sx + half},${ay} ${sx},${lane} ${sx + half},${lane} L${tx - half},${lane} C${tx},${lane} ${tx - half},${by} ${tx},${by}`;
  }
  const sx = a.x;
  const tx = b.x + b.w;
  return `M${sx},${ay} C${sx - half},${ay} ${sx},${lane} ${sx - half},${lane} L${tx + half},${lane} C${tx},${lane} ${tx + half},${by} ${tx},${by}`;
}

// el creates an SVG element with attributes (values are set as strings; callers only pass
// geometry, fixed styling and class/data-/aria- attributes) and text content.
function el(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  if (attrs) for (const k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = text;
  return e;
}

// clip shortens text to max characters (not splitting surrogate pairs), on one line.
function clip(text, max) {
  const s = String(text ?? '').replace(/\s+/g, ' ').trim();
  const chars = Array.from(s);
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('')}…`;
}

// classToken makes a status usable as part of a class name.
function classToken(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, '-') || 'unknown';
}

// pill is the path of a rounded-end rectangle (a path rather than a rect, so style rules aimed at
// the card's rect leave it alone).
function pill(x, y, w, h) {
  const r = h / 2;
  return `M${x + r},${y} h${w - 2 * r} a${r},${r} 0 0 1 0,${h} h${-(w - 2 * r)} a${r},${r} 0 0 1 0,${-h} z`;
}

// roundRect is the path of a rectangle with rounded corners.
function roundRect(x, y, w, h, r) {
  return `M${x + r},${y} h${w - 2 * r} a${r},${r} 0 0 1 ${r},${r} v${h - 2 * r} a${r},${r} 0 0 1 ${-r},${r} h${-(w - 2 * r)} a${r},${r} 0 0 1 ${-r},${-r} v${-(h - 2 * r)} a${r},${r} 0 0 1 ${r},${-r} z`;
}

// nodeCard builds the group for one node: card, id, task line, worker, status pill.
function nodeCard(n, id, p, isSelected) {
  const status = n.status === undefined || n.status === null || n.status === '' ? 'unknown' : String(n.status);
  const colors = Object.hasOwn(PALETTE, status) ? PALETTE[status] : OTHER;
  const task = String(n.task ?? '');
  const g = el('g', {
    class: `node status-${classToken(status)}${isSelected ? ' selected' : ''}`,
    transform: `translate(${p.x},${p.y})`,
    tabindex: 0,
    role: 'button',
    'aria-label': `Node ${id}: ${status}, ${clip(task, 300)}`,
    'aria-current': isSelected ? 'true' : null,
    'data-node': id,
  });
  g.style.outline = 'none'; // the board's focus ring stands in for the outline
  // Hover text: the whole task, and the summary once there is one.
  g.append(el('title', null, n.summary ? `${task}\n\n${String(n.summary)}` : task));
  g.append(el('rect', {
    class: 'card', width: p.w, height: p.h, rx: 8, ry: 8, fill: colors.fill,
    stroke: isSelected ? ACCENT : colors.stroke, 'stroke-width': isSelected ? 3 : 1.5,
  }));
  const label = clip(status, 14);
  const pw = Math.round(Array.from(label).length * 6 + 14);
  g.append(el('path', { class: 'pill', d: pill(p.w - 8 - pw, 7, pw, 16), fill: colors.stroke }));
  g.append(el('text', { class: 'status', x: p.w - 8 - pw / 2, y: 18.5, 'text-anchor': 'middle', 'font-size': 10, fill: '#fff' }, label));
  g.append(el('text', { class: 'id', x: 10, y: 19, 'font-size': 12, 'font-weight': 600, fill: INK }, clip(id, Math.max(4, Math.floor((p.w - pw - 26) / 7)))));
  g.append(el('text', { class: 'task', x: 10, y: 38, 'font-size': 12, fill: INK }, clip(task, 28) || '(no task)'));
  if (n.worker !== undefined && n.worker !== null && n.worker !== '') {
    g.append(el('text', { class: 'worker', x: 10, y: 55, 'font-size': 11, fill: MUTED }, clip(`worker ${n.worker}`, 32)));
  }
  return g;
}

// nearest is the id of the node closest to `from` in the direction of an arrow key (dx, dy),
// preferring nodes in line with it; null when there is none that way.
function nearest(positions, from, dx, dy) {
  const a = positions.get(from);
  if (!a) return null;
  const ax = a.x + a.w / 2;
  const ay = a.y + a.h / 2;
  let best = null;
  let bestScore = Infinity;
  for (const [id, b] of positions) {
    if (id === from) continue;
    const ox = b.x + b.w / 2 - ax;
    const oy = b.y + b.h / 2 - ay;
    const along = ox * dx + oy * dy; // distance in the key's direction
    if (along <= 1) continue;
    const across = Math.abs(ox * dy) + Math.abs(oy * dx); // distance off the line
    const score = along + 2 * across;
    if (score < bestScore || (score === bestScore && byId(id, best) < 0)) {
      best = id;
      bestScore = score;
    }
  }
  return best;
}

const ARROWS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

// renderBoard replaces the content of container with the board drawn as an SVG graph. board is the
// JSON of GET /agents/{id}/board ({nodes, workers}). Each node is a focusable button (Tab to reach,
// arrow keys to move to the nearest node that way, Enter/Space or click to open) that calls
// onOpenNode(id); the node whose id is `selected` is marked (class "selected", aria-current).
// Keyboard focus on a node and the container's scroll position survive a redraw. Returns the SVG.
export function renderBoard(container, board, { onOpenNode, selected } = {}) {
  const nodes = Array.isArray(board?.nodes) ? board.nodes : [];
  const { positions, width, height, columns } = layoutBoard(nodes);
  const edges = edgesOf(nodes, positions);
  const sel = selected === undefined || selected === null ? null : String(selected);
  const seq = ++boardSeq;

  // What to keep across the redraw.
  const active = document.activeElement;
  const focused = active && container.contains(active) ? active.closest?.('g.node')?.getAttribute('data-node') : null;
  const { scrollLeft, scrollTop } = container;

  const svg = el('svg', {
    class: 'board-graph',
    role: 'group', // not "img": an img's children are hidden from assistive tech, and these are buttons
    'aria-label': 'Work board',
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    preserveAspectRatio: 'xMinYMin meet',
    'font-family': 'system-ui, -apple-system, "Segoe UI", sans-serif',
  });
  // Fill the container's width when narrower than it (at scale 1, drawn from the left); when
  // wider, keep the full width so the container scrolls sideways.
  svg.style.display = 'block';
  svg.style.minWidth = '100%';
  svg.style.maxWidth = 'none';

  // Arrowheads, one per edge kind so each takes its line's color.
  const defs = el('defs');
  for (const [kind, st] of Object.entries(EDGE_STYLE)) {
    const m = el('marker', {
      id: `board${seq}-arrow-${kind}`, viewBox: '0 0 10 10', refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto',
    });
    m.append(el('path', { d: 'M0,0 L10,5 L0,10 z', fill: st.stroke }));
    defs.append(m);
  }
  svg.append(defs);

  if (!positions.size) {
    svg.append(el('text', { class: 'empty', x: PAD, y: PAD + 16, 'font-size': 13, fill: MUTED }, 'No work nodes yet.'));
  }

  // Stage labels above the columns.
  const heads = el('g', { class: 'stages', 'aria-hidden': 'true' });
  for (const c of columns) {
    heads.append(el('text', { class: 'stage', x: c.x + 2, y: PAD + 10, 'font-size': 11, 'font-weight': 600, fill: MUTED }, `Stage ${c.stage}`));
  }
  svg.append(heads);

  // Edges under the cards.
  const edgeLayer = el('g', { class: 'edges', 'aria-hidden': 'true', fill: 'none' });
  const edgeFrag = document.createDocumentFragment();
  for (const e of edges) {
    const st = EDGE_STYLE[e.kind];
    const touches = sel !== null && (e.from === sel || e.to === sel);
    edgeFrag.append(el('path', {
      class: `edge edge-${e.kind}${touches ? ' edge-selected' : ''}`,
      d: edgePath(positions.get(e.from), positions.get(e.to)),
      stroke: touches ? ACCENT : st.stroke,
      'stroke-width': touches ? 2 : 1.4,
      'stroke-dasharray': st.dash,
      'marker-end': `url(#board${seq}-arrow-${e.kind})`,
      'data-from': e.from,
      'data-to': e.to,
    }));
  }
  edgeLayer.append(edgeFrag);
  svg.append(edgeLayer);

  // Cards.
  const nodeLayer = el('g', { class: 'nodes' });
  const nodeFrag = document.createDocumentFragment();
  const groups = new Map(); // id → group
  for (const n of nodes) {
    if (!n || n.id === undefined || n.id === null) continue;
    const id = String(n.id);
    const p = positions.get(id);
    if (!p || groups.has(id)) continue;
    const g = nodeCard(n, id, p, id === sel);
    groups.set(id, g);
    nodeFrag.append(g);
  }
  nodeLayer.append(nodeFrag);
  svg.append(nodeLayer);

  // One set of listeners for all cards.
  const nodeOf = (target) => target?.closest?.('g.node');
  const open = (g) => {
    if (g && typeof onOpenNode === 'function') onOpenNode(g.getAttribute('data-node'));
  };
  // One focus ring, moved into the card that has keyboard focus.
  const focusRing = el('path', {
    class: 'focus-ring', d: roundRect(-4, -4, NODE_W + 8, NODE_H + 8, 11), fill: 'none', stroke: ACCENT, 'stroke-width': 2,
    visibility: 'hidden', 'pointer-events': 'none',
  });
  const ring = (g, on) => {
    if (on && g) g.append(focusRing);
    focusRing.setAttribute('visibility', on && g ? 'visible' : 'hidden');
  };
  svg.addEventListener('click', (e) => open(nodeOf(e.target)));
  svg.addEventListener('keydown', (e) => {
    const g = nodeOf(e.target);
    if (!g || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      open(g);
      return;
    }
    const dir = ARROWS[e.key];
    if (!dir) return;
    e.preventDefault();
    const next = groups.get(nearest(positions, g.getAttribute('data-node'), dir[0], dir[1]));
    if (next) {
      next.focus();
      next.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
    }
  });
  svg.addEventListener('focusin', (e) => {
    const g = nodeOf(e.target);
    ring(g, g?.matches(':focus-visible'));
  });
  svg.addEventListener('focusout', () => ring(null, false));

  container.replaceChildren(svg);
  if (getComputedStyle(container).overflowX === 'visible') container.style.overflowX = 'auto';
  container.scrollLeft = scrollLeft;
  container.scrollTop = scrollTop;
  if (focused && groups.has(focused)) groups.get(focused).focus({ preventScroll: true });
  return svg;
}
