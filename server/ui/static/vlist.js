// A virtualized list for long, growing logs: only the rows in view (plus a few either side) are in
// the DOM, with spacers above and below standing in for the rest. Rows may be of any height: each
// is measured once rendered and its height kept; rows not yet seen count as an estimate. Row
// offsets live in a Fenwick tree (prefix sums), so finding the row at a scroll position, growing the
// list and correcting one row's height all take O(log n).
//
// The list never parses HTML: rows are the elements renderItem returns.

// Fenwick is a binary indexed tree over row heights: point updates, prefix sums and "which row
// holds offset y" in O(log n); it grows by doubling, so appends are amortized O(log n).
class Fenwick {
  constructor() {
    this.n = 0; // rows held
    this.size = new Float64Array(0); // height of each row
    this.tree = new Float64Array(1); // 1-based tree of partial sums
  }

  // reset empties the tree.
  reset() {
    this.n = 0;
    this.size = new Float64Array(0);
    this.tree = new Float64Array(1);
  }

  // push adds a row of height h at the end.
  push(h) {
    if (this.n >= this.size.length) this.grow(Math.max(64, this.size.length * 2));
    this.size[this.n] = h;
    this.n++;
    // A new last entry covers the range (n - lowbit(n), n]: sum it from the entries below.
    let sum = h;
    const i = this.n;
    for (let j = i - 1, stop = i - (i & -i); j > stop; j -= j & -j) sum += this.tree[j];
    this.tree[i] = sum;
  }

  // grow reallocates for cap rows and rebuilds the tree in O(n).
  grow(cap) {
    const size = new Float64Array(cap);
    size.set(this.size.subarray(0, this.n));
    const tree = new Float64Array(cap + 1);
    for (let i = 1; i <= this.n; i++) {
      tree[i] += size[i - 1];
      const p = i + (i & -i);
      if (p <= this.n) tree[p] += tree[i];
    }
    this.size = size;
    this.tree = tree;
  }

  // set changes the height of row i to h.
  set(i, h) {
    const d = h - this.size[i];
    if (d === 0) return;
    this.size[i] = h;
    for (let j = i + 1; j <= this.n; j += j & -j) this.tree[j] += d;
  }

  // sum is the total height of rows [0, k): the offset of row k.
  sum(k) {
    let s = 0;
    for (let j = Math.min(k, this.n); j > 0; j -= j & -j) s += this.tree[j];
    return s;
  }

  // total is the height of all rows.
  total() {
    return this.sum(this.n);
  }

  // find is the index of the row holding offset y (rows [0, i) end at or before y); n - 1 for y past
  // the end, 0 for y before the start or an empty tree.
  find(y) {
    if (this.n === 0 || y <= 0) return 0;
    let pos = 0;
    let rem = y;
    for (let step = 1 << (31 - Math.clz32(this.n)); step > 0; step >>= 1) {
      const next = pos + step;
      if (next <= this.n && this.tree[next] <= rem) {
        pos = next;
        rem -= this.tree[next];
      }
    }
    return Math.min(pos, this.n - 1);
  }
}

// VirtualList shows items in container (which it owns: it sets overflow-y: auto, role="log"
// unless the element has a role, and tabindex="0" so PageUp/PageDown/Home/End scroll it), rendering
// only the rows in view plus `overscan` rows either side. renderItem(item, index) returns a DOM
// element; the list wraps it in a row <div class="vlist-row" data-index="i">, measures its height
// once rendered and caches it per index, counting `estimate` pixels for rows not yet measured.
// Changes are drawn once per animation frame. With stickToBottom, a list scrolled to its end stays
// at its end as items are appended or grow; once the person scrolls up, what they look at stays put.
// `items` is the live array of items (read it, change it only through the methods).
export class VirtualList {
  constructor(container, renderItem, { estimate = 48, overscan = 8, stickToBottom = true } = {}) {
    this.container = container;
    this.renderItem = renderItem;
    this.estimate = Math.max(1, Number(estimate) || 48);
    this.overscan = Math.max(0, Math.floor(Number(overscan) || 0));
    this.stickToBottom = !!stickToBottom;
    this.items = [];

    this.heights = new Fenwick(); // row heights, for items [0, heights.n); later items are not counted yet
    this.rows = new Map(); // index → row element, for rows in the DOM
    this.first = 0; // rendered range [first, last]; empty when last < first
    this.last = -1;
    this.dirty = new Set(); // indices whose item changed since they were rendered
    this.atBottom = true; // whether the view is at the end (updated on scroll)
    this.pin = false; // scroll to the end at the next render (scrollToEnd)
    this.padTop = null; // the container's top padding, where the rows start; read when first needed
    this.frame = 0;
    this.destroyed = false;

    // Spacers standing in for the rows above and below the rendered ones.
    this.top = spacer();
    this.bottom = spacer();
    container.replaceChildren(this.top, this.bottom);

    const s = container.style;
    s.overflowY = 'auto';
    s.overflowAnchor = 'none'; // the list keeps the view steady itself; the browser's anchoring would fight it
    if (!container.hasAttribute('role')) container.setAttribute('role', 'log');
    if (!container.hasAttribute('tabindex')) container.setAttribute('tabindex', '0');

    this.onScroll = () => {
      this.atBottom = this.isAtBottom();
      this.schedule();
    };
    this.onKey = (e) => this.key(e);
    container.addEventListener('scroll', this.onScroll, { passive: true });
    container.addEventListener('keydown', this.onKey);

    // The container's size: a new width changes row heights (rows in view are measured at every
    // render), a new height the rows in view.
    this.resizer = new ResizeObserver(() => {
      this.padTop = null;
      this.schedule();
    });
    this.resizer.observe(container);
    // Rows that change height on their own (a <details> opened, an image loaded) are measured again.
    this.rowResizer = new ResizeObserver(() => this.schedule());
  }

