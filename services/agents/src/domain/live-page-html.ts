/**
 * The HTML of a deep search's live page (docs/agents.md, "Live session page"). Pure: the page is a function of the
 * session's id, prompt and status and of the response's CSP nonce. Everything the session says arrives later over
 * the page's server-sent stream and is put in the page as text (`textContent`, never markup), so a page title or a
 * snippet from the web cannot inject anything; links are kept only when they are http(s).
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

export interface LivePageInput {
  threadId: string;
  prompt: string;
  status: string;
  /** The response's CSP nonce (base64, fresh per response). */
  nonce: string;
}

/** The Content-Security-Policy of the page: its own nonce'd script and style, and its stream on the same origin. */
export const livePageCsp = (nonce: string): string =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

// The page's script: follows `<this path>/events<this query>` with EventSource (which resumes with Last-Event-ID by
// itself) and closes it after the final message, so the browser does not reconnect to an ended session.
const SCRIPT = `
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var visited = new Set();
  var rows = 0;
  var status = $('status');
  function counters() {
    $('pages').textContent = String(visited.size);
    $('rows').textContent = String(rows);
  }
  function line(kind, text) {
    var li = document.createElement('li');
    li.className = kind;
    li.textContent = text;
    var log = $('log');
    log.insertBefore(li, log.firstChild);
    while (log.childNodes.length > 300) log.removeChild(log.lastChild);
  }
  function safeUrl(u) {
    try { var p = new URL(String(u)); return p.protocol === 'http:' || p.protocol === 'https:' ? p.href : null; } catch (e) { return null; }
  }
  function seen(d) {
    var u = d && safeUrl(d.url);
    if (!u || visited.has(u)) return;
    visited.add(u);
    var li = document.createElement('li');
    var a = document.createElement('a');
    a.href = u; a.rel = 'noreferrer noopener'; a.target = '_blank';
    a.textContent = (d.title ? String(d.title) + ' \\u2014 ' : '') + u;
    li.appendChild(a);
    $('visited').appendChild(li);
  }
  var source = new EventSource(location.pathname.replace(/\\/$/, '') + '/events' + location.search);
  source.onopen = function () { if (status.dataset.final !== 'true') status.textContent = 'live'; };
  source.onerror = function () { if (status.dataset.final !== 'true') status.textContent = 'reconnecting'; };
  source.addEventListener('progress', function (e) {
    var m = JSON.parse(e.data);
    line('progress', '[' + m.stage + '] ' + m.message);
    if (m.data) seen(m.data);
    counters();
  });
  source.addEventListener('clarification', function (e) {
    var m = JSON.parse(e.data);
    $('question').textContent = m.question;
    $('clarification').hidden = false;
    line('clarification', 'question: ' + m.question);
  });
  source.addEventListener('row', function (e) {
    var m = JSON.parse(e.data);
    var r = m.row || {};
    var f = r.fields || {};
    var p = r.provenance || {};
    rows += 1;
    var tr = document.createElement('tr');
    tr.className = 'row';
    var name = document.createElement('td');
    name.textContent = String(f.name || r.entity_key || '');
    var type = document.createElement('td');
    type.textContent = String(r.entity_type || '');
    var source_ = document.createElement('td');
    var u = safeUrl(p.source_url);
    if (u) { var a = document.createElement('a'); a.href = u; a.rel = 'noreferrer noopener'; a.target = '_blank'; a.textContent = u; source_.appendChild(a); }
    var snippet = document.createElement('td');
    snippet.textContent = String(p.snippet || '');
    tr.appendChild(name); tr.appendChild(type); tr.appendChild(source_); tr.appendChild(snippet);
    $('results').appendChild(tr);
    $('clarification').hidden = true;
    counters();
  });
  function finish(text) {
    status.dataset.final = 'true';
    status.textContent = text;
    $('clarification').hidden = true;
    source.close();
  }
  source.addEventListener('done', function (e) {
    var m = JSON.parse(e.data);
    line('done', m.summary || m.status);
    finish(m.status);
  });
  source.addEventListener('error', function (e) {
    if (!e.data) return;
    var m = JSON.parse(e.data);
    line('error', m.message);
    if (m.cursor !== null) finish('error');
  });
})();
`;

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d232a; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
.prompt { color: #4a5561; margin: 0 0 1rem; }
.facts { display: flex; gap: 2rem; margin: 0 0 1rem; }
.facts b { font-size: 1.2rem; }
#clarification { border: 1px solid #c9a227; background: #fff8e1; padding: .6rem .8rem; margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; margin: 0 0 1rem; }
th, td { text-align: left; border-bottom: 1px solid #e3e7eb; padding: .3rem .4rem; vertical-align: top; }
td:last-child { color: #4a5561; font-size: .9em; }
ul { padding-left: 1.2rem; }
#log li.error { color: #b3261e; }
#log li.done { font-weight: 600; }
`;

export function livePageHtml(input: LivePageInput): string {
  const n = escapeHtml(input.nonce);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Lore deep search — live</title>
<style nonce="${n}">${STYLE}</style>
</head>
<body>
<h1>Deep search <small id="thread">${escapeHtml(input.threadId)}</small></h1>
<p class="prompt" id="prompt">${escapeHtml(input.prompt)}</p>
<div class="facts">
<div>Status: <b id="status">${escapeHtml(input.status)}</b></div>
<div>Pages visited: <b id="pages">0</b></div>
<div>Rows found: <b id="rows">0</b></div>
</div>
<div id="clarification" hidden><b>The search asks:</b> <span id="question"></span><br><small>Answer it from the client that started the search.</small></div>
<h2>Rows</h2>
<table><thead><tr><th>Name</th><th>Type</th><th>Source</th><th>Snippet</th></tr></thead><tbody id="results"></tbody></table>
<h2>Progress</h2>
<ul id="log"></ul>
<h2>Pages visited</h2>
<ul id="visited"></ul>
<script nonce="${n}">${SCRIPT}</script>
</body>
</html>
`;
}
