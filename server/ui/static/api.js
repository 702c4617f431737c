// The server's HTTP API, as the page uses it: JSON requests that carry the login cookie, and an
// agent's event stream read from the server-sent events endpoint, reconnected after a drop from
// the last event it saw.

// Unauthorized is thrown when the server refuses the page's token (or it has none).
export class Unauthorized extends Error {}

// api sends a request and returns the decoded JSON answer; a refused request throws an Error
// with the server's message (Unauthorized for a missing or wrong token). It bypasses the
// browser's HTTP cache, which would otherwise hold a request behind a slow one for the same
// address (for up to 20 s in Chromium).
export async function api(path, { method = 'GET', body } = {}) {
  const init = { method, credentials: 'same-origin', cache: 'no-store', headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 401) throw new Unauthorized('the server needs its token');
  const text = await res.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { error: text };
  }
  if (!res.ok) throw new Error(data.error || `${res.status} ${res.statusText}`);
  return data;
}

// Stream follows an agent's events: every logged event once, in order, from the first (or after
// the given sequence number), then live; and the ephemeral text deltas while they come. After
// the connection drops (the server restarted, the network went away) it reconnects with the last
// sequence number it delivered, so no event is lost or delivered twice.
export class Stream {
  constructor(agent, { after = 0, onEvent, onDelta, onStatus } = {}) {
    this.agent = agent;
    this.last = after;
    this.onEvent = onEvent || (() => {});
    this.onDelta = onDelta || (() => {});
    this.onStatus = onStatus || (() => {});
    this.closed = false;
    this.retry = 500;
    this.connect();
  }

  async connect() {
    if (this.closed) return;
    this.abort = new AbortController();
    try {
      const res = await fetch(`/agents/${encodeURIComponent(this.agent)}/events/stream?after=${this.last}`, {
        credentials: 'same-origin',
        headers: { Accept: 'text/event-stream' },
        signal: this.abort.signal,
      });
      if (res.status === 401) {
        this.onStatus('unauthorized');
        this.closed = true;
        return;
      }
      if (!res.ok || !res.body) throw new Error(`${res.status}`);
      this.onStatus('live');
      this.retry = 500;
      await this.read(res.body);
    } catch (err) {
      if (this.closed) return;
    }
    if (this.closed) return;
    this.onStatus('reconnecting');
    setTimeout(() => this.connect(), this.retry);
    this.retry = Math.min(this.retry * 2, 5000);
  }

  // read parses the stream's events ("id:", "event:", "data:" lines, a blank line ends one).
  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let ev = { id: '', type: '', data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let at = 0; // where the next line starts: the buffer is cut once per chunk, not per line
      let nl;
      while ((nl = buf.indexOf('\n', at)) >= 0) {
        const line = buf.slice(at, nl).replace(/\r$/, '');
        at = nl + 1;
        if (line === '') {
          if (ev.data.length) this.dispatch(ev);
          ev = { id: '', type: '', data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') ev.id = val;
        else if (field === 'event') ev.type = val;
        else if (field === 'data') ev.data.push(val);
      }
      buf = buf.slice(at);
    }
  }

  dispatch(raw) {
    let data;
    try {
      data = JSON.parse(raw.data.join('\n'));
    } catch {
      return;
    }
    if (raw.type === 'text.delta' || data.type === 'text.delta') {
      this.onDelta(data);
      return;
    }
    const seq = Number(raw.id || data.seq || 0);
    if (!seq || seq <= this.last) return; // seen before the reconnection
    this.last = seq;
    this.onEvent(data);
  }

  close() {
    this.closed = true;
    if (this.abort) this.abort.abort();
  }
}
