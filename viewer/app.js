// Conclave viewer. On the page of a running debate, follows the debate's event
// stream and updates the grid, the judge row, the calls table and a short log.
// Model output only ever enters the page through text nodes.
(() => {
  'use strict';
  const body = document.body;
  if (body.dataset.page === 'list') watchList();
  if (body.dataset.page !== 'debate' || body.dataset.status !== 'running') return;
  const debateId = body.dataset.debate;
  const start = Number(body.dataset.start);

  // Direction controls (overrides, embeddings, isolates, marks) reorder what a reader sees:
  // each is written out as <U+XXXX> in an isolating element of its own, as the server's pages do.
  // Other control characters (no glyph: a tofu box) are written out the same way.
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
  const bidiName = (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`;
  const textNodes = (text) => {
    if (!BIDI.test(text)) return [document.createTextNode(text)];
    return [...text].map((c) => {
      if (!BIDI.test(c)) return document.createTextNode(c);
      const bdi = document.createElement('bdi');
      bdi.className = 'ctl';
      bdi.textContent = bidiName(c);
      return bdi;
    });
  };
  const attrText = (v) => String(v).replace(new RegExp(BIDI.source, 'g'), bidiName);

  /** An element with attributes and children; strings become text nodes. */
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, attrText(v));
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      if (typeof child === 'string' || typeof child === 'number') node.append(...textNodes(String(child)));
      else node.append(child);
    }
    return node;
  };
  const fixed = (x, digits = 2) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-');
  const seconds = (ns) => (typeof ns === 'number' ? `${(ns / 1e9).toFixed(2)} s` : '-');
  const byAttr = (root, selector, name, value) => [...root.querySelectorAll(selector)].find((n) => n.getAttribute(name) === String(value)) || null;

  const grid = document.getElementById('grid');
  const calls = document.querySelector('#calls tbody');
  const log = document.getElementById('live-log');

  const note = (text) => {
    if (!log) return;
    log.append(el('li', null, text));
    while (log.children.length > 40) log.firstElementChild.remove();
  };

  const ensureRound = (round) => {
    if (!grid || byAttr(grid, 'thead th[data-round]', 'data-round', round)) return;
    grid.querySelector('thead tr').append(el('th', { 'data-round': round }, round === 0 ? 'round 0 (answers)' : `round ${round}`));
    for (const row of grid.querySelectorAll('tbody tr[data-agent]')) {
      row.append(el('td', { class: 'turn empty', 'data-round': round, 'data-agent': row.getAttribute('data-agent') }, el('span', { class: 'muted' }, '…')));
    }
    const judgeRow = grid.querySelector('tbody tr.judge-row');
    if (judgeRow) judgeRow.append(el('td', { class: 'judge', 'data-judge-round': round }, el('span', { class: 'muted' }, '…')));
  };

  const turnCell = (t) => {
    const c = t.critique;
    return el(
      'td',
      { class: `turn turn-${t.status}`, 'data-round': t.round, 'data-agent': t.agentId },
      el('p', { class: 'position' }, t.position ?? (t.error ? `no usable answer: ${t.error}` : 'no usable answer')),
      el('p', { class: 'meta' }, t.status === 'ok' ? null : el('span', { class: `status status-${t.status}` }, t.status), t.status === 'ok' ? null : ' ', `confidence ${fixed(t.confidence)}`),
      c && c.agreements.length ? el('ul', { class: 'agree' }, c.agreements.map((a) => el('li', null, el('span', { class: 'peer' }, a.with), `: ${a.on}`))) : null,
      c && c.disagreements.length
        ? el('ul', { class: 'disagree' }, c.disagreements.map((a) => el('li', null, el('span', { class: 'peer' }, a.with), `: ${a.on}. `, el('span', { class: 'reason' }, a.reason))))
        : null,
      t.opening && t.opening.reasoning ? el('details', null, el('summary', null, 'reasoning'), el('p', null, t.opening.reasoning)) : null,
    );
  };

  const judgeCell = (j) => {
    const attrs = { class: 'judge', 'data-judge-round': j.round };
    if (!j.score) return el('td', attrs, el('span', { class: 'status status-failed' }, 'judge failed'), ` ${j.error ?? ''}`);
    return el(
      'td',
      attrs,
      el('strong', null, fixed(j.convergence)),
      ' ',
      el('span', { class: 'axes' }, `recommendation ${fixed(j.score.recommendation)} · facts ${fixed(j.score.facts)} · caveats ${fixed(j.score.caveats)}`),
      el('p', { class: 'rationale' }, j.score.rationale),
    );
  };

  const pre = (text) => el('pre', null, text);
  const callRows = (c) => {
    const m = c.metrics;
    const num = (v) => el('td', { class: 'num' }, v === null || v === undefined ? '-' : String(v));
    const row = el(
      'tr',
      { class: `call call-${c.status}`, 'data-call-id': c.id },
      num(c.id), el('td', null, c.stage), el('td', null, c.place ?? `round ${c.round}`), el('td', null, c.agentId), el('td', null, el('code', null, c.model)), num(c.attempt),
      el('td', null, el('span', { class: `status status-${c.status}` }, c.status === 'aborted' ? 'cancelled' : c.status)),
      num(m.promptTokens), num(m.completionTokens), num(seconds(m.loadDurationNs)), num(seconds(m.totalDurationNs)),
      num(`+${((c.startedAt - start) / 1000).toFixed(1)} s`),
    );
    const detail = el(
      'tr',
      { class: 'call-detail', 'data-call-detail': c.id },
      el(
        'td',
        { colspan: 12 },
        el(
          'details',
          null,
          el('summary', null, `messages, reply and parsed JSON of call ${c.id}`),
          el('p', { class: 'muted served' }, 'served by ', el('code', null, c.host), ` (${c.api === 'openai' ? 'OpenAI-compatible' : 'Ollama'} API)`),
          c.error ? el('p', { class: 'error' }, c.error) : null,
          c.validationError ? el('p', { class: 'error' }, `validation: ${c.validationError}`) : null,
          c.normalized && c.normalized.length ? [el('h4', null, 'normalized by the engine'), el('ul', null, c.normalized.map((n) => el('li', null, n)))] : null,
          c.messages.map((msg) => [el('h4', null, msg.role), pre(msg.content)]),
          el('h4', null, 'raw reply'), el('pre', { class: 'raw' }, c.raw),
          el('h4', null, 'parsed'), pre(JSON.stringify(c.parsed ?? null, null, 2)),
          el('h4', null, 'options'), pre(JSON.stringify(c.options, null, 2)),
        ),
      ),
    );
    return [row, detail];
  };

  // The tension stage as it goes: claims, clashes (mapped on the round-0 answers in a debate), what each critique round settled, whether the targeted exchange fires, the exchange, the map.
  const tensionNote = (u) => {
    switch (u.step) {
      case 'claims':
        return `Tension map: ${u.claims.length} load-bearing claims from ${u.agents.length} agents; comparing ${u.pairs} pairs`;
      case 'clashes':
        if (!u.decision) return `Tension map: ${u.tensions.length} clashes found on the round-${u.round ?? 0} answers`;
        return `Tension map: ${u.tensions.length} tensions; ${u.decision.fire && u.decision.target ? `targeted exchange on ${u.decision.target.id}` : 'no targeted exchange'}`;
      case 'settled':
        return `Clashes after round ${u.round}: ${u.resolved.length ? `resolved ${u.resolved.map((r) => `${r.id} (${r.by} conceded)`).join(', ')}` : 'none resolved'}; open: ${u.open.join(', ') || 'none'}`;
      case 'decision':
        return u.decision.fire && u.decision.target ? `Targeted exchange on ${u.decision.target.id}, still open after the last round` : 'No targeted exchange: too few clashes still open';
      case 'targeted':
        return `Targeted exchange on ${u.exchange.tensionId}: ${u.exchange.outcome}`;
      case 'map':
        return u.result.status === 'ok' ? 'Tension map validated' : `Tension map failed: ${u.result.error}`;
      default:
        return `Tension map: ${u.step}`;
    }
  };

  const replace = (old, fresh) => (old ? old.replaceWith(fresh) : undefined);

  const handle = (e) => {
    switch (e.type) {
      case 'round.started':
        ensureRound(e.round);
        note(e.round === 0 ? 'Round 0: every agent answers on its own' : `Critique round ${e.round}`);
        break;
      case 'turn.finished':
        ensureRound(e.turn.round);
        if (grid) replace(grid.querySelector(`td.turn[data-round="${Number(e.turn.round)}"][data-agent="${CSS.escape(e.turn.agentId)}"]`), turnCell(e.turn));
        note(`${e.turn.agentId} finished round ${e.turn.round} (${e.turn.status}, confidence ${fixed(e.turn.confidence)})`);
        break;
      case 'round.judged':
        ensureRound(e.judgement.round);
        if (grid) replace(grid.querySelector(`td.judge[data-judge-round="${Number(e.judgement.round)}"]`), judgeCell(e.judgement));
        note(`Judge, round ${e.judgement.round}: convergence ${fixed(e.judgement.convergence)}`);
        break;
      case 'call.finished':
        if (calls && !byAttr(calls, 'tr[data-call-id]', 'data-call-id', e.call.id)) calls.append(...callRows(e.call));
        // Turns and judgements have their own lines; other stages and every failure get one here.
        if (e.call.status !== 'ok' || !['opening', 'critique', 'judge'].includes(e.call.stage)) note(`${e.call.stage} call of ${e.call.agentId}: ${e.call.status}`);
        break;
      case 'debate.exit': {
        const exit = document.getElementById('exit');
        if (exit) exit.replaceChildren(el('strong', null, 'Exit:'), ' ', el('span', { class: 'exit-reason' }, e.reason), ` (${e.detail})`);
        note(`Exit: ${e.reason}`);
        break;
      }
      case 'tensions.update':
        note(tensionNote(e.update));
        break;
      case 'vote.artifacts':
        note(`Cluster vote, iteration ${e.iteration}: ${e.artifacts.length} positions`);
        break;
      case 'vote.tiers':
        note(`Cluster vote, iteration ${e.iteration}: tiers decided`);
        break;
      case 'synthesis.finished':
        note(`Synthesis: ${e.result.status}`);
        break;
      case 'warning':
        note(`Warning: ${e.message}`);
        break;
      case 'debate.finished': {
        const status = document.getElementById('status');
        if (status) {
          status.textContent = e.status;
          status.className = `status status-${e.status}`;
        }
        break;
      }
      default:
        break;
    }
  };

  // What each call in flight is writing, growing in place: one item per call, replaced as a whole on each update.
  const streams = el('ul', { id: 'live-stream', class: 'live-stream', 'aria-live': 'off' });
  if (log) log.before(streams);
  else document.querySelector('main, body').append(streams);
  const showStreams = (list) => {
    const seen = new Set();
    for (const c of list) {
      const key = `${c.stage}/${c.round}/${c.agentId}`;
      seen.add(key);
      const what = `${c.stage} · round ${c.round} · ${c.thinking ? 'thinking · ' : ''}${c.tokens} tokens`;
      const item = el('li', { 'data-call': key, 'data-agent': c.agentId }, el('strong', { class: 'agent' }, c.agentId), ' ', el('span', { class: 'muted' }, what), el('p', { class: 'stream-text' }, c.text || ''));
      const old = byAttr(streams, 'li[data-call]', 'data-call', key);
      if (old) old.replaceWith(item);
      else streams.append(item);
    }
    for (const item of [...streams.querySelectorAll('li[data-call]')]) if (!seen.has(item.getAttribute('data-call'))) item.remove();
  };

  const source = new EventSource(`/api/debates/${encodeURIComponent(debateId)}/events`);
  source.onmessage = (message) => handle(JSON.parse(message.data));
  source.addEventListener('stream', (message) => showStreams(JSON.parse(message.data).calls || []));
  // The stream ends when the debate does: load the finished record (tension map, votes, chart, synthesis).
  source.addEventListener('end', () => {
    source.close();
    window.location.reload();
  });

  /** On the list: say when debates start, finish or appear, without reloading under the reader. */
  function watchList() {
    const notice = document.getElementById('changed');
    if (!notice) return;
    const signature = async () => {
      const res = await fetch('/api/debates?limit=1000', { cache: 'no-store' });
      if (!res.ok) return null;
      return (await res.json()).map((r) => `${r.id}:${r.status}`).join(',');
    };
    let first = null;
    const check = async () => {
      try {
        const now = await signature();
        if (first === null) first = now;
        else if (now !== null && now !== first) {
          notice.hidden = false;
          return;
        }
      } catch {
        // The viewer may have stopped; try again later.
      }
      setTimeout(check, 2000);
    };
    void check();
  }
})();
