// Small DOM helpers. Text is always set as text: nothing here parses HTML.

// h builds an element: attrs sets attributes (class, data-*, aria-*, role, ...), properties for
// keys starting with "." (".value"), and listeners for keys starting with "on" given functions;
// children are nodes or strings (as text), nested arrays flattened, null and false skipped.
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k.startsWith('.')) e[k.slice(1)] = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// clear removes every child of e and returns it.
export function clear(e) {
  e.replaceChildren();
  return e;
}

// debounce returns fn called at most once per wait milliseconds, with the last arguments.
export function debounce(fn, wait) {
  let timer = null;
  let args = [];
  return (...a) => {
    args = a;
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      fn(...args);
    }, wait);
  };
}

// time formats a timestamp as a local time of day.
export function time(t) {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString();
}

// usageText describes token counts and cost.
export function usageText(u) {
  if (!u || (!u.input_tokens && !u.output_tokens && !u.cost_usd)) return 'no tokens yet';
  const parts = [`${(u.input_tokens || 0).toLocaleString()} in`, `${(u.output_tokens || 0).toLocaleString()} out`];
  if (u.cost_usd) parts.push(`$${u.cost_usd.toFixed(4)}`);
  return parts.join(' · ');
}

// addUsage adds usage v into u.
export function addUsage(u, v) {
  if (!v) return u;
  u.input_tokens = (u.input_tokens || 0) + (v.input_tokens || 0);
  u.output_tokens = (u.output_tokens || 0) + (v.output_tokens || 0);
  u.cost_usd = (u.cost_usd || 0) + (v.cost_usd || 0);
  return u;
}
