// Markdown to DOM, for text written by models (untrusted). The renderer builds elements and text
// nodes itself and never parses HTML: markup in the input, such as <img src=x onerror=...>, comes
// out as the literal text it is. Links keep only http(s) and mailto addresses and open in a new
// tab without a referrer; images are shown as links, never loaded.
//
// It covers what reports and notes use: headings, paragraphs, emphasis, inline code, fenced and
// indented code blocks, block quotes, ordered and unordered lists (nested by indentation),
// horizontal rules, links, and tables with a header row.

const safeURL = /^(https?:|mailto:)/i;

// renderMarkdown returns a DocumentFragment holding the rendering of text.
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  blocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n'), frag);
  return frag;
}

// renderText returns a <pre> holding text as it is (for files that are not markdown).
export function renderText(text) {
  const pre = el('pre', 'plain');
  pre.textContent = String(text ?? '');
  return pre;
}

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

// blocks renders lines into parent.
function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) { i++; continue; }
    let m;
    if ((m = /^ {0,3}(```|~~~)\s*([\w+-]*)\s*$/.exec(line))) { // fenced code
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++;
      const pre = el('pre');
      const code = el('code');
      if (m[2]) code.dataset.lang = m[2];
      code.textContent = body.join('\n');
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if ((m = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) { // heading
      const h = el('h' + m[1].length);
      inline(m[2], h);
      parent.append(h);
      i++;
      continue;
    }
    if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { // rule
      parent.append(el('hr'));
      i++;
      continue;
    }
    if (/^ {0,3}>/.test(line)) { // quote
      const body = [];
      while (i < lines.length && /^ {0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^ {0,3}> ?/, ''));
      const q = el('blockquote');
      blocks(body, q);
      parent.append(q);
      continue;
    }
    if (listItem(line)) {
      i = list(lines, i, parent);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) { // indented code
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || /^\s*$/.test(lines[i]))) body.push(lines[i++].replace(/^( {4}|\t)/, ''));
      while (body.length && body[body.length - 1].trim() === '') body.pop();
      const pre = el('pre');
      const code = el('code');
      code.textContent = body.join('\n');
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      i = table(lines, i, parent);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !startsBlock(lines[i])) para.push(lines[i++].trim());
    if (!para.length) para.push(lines[i++].trim()); // a line no rule took: text
    const p = el('p');
    inline(para.join('\n'), p);
    parent.append(p);
  }
}

function startsBlock(line) {
  return /^ {0,3}(```|~~~|#{1,6}\s|>)/.test(line) || listItem(line) || /^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line);
}

function listItem(line) {
  return /^(\s*)([-*+]|\d{1,9}[.)])\s+/.exec(line);
}

// list renders the list that starts at lines[i] and returns the index after it.
function list(lines, i, parent) {
  const first = listItem(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const l = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) l.start = parseInt(first[2], 10);
  while (i < lines.length) {
    const m = listItem(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const li = el('li');
    const body = [lines[i].slice(m[0].length)];
    i++;
    // The item's own continuation lines and nested lists (indented deeper).
    while (i < lines.length && !/^\s*$/.test(lines[i])) {
      const n = listItem(lines[i]);
      if (n && n[1].length <= indent) break;
      if (!n && startsBlock(lines[i])) break;
      body.push(lines[i]);
      i++;
    }
    const nested = body.findIndex((b, k) => k > 0 && listItem(b));
    const text = nested < 0 ? body : body.slice(0, nested);
    inline(text.map((t) => t.trim()).join('\n'), li);
    if (nested >= 0) list(body.slice(nested), 0, li);
    l.append(li);
    while (i < lines.length && /^\s*$/.test(lines[i]) && i + 1 < lines.length && listItem(lines[i + 1]) && listItem(lines[i + 1])[1].length === indent) i++;
  }
  parent.append(l);
  return i;
}

function cells(line) {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

// table renders the table that starts at lines[i] and returns the index after it.
function table(lines, i, parent) {
  const t = el('table');
  const head = el('thead');
  const tr = el('tr');
  for (const c of cells(lines[i])) {
    const th = el('th');
    inline(c, th);
    tr.append(th);
  }
  head.append(tr);
  t.append(head);
  const body = el('tbody');
  i += 2;
  while (i < lines.length && lines[i].includes('|') && !/^\s*$/.test(lines[i])) {
    const row = el('tr');
    for (const c of cells(lines[i])) {
      const td = el('td');
      inline(c, td);
      row.append(td);
    }
    body.append(row);
    i++;
  }
  t.append(body);
  parent.append(t);
  return i;
}

// The inline rules, in the order they are tried at each position.
const inlineRules = [
  [/^`([^`]+)`/, (m, out) => { const c = el('code'); c.textContent = m[1]; out.append(c); }],
  [/^!\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)/, (m, out) => link(m[1] || m[2], m[2], out, 'image')],
  [/^\[([^\]]+)\]\(([^)\s]*)(?:\s+"[^"]*")?\)/, (m, out) => link(m[1], m[2], out)],
  [/^<(https?:\/\/[^\s>]+)>/, (m, out) => link(m[1], m[1], out)],
  [/^(\*\*|__)(?=\S)([\s\S]*?\S)\1/, (m, out) => { const b = el('strong'); inline(m[2], b); out.append(b); }],
  [/^(\*|_)(?=\S)([\s\S]*?\S)\1(?![\w*])/, (m, out) => { const e = el('em'); inline(m[2], e); out.append(e); }],
  [/^~~(?=\S)([\s\S]*?\S)~~/, (m, out) => { const d = el('del'); inline(m[1], d); out.append(d); }],
  [/^ {2,}\n|^\\\n/, (m, out) => out.append(el('br'))],
];

// inline renders text with emphasis, code and links into out, as text nodes and elements.
function inline(text, out) {
  let buf = '';
  let i = 0;
  const flush = () => { if (buf) { out.append(document.createTextNode(buf)); buf = ''; } };
  while (i < text.length) {
    const rest = text.slice(i);
    let done = false;
    if ('`![<*_~ \\'.includes(text[i])) {
      for (const [re, fn] of inlineRules) {
        const m = re.exec(rest);
        if (m) {
          flush();
          fn(m, out);
          i += m[0].length;
          done = true;
          break;
        }
      }
    }
    if (!done) {
      buf += text[i] === '\\' && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!<>|~]/.test(text[i + 1]) ? text[++i] : text[i];
      i++;
    }
  }
  flush();
}

// link appends a link to url labelled label, or the label as text when url is not safe.
function link(label, url, out, kind) {
  if (!safeURL.test(url)) {
    out.append(document.createTextNode(label));
    return;
  }
  const a = el('a', kind);
  a.href = url;
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
  a.textContent = kind === 'image' ? `[image: ${label}]` : label;
  out.append(a);
}