  // setItems replaces all items; cached heights are dropped. A list at its end stays at its end.
  setItems(items) {
    this.items = Array.from(items ?? []);
    this.heights.reset();
    this.dirty.clear();
    for (const row of this.rows.values()) {
      this.rowResizer.unobserve(row);
      row.remove();
    }
    this.rows.clear();
    this.first = 0;
    this.last = -1;
    this.schedule();
  }

  // append adds items at the end; they are drawn with the next frame, however many come before it.
  append(...items) {
    for (const item of items) this.items.push(item);
    this.schedule();
  }

  // update replaces the item at index and draws it again (with the next frame) if it is in view.
  // Indices outside the list are ignored.
  update(index, item) {
    if (!Number.isInteger(index) || index < 0 || index >= this.items.length) return;
    this.items[index] = item;
    if (this.rows.has(index)) {
      this.dirty.add(index);
      this.schedule();
    }
  }

  // length is the number of items.
  get length() {
    return this.items.length;
  }

  // scrollToEnd scrolls to the last item and, with stickToBottom, keeps the list there as it grows.
  scrollToEnd() {
    this.atBottom = true;
    this.pin = true;
    const c = this.container;
    c.scrollTop = c.scrollHeight;
    this.schedule();
  }

  // destroy stops the list: listeners and observers are removed and the container emptied.
  destroy() {
    this.destroyed = true;
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.container.removeEventListener('scroll', this.onScroll);
    this.container.removeEventListener('keydown', this.onKey);
    this.resizer.disconnect();
    this.rowResizer.disconnect();
    this.rows.clear();
    this.container.replaceChildren();
  }

