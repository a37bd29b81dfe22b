// Sonde console. Plain JavaScript, no framework, no build step, nothing
// fetched from the network but the gateway's own API.
//
// Everything the server sends — objectives, statements, the model's prose,
// error messages, result values — is attacker-controlled text: it is only
// ever placed with textContent or as an attribute value, never as markup.
'use strict';

(() => {
  const TOKEN_KEY = 'sonde.token';

  // Each engine's label and what holds a read to read-only below the guard
  // (docs/security.md, "Per engine"): the engine specs (pkg/engine) as
  // words.js, written by the gateway, carries them; the console keeps no copy.
  const ENGINES = (globalThis.SondeWords && globalThis.SondeWords.engines) || {};

  // Labels for the capabilities a 422 refusal names; a name without a label
  // is not shown.
  const CAPABILITIES = {
    toolCalling: 'calling tools',
    structuredOutput: 'answering in the declared schema',
    streaming: 'streaming its answer',
  };

  const $ = (id) => document.getElementById(id);

  // The sentences for stop reasons and shortfall codes (words.js, written
  // by the gateway from the Go code that owns them). A code without one is
  // shown alone.
  const WORDS = globalThis.SondeWords || { stop: {}, unmet: {} };
  const stopWords = (r) => (r && WORDS.stop[r]) || '';
  const unmetWords = (c) => (c && WORDS.unmet[c]) || '';

  // Every string shown goes through visible() (text.js): bidi controls are
  // shown as marks, never obeyed. setText, el's text and string children,
  // and the attributes a reader sees are the only ways text is placed.
  const visible = globalThis.SondeText.visible;
  const SHOWN_ATTRS = new Set(['title', 'aria-label', 'alt', 'placeholder', 'label']);
  function setText(e, s) { e.textContent = visible(s === undefined || s === null ? '' : s); }
  function attr(e, k, v) { e.setAttribute(k, SHOWN_ATTRS.has(k) ? visible(v) : v); }

  // el builds an element. Children that are strings become text nodes;
  // attributes are set one by one. No string is ever parsed as markup.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') setText(e, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else attr(e, k, v === true ? '' : String(v));
    }
    append(e, children);
    return e;
  }
  function append(e, children) {
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(visible(c)) : c);
    }
    return e;
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') setText(e, v);
      else attr(e, k, String(v));
    }
    for (const c of children.flat()) if (c) e.appendChild(c);
    return e;
  }
  const clear = (e) => { while (e.firstChild) e.removeChild(e.firstChild); return e; };

  // ---- API ----------------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      const err = body && body.error;
      const msg = typeof err === 'string' ? err : (err && err.message) || `HTTP ${status}`;
      super(msg);
      this.status = status;
      this.body = body || {};
      this.code = err && typeof err === 'object' ? err.code || '' : '';
      this.fix = err && typeof err === 'object' ? err.fix || '' : '';
    }
  }

  function authHeaders() {
    const t = sessionStorage.getItem(TOKEN_KEY);
    return t ? { Authorization: 'Bearer ' + t } : {};
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json', ...authHeaders() };
    const init = { method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    const text = await res.text();
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (res.status === 401) {
      needSignIn('The token was not accepted.');
      throw new APIError(401, data);
    }
    if (!res.ok) throw new APIError(res.status, data);
    return data;
  }

  const runPath = (id) => '/api/agent/runs/' + encodeURIComponent(id);

  // ---- state --------------------------------------------------------------

  const state = {
    config: null,
    connections: [],
    historyNext: '',
    run: null, // the open run: {id, gen, lastSeq, started, finished, entries…}
    gen: 0,
  };

  function notice(text) {
    const n = $('notice');
    setText(n, text || '');
    n.hidden = !text;
  }

  function errorBlock(err) {
    const box = el('div', { class: 'error' });
    const code = err.code ? err.code + ': ' : '';
    append(box, [el('p', { text: code + err.message })]);
    if (err.fix) append(box, [el('p', { class: 'fix', text: 'Fix: ' + err.fix })]);
    return box;
  }

  // ---- sign in ------------------------------------------------------------

  function needSignIn(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    stopRun();
    $('app').hidden = true;
    $('signout').hidden = true;
    $('signin').hidden = false;
    setText($('signin-error'), message || '');
    $('token').focus();
  }

  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    await boot();
  });

  $('signout').addEventListener('click', () => needSignIn(''));

  // ---- boot ---------------------------------------------------------------

  async function boot() {
    let cfg;
    try {
      cfg = await api('GET', '/api/agent/config');
    } catch (err) {
      if (err.status !== 401) notice('The server cannot be reached: ' + err.message);
      return;
    }
    state.config = cfg;
    renderWorkflows();
    $('signin').hidden = true;
    $('app').hidden = false;
    $('signout').hidden = !sessionStorage.getItem(TOKEN_KEY);
    renderConfig();
    await loadConnections();
    loadHistory(true);
    openFromHash();
  }

  function renderConfig() {
    const cfg = state.config;
    if (cfg.enabled === true) {
      const who = [cfg.provider, cfg.model].filter(Boolean).join(' · ');
      setText($('model'), 'Model: ' + (who || 'configured') + (cfg.demo ? ' (demo: a replayed recording, not a live model)' : ''));
      notice('');
      $('start').disabled = false;
    } else {
      setText($('model'), 'No model available');
      notice('Runs cannot start on this server now: ' + (cfg.reason || 'agents are unavailable') + (cfg.detail ? ' (' + cfg.detail + ')' : '') + '.');
      $('start').disabled = true;
    }
  }

  async function loadConnections() {
    let data;
    try {
      data = await api('GET', '/api/connections');
    } catch (err) {
      if (err.status !== 401) notice('Connections cannot be listed: ' + err.message);
      return;
    }
    state.connections = (data && data.connections) || [];
    const sel = clear($('connection'));
    for (const c of state.connections) {
      const eng = (ENGINES[c.engine] || {}).label || c.engine;
      let label = c.id + ' (' + eng + (c.demo ? ', demo' : '') + ')';
      if (c.status === 'unavailable') label += ': unavailable';
      sel.appendChild(el('option', { value: c.id, text: label }));
    }
    if (!state.connections.length) sel.appendChild(el('option', { value: '', text: 'No connection is published' }));
    renderSafety();
  }

  // ---- start form ---------------------------------------------------------

  // The workflows and what each offers are the server's workflow table, as
  // GET /api/agent/config serves it; the console keeps no copy.
  const workflows = () => (state.config && state.config.workflows) || [];

  function renderWorkflows() {
    const sel = $('workflow');
    const chosen = sel.value;
    clear(sel);
    for (const w of workflows()) sel.appendChild(el('option', { value: w.id, text: w.label }));
    if (workflows().some((w) => w.id === chosen)) sel.value = chosen;
    syncForm();
  }

  function syncForm() {
    const w = workflows().find((x) => x.id === $('workflow').value);
    const offers = $('mode').value === 'agent' && w && w.autoExecute;
    $('auto-row').hidden = !offers;
    if (!offers) $('auto').checked = false;
    renderSafety();
  }
  $('workflow').addEventListener('change', syncForm);
  $('mode').addEventListener('change', syncForm);
  $('connection').addEventListener('change', renderSafety);
  $('auto').addEventListener('change', renderSafety);

  $('start-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    startRun($('mode').value);
  });

  async function startRun(mode) {
    const out = clear($('start-error'));
    const body = {
      objective: $('objective').value,
      connectionId: $('connection').value,
      mode,
      workflowType: $('workflow').value,
    };
    if (mode === 'agent' && $('auto').checked && !$('auto-row').hidden) body.autoExecute = true;
    const prev = state.continueFrom;
    if (prev && $('continue').checked && !$('continue-row').hidden) body.previousRunId = prev;
    $('start').disabled = true;
    try {
      const r = await api('POST', '/api/agent/runs', body);
      location.hash = 'run=' + encodeURIComponent(r.runId);
      loadHistory(true);
    } catch (err) {
      if (err.status === 422 && mode === 'agent' && (err.code === 'model_capability_missing' || Array.isArray(err.body.missing))) {
        out.appendChild(refusedModel(err));
      } else if (err.status !== 401) {
        out.appendChild(errorBlock(err));
      }
    } finally {
      $('start').disabled = state.config && state.config.enabled !== true;
    }
  }

  // refusedModel renders a 422 from the capability probe: what the model
  // could not do, the server's sentence, and planning mode, which needs no
  // tools.
  function refusedModel(err) {
    const b = err.body || {};
    const e = typeof b.error === 'object' && b.error ? b.error : {};
    const missing = (b.missing || e.missing || []).map((m) => CAPABILITIES[m]).filter(Boolean);
    const disproved = (b.disproved || e.disproved || []).map((m) => CAPABILITIES[m]).filter(Boolean);
    const box = el('div', { class: 'refused-model', role: 'group', 'aria-label': 'The model was refused' });
    append(box, [
      el('h3', { text: 'This model cannot run an agent investigation' }),
      missing.length ? el('p', { text: 'Not established: ' + missing.join(', ') + '.' }) : null,
      disproved.length ? el('p', { text: 'Watched failing: ' + disproved.join(', ') + '.' }) : null,
      el('p', { class: 'quote', text: err.message }),
      err.fix ? el('p', { class: 'fix', text: 'Fix: ' + err.fix }) : null,
      el('p', { text: 'Planning mode gives the model no tools: it drafts one statement, which Sonde checks and you run yourself.' }),
      el('button', {
        type: 'button', id: 'use-planning', text: 'Draft it in planning mode',
        onclick: () => { $('mode').value = 'planning'; syncForm(); startRun('planning'); },
      }),
    ]);
    return box;
  }

  // ---- safety strip -------------------------------------------------------

  function renderSafety() {
    const s = clear($('safety'));
    // A running run is described as it was started; otherwise the strip
    // describes what the form would start.
    const live = state.run && state.run.started && !state.run.finished ? state.run.started : null;
    const connID = live ? live.connectionId : $('connection').value;
    const c = state.connections.find((x) => x.id === connID);
    if (!c) {
      s.appendChild(el('p', { class: 'pill blocked', text: 'No connection chosen: nothing executes.' }));
      return;
    }
    const eng = ENGINES[c.engine];
    const mode = live ? live.mode : $('mode').value;
    const auto = live ? !!live.autoExecute : $('auto').checked;
    let pill, pillClass;
    if (mode === 'planning') {
      pill = 'Executes nothing it drafts: one schema read grounds the model, nothing else reaches the database';
      pillClass = 'safe';
    } else if (auto) {
      pill = 'Reads only, and may run the answer once more for your editor (guarded again, read-only)';
      pillClass = 'widened';
    } else {
      pill = 'Reads only: every statement is guarded, then run read-only by the engine';
      pillClass = 'reads';
    }
    const rows = [
      el('p', { class: 'pill ' + pillClass }, el('span', { class: 'which', text: live ? 'This run: ' : 'Next run: ' }), pill),
      el('p', {}, el('strong', { text: 'Connection: ' }), c.id + ' · ' + (eng ? eng.label : c.engine) + (c.description ? ' · ' + c.description : '')),
    ];
    if (eng) {
      rows.push(el('p', {}, el('strong', { text: 'Guard: ' }), eng.guard + '.'));
      rows.push(el('p', {}, el('strong', { text: 'Read-only below the guard: ' }), eng.readOnly + '.'));
      rows.push(el('p', {}, el('strong', { text: 'Last line: ' }), eng.last + '.'));
    }
    const b = live && live.budget;
    if (b) {
      const lim = [];
      if (b.maxRows) lim.push(b.maxRows + ' rows');
      if (b.maxBytes) lim.push(fmtBytes(b.maxBytes));
      if (b.statementTimeoutMs) lim.push(fmtMs(b.statementTimeoutMs) + ' per statement');
      if (lim.length) rows.push(el('p', {}, el('strong', { text: 'Limits per read: ' }), lim.join(', ') + '.'));
    }
    rows.push(el('p', {}, el('strong', { text: 'Readable: ' }),
      c.readable && c.readable.length ? c.readable.join(', ') : 'every table of the connection'));
    const large = Object.keys(c.largeTables || {});
    if (large.length) {
      rows.push(el('p', {}, el('strong', { text: 'Bounded tables: ' }),
        large.map((t) => t + ' (a read must bound ' + c.largeTables[t] + ' from below)').join('; ')));
    }
    if (c.status === 'unavailable') rows.push(el('p', { class: 'warn', text: 'Unavailable: ' + (c.reason || 'the executor cannot open it') }));
    for (const w of c.warnings || []) rows.push(el('p', { class: 'warn', text: 'Operator warning: ' + w }));
    append(s, rows);
  }

  // ---- history ------------------------------------------------------------

  async function loadHistory(first) {
    let page;
    try {
      page = await api('GET', '/api/agent/runs?limit=20' + (first || !state.historyNext ? '' : '&cursor=' + encodeURIComponent(state.historyNext)));
    } catch (err) {
      return;
    }
    const list = $('history');
    if (first) clear(list);
    for (const r of page.runs || []) {
      const verdict = r.goalVerdict ? ' · ' + r.goalVerdict.outcome : '';
      const conv = r.position > 1 ? ' · conversation step ' + r.position : '';
      // The endings a reader must act on say so in the list.
      const ending = r.stopReason === 'question-asked' ? ' · asks you a question'
        : r.stopReason === 'repeated-call' ? ' · stopped on a repeated call' : '';
      list.appendChild(el('li', {},
        el('a', { href: '#run=' + encodeURIComponent(r.runId), text: r.objective || r.runId }),
        el('span', { class: 'muted', text: ' ' + r.status + ' · ' + r.workflowType + ' · ' + r.mode + verdict + ending + conv }),
      ));
    }
    if (first && !list.firstChild) list.appendChild(el('li', { class: 'muted', text: 'No runs yet.' }));
    state.historyNext = page.next || '';
    $('history-more').hidden = !page.next;
  }
  $('history-more').addEventListener('click', () => loadHistory(false));
  $('history-refresh').addEventListener('click', () => loadHistory(true));

  // ---- opening a run ------------------------------------------------------

  window.addEventListener('hashchange', openFromHash);

  function openFromHash() {
    const m = /^#run=([^&]+)$/.exec(location.hash);
    const id = m ? decodeURIComponent(m[1]) : '';
    if (!id || (state.run && state.run.id === id)) return;
    openRun(id);
  }

  function stopRun() {
    if (state.run && state.run.abort) state.run.abort.abort();
    if (state.run && state.run.tick) clearInterval(state.run.tick);
    state.run = null;
  }

  function openRun(id) {
    stopRun();
    const gen = ++state.gen;
    state.run = {
      id, gen, lastSeq: 0, started: null, finished: null, steps: new Map(),
      usage: { inputTokens: 0, outputTokens: 0 }, turns: 0, statements: 0, dbMs: 0,
      startedAt: null, abort: new AbortController(),
    };
    setText($('run-h'), 'Run ' + id);
    setText($('run-meta'), '');
    clear($('timeline'));
    clear($('meter'));
    clear($('answer')).hidden = true;
    $('timeline-h').hidden = false;
    $('cancel').hidden = true;
    const run = state.run;
    // The deadline moves while nothing is written.
    run.tick = setInterval(() => {
      if (state.run !== run || run.finished) { clearInterval(run.tick); return; }
      renderMeter(run);
      // Say so while nothing arrives: a model turn can take a while.
      const quiet = Math.floor((Date.now() - (run.lastAt || Date.now())) / 1000);
      if (run.liveLabel) setLive(run.liveLabel + (quiet >= 3 ? ' · nothing new for ' + quiet + ' s (the model or the database is working)' : ''));
    }, 1000);
    follow(run);
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // follow reads the run's ledger as server-sent events over fetch (so the
  // bearer token can go in a header) and resumes after a dropped connection
  // with Last-Event-ID: the position of the last entry it showed.
  async function follow(run) {
    let delay = 500;
    while (state.run === run) {
      try {
        const res = await fetch(runPath(run.id) + '/stream', {
          headers: { ...authHeaders(), Accept: 'text/event-stream', 'Last-Event-ID': String(run.lastSeq) },
          signal: run.abort.signal,
        });
        if (res.status === 401) { needSignIn('The token was not accepted.'); return; }
        if (!res.ok) {
          let body = null;
          try { body = await res.json(); } catch { body = null; }
          const err = new APIError(res.status, body);
          if (res.status === 404 || res.status === 400) {
            setLive('');
            $('timeline').appendChild(el('li', {}, errorBlock(err)));
            return;
          }
          throw err;
        }
        run.liveLabel = run.lastSeq ? 'Live again (resumed after entry ' + run.lastSeq + ')' : 'Live';
        run.lastAt = Date.now();
        setLive(run.liveLabel);
        delay = 500;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n/g, '\n');
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
            if (!data) continue;
            let entry;
            try { entry = JSON.parse(data); } catch { continue; }
            if (state.run !== run) return;
            if (entry.seq && entry.seq <= run.lastSeq) continue;
            if (entry.seq) run.lastSeq = entry.seq;
            run.lastAt = Date.now();
            onEntry(run, entry);
          }
        }
        run.liveLabel = '';
        if (run.finished) { setLive(''); return; }
      } catch (err) {
        run.liveLabel = '';
        if (run.abort.signal.aborted) return;
      }
      if (state.run !== run) return;
      setLive('Connection lost; reconnecting from entry ' + run.lastSeq + '…');
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }

  function setLive(text) { setText($('live'), text); }

  $('cancel').addEventListener('click', async () => {
    if (!state.run) return;
    try {
      await api('DELETE', runPath(state.run.id));
      setLive('Asked the run to stop; it stops at its next checkpoint.');
    } catch (err) {
      if (err.status !== 401) $('timeline').appendChild(el('li', {}, errorBlock(err)));
    }
  });

  // ---- the timeline -------------------------------------------------------

  function fmtMs(ms) {
    if (ms < 1000) return ms + ' ms';
    if (ms < 120000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
    return Math.round(ms / 60000) + ' min';
  }
  function fmtBytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return Math.round(n / 1024) + ' KiB';
    return Math.round(n / 1048576) + ' MiB';
  }
  const fmtTime = (s) => { const d = new Date(s); return isNaN(d) ? '' : d.toLocaleTimeString(); };

  function parseArgs(raw) {
    if (raw && typeof raw === 'object') return raw;
    try { return JSON.parse(raw); } catch { return null; }
  }

  function prose(text) {
    return el('blockquote', { class: 'prose', 'aria-label': "The model's words" }, text);
  }

  function item(kind, at, ...children) {
    const li = el('li', { class: 'entry ' + kind });
    append(li, [el('span', { class: 'when', text: fmtTime(at) }), ...children]);
    $('timeline').appendChild(li);
    return li;
  }

  function countTurn(run, d) {
    if (d && d.turn) run.turns = Math.max(run.turns, d.turn);
    if (d && d.usage) {
      run.usage.inputTokens += d.usage.inputTokens || 0;
      run.usage.outputTokens += d.usage.outputTokens || 0;
    }
  }

  function stepCard(run, stepId, at) {
    let s = stepId && run.steps.get(stepId);
    if (s) return s;
    const li = item('step', at);
    s = { li, head: el('p', { class: 'step-head' }), body: el('div'), result: el('div', { class: 'result' }) };
    append(li, [s.head, s.body, s.result]);
    if (stepId) run.steps.set(stepId, s);
    return s;
  }

  function describeCall(s, d) {
    clear(s.head);
    const args = parseArgs(d.arguments) || {};
    append(s.head, [el('strong', { text: d.tool || 'tool' }), d.turn ? el('span', { class: 'muted', text: ' · turn ' + d.turn }) : null]);
    clear(s.body);
    if (d.text) s.body.appendChild(prose(d.text));
    const sql = args.sql || args.statement;
    if (typeof sql === 'string') s.body.appendChild(el('pre', { class: 'sql', text: sql }));
    else if (args.table) s.body.appendChild(el('p', { text: 'Table: ' + args.table }));
    else if (args.kind && d.tool === 'inspect_operations') s.body.appendChild(el('p', { text: 'Reading: ' + args.kind }));
    if (typeof args.reason === 'string' && args.reason) s.body.appendChild(el('p', { class: 'muted', text: 'Why: ' + args.reason }));
  }

  function openButton(run, cid, label) {
    return el('button', { type: 'button', class: 'cite', 'data-cid': cid, text: label, onclick: () => openArtifact(run.id, cid) });
  }

  function onEntry(run, e) {
    const d = e.data || {};
    switch (e.kind) {
      case 'run-started': {
        run.started = d;
        run.startedAt = new Date(e.at);
        setText($('run-h'), d.objective || 'Run ' + run.id);
        const parts = [d.mode, d.workflowType, 'on ' + d.connectionId];
        if (d.thread && d.thread.position > 1) parts.push('conversation step ' + d.thread.position);
        if (d.thread && d.thread.declined) parts.push('earlier runs not carried (' + d.thread.declined + ')');
        setText($('run-meta'), parts.join(' · ') + ' · ' + run.id);
        item('started', e.at, el('p', { text: 'Run started' + (d.autoExecute ? ' (the answer may be handed to your editor)' : '') }));
        $('cancel').hidden = false;
        renderSafety();
        break;
      }
      case 'driver-resolved':
        item('driver', e.at, el('p', { text: 'Model: ' + [d.provider, d.model].filter(Boolean).join(' · ') + (d.demo ? ' (demo recording)' : '') + (d.drive > 1 ? ' · drive ' + d.drive : '') }));
        break;
      case 'context-captured': {
        const li = item('context', e.at, el('p', { text: 'Schema captured: ' + (d.tables || 0) + ' tables' + (d.total ? ' of ' + d.total : '') + (d.packed ? ', ' + d.packed + ' shown to the model' : '') }));
        if (d.correlationId) li.appendChild(openButton(run, d.correlationId, 'Open the schema snapshot'));
        run.contextCid = d.correlationId;
        break;
      }
      case 'context-unavailable':
        item('context', e.at, el('p', { class: 'warn', text: 'No schema captured: ' + (d.code || '') + (d.detail ? ': ' + d.detail : '') }));
        break;
      case 'statement-drafted': {
        const s = stepCard(run, d.stepId, e.at);
        s.body.appendChild(el('pre', { class: 'sql', text: d.sql || '' }));
        break;
      }
      case 'tool-invoked': {
        countTurn(run, d);
        const s = stepCard(run, d.stepId, e.at);
        describeCall(s, d);
        clear(s.result).appendChild(el('p', { class: 'muted', text: 'Running…' }));
        break;
      }
      case 'tool-completed': {
        countTurn(run, d);
        const s = stepCard(run, d.stepId, e.at);
        if (!s.head.firstChild) describeCall(s, d);
        clear(s.result);
        run.dbMs += d.durationMs || 0;
        if (d.outcome === 'ok') {
          const a = d.artifact;
          const parts = [];
          if (a) {
            parts.push(a.rows + (a.rows === 1 ? ' row' : ' rows'));
            parts.push((a.columns || []).length + ' columns');
            if (a.truncated) parts.push('truncated by ' + (a.truncatedBy || []).join(', '));
          }
          parts.push(fmtMs(d.durationMs || 0));
          s.result.appendChild(el('p', { class: 'ok', text: 'Result: ' + parts.join(' · ') }));
          if (d.plan && d.plan.access) {
            s.result.appendChild(el('p', { class: 'muted', text: 'Plan: ' + d.plan.access.map((x) => [x.access, x.relation].filter(Boolean).join(' ')).join('; ') }));
          }
          if (a && a.correlationId) s.result.appendChild(openButton(run, a.correlationId, 'Open result ' + a.correlationId));
        } else if (d.outcome === 'error') {
          const de = d.dbError || {};
          s.result.appendChild(el('p', { class: 'error', text: 'The database failed it: ' + [de.class, de.message].filter(Boolean).join(': ') }));
        } else {
          s.result.appendChild(el('p', { class: 'warn', text: 'Outcome unknown (' + (d.outcome || 'none') + '): it is never run again.' }));
        }
        break;
      }
      case 'tool-refused': {
        countTurn(run, d);
        const s = stepCard(run, d.stepId, e.at);
        if (!s.head.firstChild) describeCall(s, d);
        clear(s.result);
        s.li.classList.add('refused');
        append(s.result, [
          el('p', { class: 'error' }, el('strong', { text: 'Refused ' }), el('code', { text: d.code || '' })),
          el('p', { text: d.reason || '' }),
          d.fix ? el('p', { class: 'fix', text: 'Fix: ' + d.fix }) : null,
        ]);
        break;
      }
      case 'closing-statement':
        countTurn(run, d);
        item('closing', e.at, prose(d.text || ''));
        break;
      case 'plan-statement-drafted':
        countTurn(run, d);
        run.plan = d;
        item('plan', e.at, el('p', { text: 'Drafted a statement (' + (d.dialect || '') + ', not run)' }));
        renderAnswer(run);
        break;
      case 'plan-comparison':
        item('comparison', e.at, el('p', { text: 'Compared plans ' + d.before + ' and ' + d.after + ': ' + (d.summary || '') }));
        break;
      case 'recommendation':
        item('recommendation', e.at, el('p', {}, el('strong', { text: 'Recommends (' + (d.kind || '') + '): ' }), d.rationale || ''),
          el('pre', { class: 'sql', text: d.statement || '' }));
        break;
      case 'table-profiled': {
        const p = d.profile || {};
        const li = item('profile', e.at, el('p', { text: 'Profiled ' + d.table + ' (' + d.depth + '): ' + (p.rows || 0) + ' rows, ' + ((p.columns || []).length) + ' columns' }));
        for (const f of p.findings || []) li.appendChild(el('p', { class: 'warn', text: f.code + (f.column ? ' (' + f.column + ')' : '') + ': ' + (f.detail || '') }));
        break;
      }
      case 'report-composed':
        countTurn(run, d);
        run.report = d.claims || [];
        item('report', e.at, el('p', { text: 'Report composed: ' + run.report.length + ' findings' }));
        renderAnswer(run);
        break;
      case 'answer-composed':
        countTurn(run, d);
        run.answer = d;
        item('answer-entry', e.at, el('p', { text: 'Answer presented as a ' + ((d.presentation || {}).kind || 'table') + ' of ' + d.correlationId }));
        renderAnswer(run);
        break;
      case 'run-finished':
        run.finished = d;
        run.finishedAt = new Date(e.at);
        state.continueFrom = run.id;
        setText($('continue-label'), 'Continue the conversation of "' + ((run.started && run.started.objective) || run.id).slice(0, 80) + '"');
        $('continue-row').hidden = false;
        item('finished', e.at, el('p', { text: 'Run ' + d.status + ' (' + (d.stopReason || '') + (d.reason ? ', ' + d.reason : '') + ')' }),
          stopWords(d.stopReason) && d.stopReason !== 'report-composed' ? el('p', { class: 'stopped', text: 'Stopped: ' + stopWords(d.stopReason) + '.' }) : null,
          d.detail ? el('p', { class: 'muted', text: d.detail }) : null);
        $('cancel').hidden = true;
        setLive('');
        renderSafety();
        renderAnswer(run);
        loadHistory(true);
        break;
      default:
        item('other', e.at, el('p', { class: 'muted', text: e.kind }));
    }
    if (e.kind === 'tool-completed') run.statements++;
    renderMeter(run);
    scheduleRecord(run);
  }

  // The record (a fold of the same ledger) is the authority for what was
  // spent; it is read again shortly after entries arrive.
  function scheduleRecord(run) {
    if (run.recordTimer) return;
    run.recordTimer = setTimeout(async () => {
      run.recordTimer = null;
      try {
        const rec = await api('GET', runPath(run.id));
        if (state.run !== run) return;
        run.record = rec;
        renderMeter(run);
      } catch { /* the stream carries on */ }
    }, 400);
  }

  function renderMeter(run) {
    const m = clear($('meter'));
    const b = run.started && run.started.budget;
    if (!b) return;
    const spent = run.record ? run.record.spent : { turns: run.turns, statements: run.statements, dbTimeMs: run.dbMs };
    const usage = run.record ? run.record.usage : run.usage;
    const bars = [];
    const bar = (label, used, max, fmt) => {
      if (!max) return;
      const pct = Math.min(100, Math.round((used / max) * 100));
      bars.push(el('div', { class: 'bar-row' },
        el('span', { class: 'bar-label', text: label }),
        el('meter', { min: 0, max, value: Math.min(used, max), 'aria-label': label }),
        el('span', { class: 'bar-value', text: fmt(used) + ' of ' + fmt(max) + ' (' + pct + '%)' })));
    };
    const n = (x) => String(x);
    bar('Turns', spent.turns || 0, b.maxTurns, n);
    bar('Statements', spent.statements || 0, b.maxStatements, n);
    bar('DB time', spent.dbTimeMs || 0, b.dbTimeMs, fmtMs);
    if (b.deadlineMs && run.startedAt) {
      const end = run.finishedAt || new Date();
      bar('Deadline', Math.max(0, end - run.startedAt), b.deadlineMs, fmtMs);
    }
    append(m, bars);
    const tokens = (usage.inputTokens || 0) + (usage.outputTokens || 0);
    m.appendChild(el('p', { class: 'muted', text: 'Tokens: ' + (usage.inputTokens || 0) + ' in, ' + (usage.outputTokens || 0) + ' out' + (usage.cachedTokens ? ', ' + usage.cachedTokens + ' cached' : '') + ' (' + tokens + ' total)' }));
  }

  // ---- the answer card ----------------------------------------------------

  function renderAnswer(run) {
    const box = clear($('answer'));
    const parts = [];
    if (run.finished) {
      const v = run.finished.goalVerdict;
      const st = el('p', { class: 'verdict ' + (v ? v.outcome : run.finished.status) });
      append(st, [el('strong', { text: v ? 'Verdict: ' + v.outcome : 'Run ' + run.finished.status }), v && v.rule ? ' (rule ' + v.rule + ')' : '']);
      parts.push(st);
      // A question comes first: it is what the reader must act on.
      if (run.finished.stopReason === 'question-asked' || run.finished.question) parts.push(questionBlock(run));
      const why = stopWords(run.finished.stopReason);
      if (why && run.finished.stopReason !== 'report-composed') {
        parts.push(el('p', { class: 'stopped' }, el('strong', { text: 'Stopped: ' }), why + ' (' + run.finished.stopReason + ').'));
      }
      if (v && v.unmet && v.unmet.length) {
        parts.push(el('p', { id: 'unmet-h' }, 'Not met:'));
        parts.push(el('ul', { class: 'unmet-list', 'aria-labelledby': 'unmet-h' }, v.unmet.map((u) => el('li', {},
          el('code', { class: 'unmet', text: u }), unmetWords(u) ? ' ' + unmetWords(u) : null))));
      }
    }
    if (run.plan) {
      const p = run.plan;
      parts.push(el('h3', { text: 'Drafted statement (' + (p.dialect || '') + ', not run)' }));
      parts.push(el('pre', { class: 'sql', text: p.sql || '' }));
      if (p.refusal) {
        parts.push(el('p', { class: 'error' }, 'The guard would refuse it: ', el('code', { text: p.refusal.code }), ' ' + (p.refusal.reason || '')));
        if (p.refusal.fix) parts.push(el('p', { class: 'fix', text: 'Fix: ' + p.refusal.fix }));
      } else {
        parts.push(el('p', { class: 'ok', text: p.readOnly ? 'Guard: read-only; Sonde would run it as written.' : 'Guard: not read-only.' }));
      }
      const ids = p.identifiers || {};
      const unknown = [...(ids.unknownRelations || []), ...(ids.unknownColumns || [])];
      if (unknown.length) parts.push(el('p', { class: 'warn', text: 'Names not in the schema snapshot: ' + unknown.join(', ') }));
    }
    if (run.report && run.report.length) {
      parts.push(el('h3', { text: 'Findings' }));
      const ol = el('ol', { class: 'claims' });
      const checks = figureChecks(run.finished && run.finished.goalVerdict);
      run.report.forEach((c, i) => {
        const li = el('li', {}, el('p', { text: c.text || '' }));
        const cites = el('p', { class: 'citations' }, 'Evidence: ');
        for (const ref of c.evidence || []) {
          if (ref.source === 'artifact' && ref.correlationId) cites.appendChild(openButton(run, ref.correlationId, ref.correlationId));
          else if (ref.source === 'context-snapshot' && run.contextCid) cites.appendChild(openButton(run, run.contextCid, 'schema snapshot'));
          else cites.appendChild(el('span', { class: 'cite-static', text: ref.source || 'evidence' }));
        }
        li.appendChild(cites);
        const fc = checks.get(i + 1);
        if (fc) {
          li.appendChild(figureList(fc));
          if (fc.some((f) => f.status === 'figure-unverified')) li.classList.add('claim-unverified');
        }
        ol.appendChild(li);
      });
      parts.push(ol);
    }
    if (run.answer) parts.push(answerBlock(run, run.answer));
    if (!parts.length) { box.hidden = true; return; }
    box.hidden = false;
    append(box, [el('h3', { class: 'answer-h', text: 'Answer' }), ...parts]);
  }

  // figureChecks indexes a verdict's figure checks by claim position (from 1).
  function figureChecks(v) {
    const m = new Map();
    for (const c of (v && v.claims) || []) {
      if (c && Number.isInteger(c.claim) && Array.isArray(c.figures) && c.figures.length) m.set(c.claim, (m.get(c.claim) || []).concat(c.figures));
    }
    return m;
  }

  // How each figure status reads: a mark and a word, so the status never
  // rests on colour alone (the mark is decoration; the word is read out).
  const FIGURE = {
    found: { cls: 'figure-found', mark: '✓', word: 'found' },
    derived: { cls: 'figure-derived', mark: '≈', word: 'derived' },
    'figure-unverified': { cls: 'figure-unverified', mark: '✗', word: 'not found' },
  };

  // figureList shows the verifier's check of one claim's figures: each
  // figure as the claim wrote it (the model's text), what was found of it
  // and where.
  function figureList(figures) {
    const ul = el('ul', { class: 'figures', 'aria-label': 'Figure checks' });
    for (const f of figures) {
      const k = FIGURE[f.status] || { cls: 'figure-other', mark: '?', word: String(f.status || 'unchecked') };
      let where = '';
      if (f.status === 'found') where = f.source ? ' in ' + f.source : '';
      else if (f.status === 'derived') where = (f.source ? ' from ' + f.source : '') + (f.how ? ': ' + f.how : '');
      else if (f.status === 'figure-unverified') where = ' in the results this claim cites';
      ul.appendChild(el('li', { class: 'figure ' + k.cls },
        el('span', { class: 'mark', 'aria-hidden': 'true', text: k.mark }), ' ',
        el('code', { class: 'figure-text', text: f.text || '' }), ' ',
        el('strong', { class: 'figure-status', text: k.word }), where));
    }
    return ul;
  }

  // questionBlock shows the question a run stopped on (the model's words,
  // as text) and how to answer it: a run that continues this conversation,
  // whose objective is the answer.
  function questionBlock(run) {
    const q = run.finished.question || '';
    const box = el('section', { class: 'question', role: 'region', 'aria-labelledby': 'question-h' });
    append(box, [
      el('h3', { id: 'question-h', text: 'The model asks you a question' }),
      q ? prose(q) : el('p', { class: 'muted', text: 'The question was not recorded.' }),
      el('p', { text: 'The run did not answer. Answer the question by continuing the conversation: your answer becomes the next run\u2019s objective, and the model sees this run.' }),
      el('button', { type: 'button', id: 'answer-question', text: 'Answer this question', onclick: () => answerQuestion(run) }),
    ]);
    return box;
  }

  // answerQuestion prepares the start form to continue the run's
  // conversation in its own mode and workflow, and puts the cursor in the
  // objective for the answer.
  function answerQuestion(run) {
    state.continueFrom = run.id;
    const st = run.started || {};
    if (st.mode && [...$('mode').options].some((o) => o.value === st.mode)) $('mode').value = st.mode;
    if (st.workflowType && [...$('workflow').options].some((o) => o.value === st.workflowType)) $('workflow').value = st.workflowType;
    if (st.connectionId && [...$('connection').options].some((o) => o.value === st.connectionId)) $('connection').value = st.connectionId;
    syncForm();
    $('continue-row').hidden = false;
    $('continue').checked = true;
    const obj = $('objective');
    obj.value = '';
    attr(obj, 'placeholder', 'Your answer to the question');
    obj.focus();
  }

  function answerBlock(run, a) {
    const wrap = el('div', { class: 'presented' });
    const pres = a.presentation || {};
    wrap.appendChild(el('h3', { text: pres.kind === 'chart' ? 'Chart' : 'Result' }));
    if (a.sql) wrap.appendChild(el('pre', { class: 'sql', text: a.sql }));
    const target = el('div', { class: 'presentation', text: 'Loading the result…' });
    wrap.appendChild(target);
    if (a.handover && a.handover !== 'none') {
      const h = el('div', { class: 'handover' });
      if (a.handover === 'auto-executed') {
        const out = el('div');
        append(h, [el('p', { text: 'The plan looked safe: the answer can be run again for your editor.' }),
          el('button', {
            type: 'button', text: 'Run it for my editor', onclick: async () => {
              clear(out);
              try {
                const r = await api('POST', runPath(run.id) + '/handover');
                out.appendChild(tableOf((r.columns || []).map((c) => c.name), r.rows || []));
              } catch (err) { if (err.status !== 401) out.appendChild(errorBlock(err)); }
            },
          }), out]);
      } else {
        h.appendChild(el('p', { class: 'warn', text: 'Offered to your editor, not run: ' + (a.handoverWarning || '') }));
      }
      wrap.appendChild(h);
    }
    fetchArtifact(run.id, a.correlationId).then((art) => {
      clear(target);
      const cols = ((art && art.columns) || []).map((c) => c.name);
      const rows = (art && art.data) || [];
      if (pres.kind === 'chart' && pres.spec) {
        // The server decided how the chart is drawn and recorded it with
        // the answer; the console draws that decision and decides nothing.
        const decided = a.chart;
        if (!decided) {
          target.appendChild(el('p', { class: 'error', text: 'The chart is not drawn: this run was recorded before the server kept its decision of how a chart is drawn. The rows follow as a table.' }));
        } else {
          target.appendChild(drawChart(pres.spec, decided, cols, rows));
          const note = droppedNote(pres.spec, decided, cols, rows);
          if (note) target.appendChild(el('p', { class: 'muted chart-dropped', text: note }));
          if (pres.spec.caption) target.appendChild(el('p', { class: 'caption', text: '“' + pres.spec.caption + '” (the model’s caption)' }));
        }
      }
      target.appendChild(tableOf(cols, rows));
    }).catch((err) => { clear(target).appendChild(errorBlock(err)); });
    return wrap;
  }

  const artifactCache = new Map();
  function fetchArtifact(runId, cid) {
    const key = runId + '/' + cid;
    if (!artifactCache.has(key)) {
      const p = api('GET', runPath(runId) + '/artifacts/' + encodeURIComponent(cid));
      p.catch(() => artifactCache.delete(key));
      artifactCache.set(key, p);
    }
    return artifactCache.get(key);
  }

  // ---- result tables ------------------------------------------------------

  function cellText(v) {
    if (v === null || v === undefined) return 'NULL';
    if (typeof v === 'object') {
      if (v.type === 'blob') return '<blob, ' + (v.bytes || 0) + ' bytes>';
      return JSON.stringify(v);
    }
    return String(v);
  }

  function tableOf(cols, rows, limit) {
    const max = limit || 500;
    const wrap = el('div', { class: 'table-wrap' });
    const t = el('table');
    const thead = el('thead', {}, el('tr', {}, cols.map((c) => el('th', { scope: 'col', text: c }))));
    const tbody = el('tbody');
    for (const r of rows.slice(0, max)) {
      tbody.appendChild(el('tr', {}, (r || []).map((v) => el('td', { class: typeof v === 'number' ? 'num' : '', text: cellText(v) }))));
    }
    append(t, [thead, tbody]);
    wrap.appendChild(t);
    if (rows.length > max) wrap.appendChild(el('p', { class: 'muted', text: 'Showing ' + max + ' of ' + rows.length + ' rows.' }));
    return wrap;
  }

  async function openArtifact(runId, cid) {
    const dlg = $('viewer');
    setText($('viewer-h'), 'Result ' + cid);
    setText($('viewer-sql'), '');
    setText($('viewer-meta'), 'Loading…');
    const body = clear($('viewer-body'));
    if (!dlg.open) dlg.showModal();
    $('viewer-close').focus();
    try {
      const a = await fetchArtifact(runId, cid);
      setText($('viewer-sql'), a.sql || '');
      const meta = [a.rows + (a.rows === 1 ? ' row' : ' rows'), 'profile ' + (a.profile || '')];
      if (a.truncated) meta.push('truncated by ' + (a.truncatedBy || []).join(', '));
      setText($('viewer-meta'), meta.join(' · '));
      body.appendChild(tableOf((a.columns || []).map((c) => c.name), a.data || []));
    } catch (err) {
      setText($('viewer-meta'), '');
      if (err.status !== 401) body.appendChild(errorBlock(err));
    }
  }
  $('viewer-close').addEventListener('click', () => $('viewer').close());

  // ---- charts -------------------------------------------------------------

  // num reads a value to draw. The recorded decision keeps only finite
  // numbers written in decimal (pkg/chart.Value), which Number() reads alike.
  const num = (v) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && isFinite(Number(v)) ? Number(v) : NaN);

  // droppedNote says which points the recorded decision leaves out, and why.
  function droppedNote(spec, decided, cols, rows) {
    const dropped = decided.dropped || [];
    if (!dropped.length) return '';
    const xi = cols.indexOf(spec.x);
    const why = { null: 'is NULL', not_a_number: 'is not a number' };
    const shown = dropped.slice(0, 5).map((p) => cellText((rows[p.row] || [])[xi]) + ': ' + p.column + ' ' + (why[p.why] || p.why));
    if (dropped.length > shown.length) shown.push((dropped.length - shown.length) + ' more');
    return 'Not drawn (' + dropped.length + (dropped.length === 1 ? ' point' : ' points') + '): ' + shown.join('; ') + '.';
  }

  const PALETTE = ['#2563eb', '#d97706', '#059669', '#dc2626', '#7c3aed', '#0891b2'];

  // drawChart draws the recorded decision: its series, without the points
  // it dropped (null in vals); a scatter row whose x was dropped is gone.
  function drawChart(spec, decided, cols, rows) {
    const W = 640, H = 300, L = 56, R = 16, T = 16, B = 56;
    const xi = cols.indexOf(spec.x);
    const series = decided.series || [];
    const ys = series.map((y) => cols.indexOf(y));
    const gone = new Set((decided.dropped || []).map((p) => p.row + '\u0000' + p.column));
    const kept = (k, c) => !gone.has(k + '\u0000' + c) && !(spec.type === 'scatter' && gone.has(k + '\u0000' + spec.x));
    const rows2 = rows.slice(0, 200);
    const labels = rows2.map((r) => cellText(r[xi]));
    const vals = rows2.map((r, k) => ys.map((i, s) => (kept(k, series[s]) ? num(r[i]) : null)));
    const title = (spec.type + ' chart of ' + series.join(', ') + ' by ' + spec.x);
    const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart chart-' + spec.type, role: 'img', 'aria-label': title });
    root.appendChild(svg('title', { text: title }));
    const pw = W - L - R, ph = H - T - B;

    if (spec.type === 'pie') {
      const total = vals.reduce((s, v) => s + Math.max(0, v[0]), 0) || 1;
      let a0 = -Math.PI / 2;
      const cx = L + ph / 2, cy = T + ph / 2, rad = ph / 2;
      rows2.forEach((_, k) => {
        if (vals[k][0] === null) return;
        const v = Math.max(0, vals[k][0]);
        const a1 = a0 + (v / total) * Math.PI * 2;
        const large = a1 - a0 > Math.PI ? 1 : 0;
        const d = v >= total ? `M ${cx - rad} ${cy} a ${rad} ${rad} 0 1 0 ${2 * rad} 0 a ${rad} ${rad} 0 1 0 ${-2 * rad} 0`
          : `M ${cx} ${cy} L ${cx + rad * Math.cos(a0)} ${cy + rad * Math.sin(a0)} A ${rad} ${rad} 0 ${large} 1 ${cx + rad * Math.cos(a1)} ${cy + rad * Math.sin(a1)} Z`;
        root.appendChild(svg('path', { d, fill: PALETTE[k % PALETTE.length], class: 'slice' }, svg('title', { text: labels[k] + ': ' + vals[k][0] })));
        root.appendChild(svg('text', { x: cx + rad + 24, y: T + 14 + k * 16, class: 'legend', text: labels[k] + ': ' + vals[k][0] }));
        a0 = a1;
      });
      return root;
    }

    const stacked = spec.type === 'stacked-bar';
    let lo = 0, hi = 0;
    for (const v of vals) {
      if (stacked) {
        hi = Math.max(hi, v.reduce((s, x) => s + Math.max(0, x), 0));
        lo = Math.min(lo, v.reduce((s, x) => s + Math.min(0, x), 0));
      } else for (const x of v) { hi = Math.max(hi, x); lo = Math.min(lo, x); }
    }
    if (hi === lo) hi = lo + 1;
    // Round the scale out to a readable step.
    const step = niceStep((hi - lo) / 4);
    hi = Math.ceil(hi / step) * step;
    lo = Math.floor(lo / step) * step;
    const yAt = (v) => T + ph - ((v - lo) / (hi - lo)) * ph;
    // axes and ticks
    root.appendChild(svg('line', { x1: L, y1: T, x2: L, y2: T + ph, class: 'axis' }));
    root.appendChild(svg('line', { x1: L, y1: yAt(0), x2: L + pw, y2: yAt(0), class: 'axis' }));
    for (let v = lo; v <= hi + step / 2; v += step) {
      root.appendChild(svg('text', { x: L - 6, y: yAt(v) + 4, class: 'tick', 'text-anchor': 'end', text: shortNum(v) }));
      root.appendChild(svg('line', { x1: L, y1: yAt(v), x2: L + pw, y2: yAt(v), class: 'grid' }));
    }
    let xAt;
    if (spec.type === 'scatter') {
      const xs = rows2.map((r, k) => (kept(k, spec.x) ? num(r[xi]) : null));
      const drawnXs = xs.filter((x) => x !== null);
      let xlo = Math.min(...drawnXs), xhi = Math.max(...drawnXs);
      if (xhi === xlo) xhi = xlo + 1;
      xAt = (k) => L + ((xs[k] - xlo) / (xhi - xlo)) * pw;
    } else {
      const band = pw / rows2.length;
      xAt = (k) => L + band * k + band / 2;
      const every = Math.ceil(rows2.length / 16);
      labels.forEach((lab, k) => {
        if (k % every) return;
        root.appendChild(svg('text', { x: xAt(k), y: T + ph + 16, class: 'tick', 'text-anchor': 'middle', text: lab.length > 14 ? lab.slice(0, 13) + '…' : lab }));
      });
    }
    const band = pw / Math.max(1, rows2.length);
    ys.forEach((_, s) => {
      const color = PALETTE[s % PALETTE.length];
      if (spec.type === 'bar' || stacked) {
        const w = stacked ? band * 0.7 : (band * 0.7) / ys.length;
        vals.forEach((v, k) => {
          if (v[s] === null) return;
          let base = 0;
          if (stacked) for (let q = 0; q < s; q++) base += v[q] >= 0 === v[s] >= 0 ? v[q] : 0;
          const x = stacked ? xAt(k) - w / 2 : xAt(k) - (band * 0.35) + w * s;
          const y0 = yAt(base), y1 = yAt(base + v[s]);
          root.appendChild(svg('rect', { x, y: Math.min(y0, y1), width: Math.max(1, w - 1), height: Math.max(1, Math.abs(y0 - y1)), fill: color, class: 'bar' },
            svg('title', { text: labels[k] + ' · ' + series[s] + ': ' + v[s] })));
        });
      } else if (spec.type === 'scatter') {
        vals.forEach((v, k) => {
          if (v[s] === null) return;
          root.appendChild(svg('circle', { cx: xAt(k), cy: yAt(v[s]), r: 4, fill: color, class: 'point' },
            svg('title', { text: labels[k] + ' · ' + series[s] + ': ' + v[s] })));
        });
      } else {
        // A point not drawn breaks the line: each run of drawn points is a
        // line (and an area) of its own.
        const runs = [];
        vals.forEach((v, k) => {
          if (v[s] === null) { runs.push([]); return; }
          if (!runs.length) runs.push([]);
          runs[runs.length - 1].push(k);
        });
        for (const ks of runs.filter((r) => r.length)) {
          const pts = ks.map((k) => xAt(k) + ',' + yAt(vals[k][s]));
          if (spec.type === 'area') {
            root.appendChild(svg('polygon', { points: [xAt(ks[0]) + ',' + yAt(0), ...pts, xAt(ks[ks.length - 1]) + ',' + yAt(0)].join(' '), fill: color, 'fill-opacity': 0.25, class: 'area' }));
          }
          root.appendChild(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, class: 'line' }));
        }
      }
      if (ys.length > 1) root.appendChild(svg('text', { x: L + 8 + s * 120, y: H - 8, fill: color, class: 'legend', text: '■ ' + series[s] }));
    });
    return root;
  }

  function niceStep(raw) {
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }

  function shortNum(v) {
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
    return Number.isInteger(v) ? String(v) : v.toFixed(2);
  }

  syncForm();
  boot();
})();