  // schedule draws the list with the next animation frame (once, however often it is called).
  schedule() {
    if (this.frame || this.destroyed) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  // isAtBottom tells whether the view shows the end of the list (within a few pixels).
  isAtBottom() {
    const c = this.container;
    return c.scrollHeight - c.scrollTop - c.clientHeight <= 4;
  }

  // key scrolls by page and to either end when the container itself has focus (not a control in a row).
  key(e) {
    if (e.target !== this.container || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const c = this.container;
    const page = Math.max(40, c.clientHeight * 0.9);
    switch (e.key) {
      case 'PageUp': c.scrollTop -= page; break;
      case 'PageDown': c.scrollTop += page; break;
      case 'Home': this.atBottom = false; c.scrollTop = 0; break;
      case 'End': this.scrollToEnd(); break;
      default: return;
    }
    e.preventDefault();
  }

  // render brings the DOM in line with the items and the scroll position: it counts new items,
  // renders the rows in view, measures them and sizes the spacers, repeating (at most a few times)
  // while measuring changes which rows are in view. The view stays at the end if it was there;
  // otherwise the row at the top of the view stays where it is on screen.
  render() {
    if (this.destroyed) return;
    const c = this.container;
    const h = this.heights;
    if (h.n > this.items.length) h.reset(); // cannot happen through the methods; be safe
    for (let i = h.n; i < this.items.length; i++) h.push(this.estimate);
    if (!c.isConnected || (c.clientHeight === 0 && c.clientWidth === 0)) return; // hidden: the resize observer calls back
    if (this.padTop === null) this.padTop = parseFloat(getComputedStyle(c).paddingTop) || 0;

    const stick = this.pin || (this.stickToBottom && this.atBottom);
    this.pin = false;
    // The row at the top of the view and how far into it the view starts.
    let anchor = -1;
    let anchorOffset = 0;
    if (!stick && h.n) {
      const y = c.scrollTop - this.padTop; // negative while the top padding is in view
      anchor = h.find(y);
      anchorOffset = y - h.sum(anchor);
    }

    for (let pass = 0; pass < 4; pass++) {
      const view = c.clientHeight;
      const y = stick ? Math.max(0, h.total() - view) : Math.max(0, c.scrollTop - this.padTop);
      let first = 0;
      let last = -1;
      if (h.n) {
        first = Math.max(0, h.find(y) - this.overscan);
        last = Math.min(h.n - 1, h.find(y + view) + this.overscan);
      }
      this.reconcile(first, last);
      const changed = this.measure();
      this.top.style.height = `${h.sum(this.first)}px`;
      this.bottom.style.height = `${Math.max(0, h.total() - h.sum(this.last + 1))}px`;
      if (stick) {
        c.scrollTop = c.scrollHeight;
      } else if (anchor >= 0) {
        const want = h.sum(anchor) + anchorOffset + this.padTop;
        if (Math.abs(c.scrollTop - want) >= 1) c.scrollTop = want;
      }
      if (!changed) break;
    }
    if (stick) this.atBottom = true;
  }

  // reconcile makes rows [first, last] (and only those) be in the DOM, reusing rows already there
  // (so focus and state inside them survive) and drawing again those whose item changed.
  reconcile(first, last) {
    const c = this.container;
    for (const [i, row] of this.rows) {
      if (i < first || i > last) {
        this.rowResizer.unobserve(row);
        row.remove();
        this.rows.delete(i);
      }
    }
    for (const i of this.dirty) {
      const row = this.rows.get(i);
      if (row) row.replaceChildren(this.draw(i));
    }
    this.dirty.clear();

    // The rows kept form one run [keepFirst, keepLast]; new ones go before and after it.
    const keepFirst = Math.max(first, this.first);
    const keepLast = Math.min(last, this.last);
    const kept = keepFirst <= keepLast;
    const before = document.createDocumentFragment();
    const after = document.createDocumentFragment();
    for (let i = first; i <= last; i++) {
      if (kept && i >= keepFirst && i <= keepLast) continue;
      const row = document.createElement('div');
      row.className = 'vlist-row';
      row.setAttribute('data-index', String(i));
      row.style.display = 'flow-root'; // keeps the item's margins inside the row, so its height counts them
      row.append(this.draw(i));
      this.rows.set(i, row);
      this.rowResizer.observe(row);
      (kept && i < keepFirst ? before : after).append(row);
    }
    if (before.firstChild) c.insertBefore(before, this.rows.get(keepFirst));
    if (after.firstChild) c.insertBefore(after, this.bottom);
    this.first = first;
    this.last = last;
  }

  // draw renders item i, falling back to a note when renderItem fails, so one bad item cannot
  // break the list.
  draw(i) {
    try {
      const e = this.renderItem(this.items[i], i);
      if (e instanceof Node) return e;
      const span = document.createElement('span');
      span.textContent = e === undefined || e === null ? '' : String(e);
      return span;
    } catch (err) {
      const span = document.createElement('span');
      span.className = 'vlist-error';
      span.textContent = `Could not show this item: ${err?.message || err}`;
      return span;
    }
  }

  // measure reads the height of every rendered row (one layout for all) and records changes;
  // it reports whether any height changed. It reads the exact layout height
  // (getBoundingClientRect) rather than offsetHeight, which rounds to whole pixels: rounding
  // errors would add up across rows and make the spacers and the kept view drift.
  measure() {
    let changed = false;
    const heights = [];
    for (let i = this.first; i <= this.last; i++) heights.push(this.rows.get(i).getBoundingClientRect().height);
    for (let k = 0; k < heights.length; k++) {
      const i = this.first + k;
      if (heights[k] !== this.heights.size[i]) {
        this.heights.set(i, heights[k]);
        changed = true;
      }
    }
    return changed;
  }
}

// spacer is an empty block standing in for rows not in the DOM.
function spacer() {
  const e = document.createElement('div');
  e.className = 'vlist-spacer';
  e.setAttribute('aria-hidden', 'true');
  e.style.height = '0px';
  return e;
}
