// app.js -- allot's dashboard: one page, plain JavaScript, no build step.
//
// The page holds no data of its own: it calls the controller's API with
// the token the user pasted (kept in sessionStorage, this tab only, and
// sent only in the Authorization header, never in a URL), so it sees what
// that token may see.  Live updates come from GET /v1/events read with
// fetch() (EventSource cannot send a header): each event goes into the
// feed and schedules a refresh of the page shown, from the event's cursor
// after a reconnect.  The content security policy allows no inline script
// or style, so everything is built here with DOM calls and styled by
// class from style.css.
'use strict';

(() => {
  const KEY = 'allot.token';
  const STATES = ['pending', 'held', 'running', 'completed', 'failed',
                  'cancelled', 'out_of_memory'];
  let token = sessionStorage.getItem(KEY);
  let me = null;
  let current = null;     // the page shown: {node, update, poll, job}
  let refreshTimer = null;
  let stream = null;      // the event stream's AbortController
  let cursor = null;      // the last event seen
  let updates = 0;
  let updatedAt = 0;      // when the page shown was last refreshed

  const $ = (sel) => document.querySelector(sel);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // An element: h('a', {href: '#', class: 'x'}, 'text', child...).
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.setAttribute('class', v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }

  // Sets a width in percent through the CSSOM, which the content security
  // policy allows (a style attribute it would not).
  function wide(e, pct) {
    e.style.width = pct.toFixed(2) + '%';
    return e;
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) if (k) e.append(k);
    return e;
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, opts = {}) {
    const headers = { Authorization: 'Bearer ' + token };
    if (opts.body) headers['Content-Type'] = 'application/json';
    const r = await fetch(path, {
      method: opts.method || 'GET', headers, cache: 'no-store',
      body: opts.body ? JSON.stringify(opts.body) : undefined,
    });
    const text = await r.text();
    if (r.status === 401) {
      logout('The controller refused this token.');
      throw new ApiError(401, 'unauthorized');
    }
    if (!r.ok) {
      let msg = r.statusText;
      try { msg = JSON.parse(text).message || msg; } catch (e) { /* text */ }
      throw new ApiError(r.status, msg);
    }
    if (opts.raw) return text;
    return text ? JSON.parse(text) : null;
  }

  // ---------------------------------------------------------------- format

  function when(ms) {
    if (!ms) return '-';
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
      `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  function age(ms) {
    if (!ms) return '-';
    let s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 120) return s + 's';
    if ((s = Math.round(s / 60)) < 120) return s + 'm';
    if ((s = Math.round(s / 60)) < 48) return s + 'h';
    return Math.round(s / 24) + 'd';
  }

  function span(ms) {
    let s = Math.max(0, Math.round(ms / 1000));
    if (s < 120) return s + 's';
    if ((s = Math.round(s / 60)) < 120) return s + 'm';
    return (s / 60).toFixed(1) + 'h';
  }

  const num = (x, d = 1) => (x === null || x === undefined) ? '-' :
    (Number.isInteger(x) ? String(x) : x.toFixed(d));

  function jobGpus(j) {
    const per = j.gpus > 0 ? j.gpus : (j.gpu_milli || 0) / 1000;
    return per * (j.tasks || 1);
  }

  // A state's badge, its words apart ("out of memory").
  const badge = (state) => h('span', { class: 'state st-' + state },
    String(state).replace(/_/g, ' '));

  function mine(j) {
    return me && (me.role === 'admin' || j.user === me.user);
  }

  // Cancel, hold, release: the buttons a job's state allows, for its
  // owner or an admin (the API checks again).
  function actions(j) {
    if (!mine(j)) return h('span', { class: 'muted' }, '-');
    const act = (what) => h('button', {
      type: 'button', class: 'act act-' + what, 'data-job': j.id,
      onclick: async (ev) => {
        ev.preventDefault();
        if (what === 'cancel' && !window.confirm(`Cancel job ${j.id}?`)) {
          return;
        }
        try {
          await api(`/v1/jobs/${j.id}/${what}`, { method: 'POST' });
          toast(`job ${j.id}: ${what} asked`);
        } catch (e) {
          toast(`job ${j.id}: ${e.message}`, true);
        }
        scheduleUpdate();
      },
    }, what);
    const out = [];
    if (j.state === 'pending') out.push(act('hold'));
    if (j.state === 'held') out.push(act('release'));
    if (['pending', 'held', 'running'].includes(j.state)) {
      out.push(act('cancel'));
    }
    return out.length ? h('span', { class: 'acts' }, out) :
      h('span', { class: 'muted' }, '-');
  }

  function toast(text, bad) {
    const t = h('div', { class: 'toast' + (bad ? ' bad' : ''),
                         role: 'status' }, text);
    document.body.append(t);
    setTimeout(() => t.remove(), 4000);
  }

  const table = (cls, head, rows) => h('div', { class: 'scroll' },
    h('table', { class: cls },
      h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, c)))),
      h('tbody', {}, rows)));

  // ----------------------------------------------------------------- charts

  // A line chart of series [{name, cls, values}] over times t (seconds),
  // in an SVG that scales to its box.
  function lineChart(t, series, label) {
    const W = 640, H = 200, L = 36, B = 22, T = 8, R = 8;
    const all = series.flatMap((x) => x.values).filter((v) => v !== null);
    const top = Math.max(1, ...all);
    const t0 = t.length ? t[0] : 0, t1 = t.length ? t[t.length - 1] : 1;
    const X = (v) => L + (t1 > t0 ? (v - t0) / (t1 - t0) : 1) * (W - L - R);
    const Y = (v) => T + (1 - v / top) * (H - T - B);
    const g = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart',
                         role: 'img', 'aria-label': label });
    for (let k = 0; k <= 4; k++) {
      const v = top * k / 4;
      g.append(s('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v),
                           class: 'grid' }));
      const tx = s('text', { x: L - 4, y: Y(v) + 4, class: 'axis',
                             'text-anchor': 'end' });
      tx.textContent = num(v, 1);
      g.append(tx);
    }
    const ends = t1 > t0 ? [[t0, 'start'], [t1, 'end']] : [[t1, 'end']];
    for (const [x, anchor] of ends) {
      if (!t.length) break;
      const tx = s('text', { x: X(x), y: H - 6, class: 'axis',
                             'text-anchor': anchor });
      tx.textContent = when(x * 1000).slice(11, 16);
      g.append(tx);
    }
    for (const x of series) {
      let d = '';
      x.values.forEach((v, i) => {
        if (v === null) return;
        d += (d ? 'L' : 'M') + X(t[i]).toFixed(1) + ',' + Y(v).toFixed(1);
      });
      if (d) g.append(s('path', { d, class: 'line ' + x.cls }));
      // A lone sample (the first minute) shows as a dot.
      if (d && !d.includes('L')) {
        const [cx, cy] = d.slice(1).split(',');
        g.append(s('circle', { cx, cy, r: 3, class: 'dot ' + x.cls }));
      }
    }
    const legend = h('div', { class: 'legend' }, series.map((x) =>
      h('span', { class: 'key ' + x.cls }, x.name)));
    return h('figure', { class: 'figure' }, g, legend);
  }

  // Bars per queue: deserved, fair share and allocated GPUs side by side.
  function queueBars(queues) {
    const top = Math.max(1, ...queues.flatMap((q) => [
      q.quota.gpu.deserved, q.fair_share.gpu, q.allocated.gpu]));
    const pct = (v) => Math.round(100 * v / top);
    const bar = (cls, v, title) => wide(h('div', { class: 'bar ' + cls,
      title: `${title}: ${num(v)} GPUs` }), Math.min(100, pct(v)));
    return h('div', { class: 'bars' }, queues.map((q) => {
      const borrowing = q.allocated.gpu - q.quota.gpu.deserved;
      return h('div', { class: 'bar-row' },
        h('div', { class: 'bar-name' }, q.name,
          borrowing > 0.0005 ? h('span', { class: 'borrow' },
            ` borrows ${num(borrowing)}`) : null),
        h('div', { class: 'bar-stack' },
          bar('deserved', q.quota.gpu.deserved, 'deserved'),
          bar('fair', q.fair_share.gpu, 'fair share'),
          bar('alloc' + (borrowing > 0.0005 ? ' over' : ''),
              q.allocated.gpu, 'allocated')),
        h('div', { class: 'bar-nums' },
          `${num(q.quota.gpu.deserved)} / ${num(q.fair_share.gpu)} / ` +
          `${num(q.allocated.gpu)}`));
    }), h('div', { class: 'legend' },
      h('span', { class: 'key deserved' }, 'deserved'),
      h('span', { class: 'key fair' }, 'fair share'),
      h('span', { class: 'key alloc' }, 'allocated'),
      h('span', { class: 'key over' }, 'borrowed (over deserved)')));
  }

  // Sums the series of a /v1/usage answer by time.
  function sumUsage(u, key) {
    const at = new Map();
    for (const x of u.series || []) {
      x.t.forEach((t, i) => {
        const v = x[key] ? x[key][i] : null;
        if (!at.has(t)) at.set(t, null);
        if (v !== null && v !== undefined) at.set(t, (at.get(t) || 0) + v);
      });
    }
    const t = [...at.keys()].sort((a, b) => a - b);
    return { t, values: t.map((k) => at.get(k)) };
  }

  // ------------------------------------------------------------------ pages

  function kpi(label, value, cls) {
    return h('div', { class: 'kpi' + (cls ? ' ' + cls : '') },
      h('div', { class: 'kpi-value' }, value),
      h('div', { class: 'kpi-label' }, label));
  }

  function pageOverview() {
    const root = h('section', { id: 'page-overview' },
      h('h1', {}, 'Overview'));
    const body = h('div', {});
    root.append(body);
    async function update() {
      const now = Math.floor(Date.now() / 1000);
      // GET /v1/summary: the GPUs', jobs' and queues' counts in a few
      // kilobytes, where the node list is a megabyte on a large cluster.
      const [summary, usage] = await Promise.all([
        api('/v1/summary'),
        api(`/v1/usage?from=${now - 6 * 3600}&to=${now}&by=queue`),
      ]);
      // The last 24 hours' report (ended jobs, wastage) reads the job
      // history from the store, which takes longest on a large cluster:
      // the page is drawn without it first ('…'), then with it.  Asked
      // for after the others, as the controller answers a batch of
      // requests together.
      draw(summary, usage, null);
      const report = await api(
        `/v1/report?since=${now - 86400}&until=${now}`);
      if (current && current.node === root) {
        draw(summary, usage, report);
      }
    }

    function draw(summary, usage, report) {
      const g = summary.gpus;
      const total = g.total, alloc = g.allocated;
      const busy = g.busy, known = g.telemetry;
      // Active jobs from the controller's counts (an admin's: every
      // job; a user's: their own, as the job list shows them), ended
      // ones from the report's last 24 hours.
      const mine = me && me.role !== 'admin' ? summary.my_jobs : summary.jobs;
      const byState = Object.fromEntries(STATES.map((x) => [x, 0]));
      for (const x of ['pending', 'held', 'running']) {
        byState[x] = mine[x] || 0;
      }
      for (const x of ['completed', 'failed', 'cancelled', 'out_of_memory']) {
        byState[x] = !report ? '…' :
          report.total ? report.total[x] || 0 : '-';
      }
      // The report's failed include those out of memory: each apart here.
      if (report && report.total) {
        byState.failed -= report.total.out_of_memory || 0;
      }
      const w = report && report.total ? report.total.wastage_ratio : null;
      const a = sumUsage(usage, 'allocated');
      const used = sumUsage(usage, 'used');
      const idle = { t: a.t, values: a.values.map((v) =>
        v === null ? null : Math.max(0, total - v)) };
      body.replaceChildren(
        h('div', { class: 'kpis' },
          kpi('GPUs', total),
          kpi('allocated', alloc),
          kpi('busy', known ? busy : '-', known ? '' : 'muted'),
          kpi('idle', total - alloc),
          kpi('wastage (24 h)', !report ? '…' :
            w === null || w === undefined ? '-' :
              (100 * w).toFixed(1) + '%', 'waste')),
        h('div', { class: 'grid2' },
          h('div', { class: 'card' }, h('h2', {}, 'GPUs, last 6 hours'),
            lineChart(a.t, [
              { name: 'allocated', cls: 'alloc', values: a.values },
              { name: 'busy', cls: 'busy', values: used.t.length ===
                a.t.length ? used.values : a.t.map(() => null) },
              { name: 'idle', cls: 'idle', values: idle.values },
            ], 'GPUs allocated, busy and idle over time'),
            a.t.length ? null : h('p', { class: 'muted' },
              'No samples yet: the controller samples every minute.')),
          h('div', { class: 'card' },
            h('h2', {}, 'Jobs by state (ended: last 24 hours)'),
            h('ul', { class: 'states' }, STATES.map((x) =>
              h('li', {}, h('a', { href: '#/jobs?state=' + x }, badge(x)),
                h('span', { class: 'count', 'data-state': x },
                  byState[x])))))),
        h('div', { class: 'card' },
          h('h2', {}, 'Queues: deserved, fair share, allocated GPUs'),
          queueBars(summary.queues)));
    }
    return { node: root, update, poll: 5000, kinds: ['node', 'queue'] };
  }

  function pageNodes() {
    const root = h('section', { id: 'page-nodes' }, h('h1', {}, 'Nodes'));
    const body = h('div', { class: 'nodes' });
    root.append(body,
      h('div', { class: 'legend' },
        h('span', { class: 'key gfree' }, 'free'),
        h('span', { class: 'key galloc' }, 'allocated'),
        h('span', { class: 'key gbusy' }, 'allocated and busy'),
        h('span', { class: 'key gidle' }, 'allocated, idle'),
        h('span', { class: 'key gemu' }, 'emulated (dashed)')));
    async function update() {
      const { nodes } = await api('/v1/nodes');
      nodes.sort((a, b) => a.name.localeCompare(b.name));
      body.replaceChildren(...nodes.map((n) => {
        const st = n.drained ? (n.state === 'down' ? 'down' : 'drained') :
          n.state;
        const cells = n.gpus.map((g) => {
          let cls = 'gpu';
          if (g.job) {
            cls += typeof g.util !== 'number' ? ' galloc' :
              (g.util >= 5 ? ' gbusy' : ' gidle');
          } else {
            cls += ' gfree';
          }
          if (n.emulated) cls += ' gemu';
          const util = typeof g.util === 'number' ? g.util + '%' : '';
          const title = `${n.name} GPU ${g.index}: ${g.model}` +
            (g.job ? `, job ${g.job}` : ', free') +
            (util ? `, ${util} busy` : '');
          const cell = h(g.job ? 'a' : 'div', {
            class: cls, title, href: g.job ? '#/jobs/' + g.job : null,
            'data-gpu': g.index },
          h('span', { class: 'gi' }, g.index),
          util ? h('span', { class: 'gu' }, util) : null);
          return cell;
        });
        return h('div', { class: 'card node st-node-' + st,
                          'data-node': n.name },
          h('div', { class: 'node-head' },
            h('strong', {}, n.name), ' ', badge(st),
            n.emulated ? h('span', { class: 'tag' }, 'emulated') : null,
            h('span', { class: 'muted' },
              ` ${n.gpus_used || 0}/${n.gpus.length} GPUs, ` +
              `seen ${span(n.last_seen_ms_ago || 0)} ago`)),
          n.drained ? h('p', { class: 'why' },
            (n.drain_reason ? 'Drained: ' + n.drain_reason :
              'Drained by an admin') +
            (n.state === 'draining' ?
              '. Running jobs finish, no new ones start.' : '.')) : null,
          n.state === 'down' ? h('p', { class: 'why' },
            'Down: its agent stopped reporting; its jobs were requeued.') :
            null,
          h('div', { class: 'gpus' }, cells));
      }));
      if (!nodes.length) body.append(h('p', { class: 'muted' }, 'No nodes.'));
    }
    // Nodes' changes come as events; the poll is for the GPUs' telemetry.
    return { node: root, update, poll: 10000, kinds: ['node'] };
  }

  function pageQueues() {
    const root = h('section', { id: 'page-queues' }, h('h1', {}, 'Queues'));
    const body = h('div', {});
    root.append(body);
    async function update() {
      const now = Math.floor(Date.now() / 1000);
      const [{ queues }, usage] = await Promise.all([
        api('/v1/queues'),
        api(`/v1/usage?from=${now - 6 * 3600}&to=${now}&by=queue`)]);
      // The hierarchy: children under their parent, depth-first.
      const kids = new Map();
      for (const q of queues) {
        const p = q.parent || '';
        if (!kids.has(p)) kids.set(p, []);
        kids.get(p).push(q);
      }
      const rows = [];
      const walk = (p, depth) => {
        for (const q of (kids.get(p) || []).sort((a, b) =>
          a.name.localeCompare(b.name))) {
          const lim = q.quota.gpu.limit;
          const borrow = q.allocated.gpu - q.quota.gpu.deserved;
          rows.push(h('tr', { 'data-queue': q.name },
            h('td', { class: 'd' + Math.min(depth, 4) }, q.name),
            h('td', { class: 'n' }, q.priority),
            h('td', { class: 'n' }, num(q.quota.gpu.deserved)),
            h('td', { class: 'n' }, lim < 0 ? 'none' : num(lim)),
            h('td', { class: 'n' }, num(q.fair_share.gpu)),
            h('td', { class: 'n' + (borrow > 0.0005 ? ' over' : '') },
              num(q.allocated.gpu)),
            h('td', { class: 'n' }, num(q.demand.gpu))));
          walk(q.name, depth + 1);
        }
      };
      walk('', 0);
      const charts = (usage.series || []).filter((x) => x.t.length)
        .map((x) => h('div', { class: 'card' }, h('h2', {}, x.queue),
          lineChart(x.t, [
            { name: 'allocated', cls: 'alloc', values: x.allocated },
            { name: 'deserved', cls: 'deserved', values: x.deserved },
            { name: 'fair share', cls: 'fair', values: x.fair_share },
            { name: 'pending', cls: 'idle', values: x.pending },
          ], `usage of queue ${x.queue}`)));
      body.replaceChildren(
        table('queues', ['queue', 'priority', 'deserved', 'limit',
                         'fair share', 'allocated', 'demand'], rows),
        h('h2', {}, 'GPUs over the last 6 hours'),
        charts.length ? h('div', { class: 'grid2' }, charts) :
          h('p', { class: 'muted' }, 'No samples yet.'));
    }
    // Queues' changes and the jobs' (what they allocate) come as events;
    // the poll is for the usage samples, taken every minute.
    return { node: root, update, poll: 60000, kinds: ['queue'] };
  }

  function pageJobs(params) {
    const root = h('section', { id: 'page-jobs' }, h('h1', {}, 'Jobs'));
    const state = h('select', { id: 'f-state', 'aria-label': 'state' },
      ['active', 'all', ...STATES].map((x) => h('option', { value: x }, x)));
    state.value = params.get('state') || 'active';
    const search = h('input', { id: 'f-search', type: 'search',
      placeholder: 'search id, name, user, queue, reason',
      'aria-label': 'search' });
    search.value = params.get('q') || '';
    const count = h('span', { class: 'muted', id: 'f-count' });
    const body = h('div', {});
    let last = [];
    const draw = () => {
      const q = search.value.trim().toLowerCase();
      const shown = last.filter((j) => !q || [String(j.id), j.name, j.user,
        j.queue, j.reason || '', j.state].some((x) =>
        (x || '').toLowerCase().includes(q)));
      count.textContent = `${shown.length} of ${last.length}`;
      body.replaceChildren(table('jobs', ['id', 'name', 'user', 'queue',
        'class', 'state', 'GPUs', 'age', 'why / how', ''],
      shown.map((j) => h('tr', { 'data-job': j.id, class: 'row-' + j.state },
        h('td', { class: 'n' }, h('a', { href: '#/jobs/' + j.id }, j.id)),
        // The reason again under the name, for a phone's narrow table.
        h('td', {}, j.name, j.reason ?
          h('div', { class: 'reason-m' }, j.reason) : null),
        h('td', {}, j.user), h('td', {}, j.queue),
        h('td', {}, j.class), h('td', {}, badge(j.state)),
        h('td', { class: 'n' }, num(jobGpus(j), 2)),
        h('td', { class: 'n' }, age(j.submit_ms)),
        h('td', { class: 'reason' }, j.reason || ''),
        h('td', {}, actions(j))))));
    };
    const go = () => {
      const p = new URLSearchParams();
      if (state.value !== 'active') p.set('state', state.value);
      if (search.value) p.set('q', search.value);
      history.replaceState(null, '', '#/jobs' + (p.toString() ? '?' + p : ''));
    };
    state.addEventListener('change', () => { go(); update(); });
    search.addEventListener('input', () => { go(); draw(); });
    root.append(h('div', { class: 'filters' }, state, search, count), body);
    async function update() {
      const st = state.value === 'all' ? '' : '&state=' + state.value;
      // The newest 1000 (ids ascending would be the oldest).
      const r = await api('/v1/jobs?limit=1000&order=desc' + st);
      last = r.jobs.sort((a, b) => b.id - a.id);
      draw();
    }
    return { node: root, update };
  }

  function pageJob(id) {
    const root = h('section', { id: 'page-job', 'data-job': id });
    const body = h('div', {});
    const log = h('pre', { id: 'log', class: 'log', tabindex: 0 });
    let logOff = 0, logRun = null, timer = null, job = null;
    root.append(body, h('div', { class: 'card' },
      h('h2', {}, 'Log (task 0, live)'), log));
    async function tail() {
      if (!job || !job.tasks) return;
      if (logRun !== job.restart_count) {
        logRun = job.restart_count;
        logOff = 0;
        log.textContent = '';
      }
      const text = await api(`/v1/jobs/${id}/logs?task=0&restart=` +
        `${logRun}&offset=${logOff}`, { raw: true });
      if (text) {
        logOff += new TextEncoder().encode(text).length;
        log.append(text);
        const max = 200000;
        if (log.textContent.length > max) {
          log.textContent = log.textContent.slice(-max);
        }
        log.scrollTop = log.scrollHeight;
      }
    }
    async function update() {
      job = await api('/v1/jobs/' + id);
      const j = job;
      const hist = j.history || [];
      const t0 = hist.length ? hist[0].time_ms : j.submit_ms;
      const t1 = j.end_ms || Date.now();
      // The timeline: a segment per state, from each event to the next.
      const segs = [];
      let cur = 'pending';
      hist.forEach((e, i) => {
        const next = i + 1 < hist.length ? hist[i + 1].time_ms : t1;
        const to = { started: 'running', completed: 'completed',
                     failed: 'failed', cancelled: 'cancelled',
                     evicted: 'failed', timeout: 'failed',
                     idle_timeout: 'failed', held: 'held',
                     out_of_memory: 'out_of_memory',
                     released: 'pending', preempted: 'pending',
                     requeued: 'pending', moved: 'pending',
                     resized: 'pending', submitted: 'pending' }[e.event];
        if (to) cur = to;
        if (next > e.time_ms && !['completed', 'failed', 'cancelled',
                                  'out_of_memory'].includes(cur)) {
          segs.push({ state: cur, from: e.time_ms, to: next });
        }
      });
      const width = Math.max(1, t1 - t0);
      body.replaceChildren(
        h('h1', {}, `Job ${j.id} `, h('span', { class: 'muted' }, j.name),
          ' ', badge(j.state)),
        h('div', { class: 'card' },
          h('dl', { class: 'facts' },
            ...[['user', j.user], ['queue', j.queue], ['class', j.class],
                ['tasks', j.tasks], ['GPUs', num(jobGpus(j), 2)],
                ['submitted', when(j.submit_ms)],
                ['started', when(j.start_ms)], ['ended', when(j.end_ms)],
                ['restarts', j.restart_count],
                ['why / how', j.reason || '-'],
                ['command', (j.command || []).join(' ')]]
              .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
          h('div', { class: 'acts-line' }, actions(j))),
        h('div', { class: 'card' }, h('h2', {}, 'Timeline'),
          h('div', { class: 'timeline', 'aria-hidden': 'true' },
            segs.map((x) => wide(h('div', {
              class: `seg st-${x.state}`,
              title: `${x.state} ${span(x.to - x.from)}` }),
            Math.max(0.5, 100 * (x.to - x.from) / width)))),
          h('ol', { class: 'history' }, hist.map((e) =>
            h('li', {}, h('time', {}, when(e.time_ms)), ' ',
              h('strong', {}, e.event), e.detail ? ': ' + e.detail : '')))),
        h('div', { class: 'card' }, h('h2', {}, 'Placement'),
          (j.placement || []).length ? table('placement',
            ['task', 'node', 'GPUs', 'done', 'exit'],
            j.placement.map((p) => h('tr', {},
              h('td', { class: 'n' }, p.task), h('td', {}, p.node),
              h('td', {}, (p.gpus || []).join(',') || (p.gpu_milli ?
                (p.gpu_milli / 1000) + ' GPU' : '-')),
              h('td', {}, p.done ? 'yes' : 'no'),
              h('td', { class: 'n' }, p.done ? p.exit_code : '-')))) :
            h('p', { class: 'muted' }, 'Not placed.')));
      await tail();
      clearTimeout(timer);
      if (j.state === 'running') {
        timer = setTimeout(() => {
          if (current && current.node === root) update().catch(() => {});
        }, 2000);
      }
    }
    return { node: root, update, job: Number(id) };
  }

  // ------------------------------------------------------------ the shell

  function route() {
    const hs = location.hash.replace(/^#\/?/, '');
    const [path, qs] = hs.split('?');
    const parts = path.split('/').filter(Boolean);
    return { page: parts[0] || 'overview', id: parts[1],
             params: new URLSearchParams(qs || '') };
  }

  async function show() {
    if (!token) return;
    const r = route();
    for (const a of document.querySelectorAll('#nav a')) {
      a.classList.toggle('here', a.dataset.page === r.page);
    }
    let page;
    if (r.page === 'jobs' && r.id) page = pageJob(r.id);
    else if (r.page === 'nodes') page = pageNodes();
    else if (r.page === 'queues') page = pageQueues();
    else if (r.page === 'jobs') page = pageJobs(r.params);
    else page = pageOverview();
    current = page;
    $('#view').replaceChildren(page.node);
    await refresh();
  }

  async function refresh() {
    const page = current;
    if (!page) return;
    try {
      updatedAt = Date.now();
      await page.update();
      updates++;
      document.body.dataset.updates = String(updates);
    } catch (e) {
      if (e.status === 401 || page !== current) return;
      page.node.replaceChildren(h('p', { class: 'error' },
        'Cannot load this page: ' + e.message));
    }
  }

  // A live change: refresh the page shown, at most every 250 ms.
  function scheduleUpdate() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      refresh();
    }, 250);
  }

  // kind: 'job', 'node' or 'queue' (the SSE event's type).
  function feed(e, kind) {
    const list = $('#events');
    let text, href;
    if (kind === 'job') {
      text = `job ${e.job}` + (e.name ? ` (${e.name})` : '');
      href = '#/jobs/' + e.job;
    } else {
      text = `${kind} ${e[kind]}`;
      href = '#/' + kind + 's';
    }
    text += ` ${e.event}` + (e.detail ? ': ' + e.detail : '');
    list.prepend(h('li', { class: 'ev-' + e.event, 'data-event': e.id,
                           'data-kind': kind },
      h('time', {}, when(e.time).slice(11)), ' ',
      h('a', { href }, text)));
    while (list.children.length > 50) list.lastChild.remove();
  }

  function onMessage(block) {
    let event = 'message', data = '';
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const k = i < 0 ? line : line.slice(0, i);
      const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (k === 'event') event = v;
      else if (k === 'data') data += v;
    }
    if (!data) return;
    const d = JSON.parse(data);
    if (event === 'ready') {
      if (cursor === null) cursor = d.cursor;
    } else if (event === 'gap') {
      cursor = d.cursor;
      scheduleUpdate();
    } else if (event === 'job') {
      cursor = d.id;
      feed(d, event);
      if (!current || current.job === undefined || current.job === d.job) {
        scheduleUpdate();
      }
    } else if (event === 'node' || event === 'queue') {
      // A node's or a queue's change refreshes the pages that show it.
      cursor = d.id;
      feed(d, event);
      if (current && current.kinds && current.kinds.includes(event)) {
        scheduleUpdate();
      }
    }
  }

  function setLive(on) {
    const l = $('#live');
    l.textContent = on ? 'live' : 'offline';
    l.classList.toggle('off', !on);
  }

  // Reads GET /v1/events for as long as the tab is logged in, coming back
  // after a second from where it was when the stream breaks.
  async function follow() {
    while (token) {
      const ctl = new AbortController();
      stream = ctl;
      try {
        const q = cursor === null ? 'last=20' : 'since=' + cursor;
        const r = await fetch('/v1/events?' + q, {
          headers: { Authorization: 'Bearer ' + token,
                     Accept: 'text/event-stream' },
          cache: 'no-store', signal: ctl.signal });
        if (r.status === 401) {
          logout('The controller refused this token.');
          return;
        }
        if (r.ok) {
          setLive(true);
          const reader = r.body.getReader();
          const dec = new TextDecoder();
          let buf = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true }).replace(/\r/g, '');
            let i;
            while ((i = buf.indexOf('\n\n')) >= 0) {
              const block = buf.slice(0, i);
              buf = buf.slice(i + 2);
              onMessage(block);
            }
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      setLive(false);
      if (stream !== ctl) return;
      await sleep(1000);
    }
  }

  function logout(why) {
    token = null;
    me = null;
    current = null;
    cursor = null;
    sessionStorage.removeItem(KEY);
    if (stream) stream.abort();
    stream = null;
    setLive(false);
    $('#nav').hidden = true;
    $('#logout').hidden = true;
    $('#feed').hidden = true;
    $('#who').textContent = '';
    $('#events').replaceChildren();
    $('#view').replaceChildren();
    $('#login').hidden = false;
    $('#login-error').textContent = why || '';
    $('#token').value = '';
    $('#token').focus();
  }

  async function login(t) {
    token = t;
    try {
      me = await api('/v1/whoami');
    } catch (e) {
      if (token) logout('Cannot log in: ' + e.message);
      return false;
    }
    sessionStorage.setItem(KEY, t);
    $('#login').hidden = true;
    $('#nav').hidden = false;
    $('#logout').hidden = false;
    $('#feed').hidden = false;
    $('#who').textContent = `${me.user} (${me.role})`;
    follow();
    await show();
    return true;
  }

  function start() {
    $('#login').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('#token').value.trim();
      if (t) login(t);
    });
    $('#logout').addEventListener('click', () => logout());
    window.addEventListener('hashchange', () => show());
    // What the event stream does not carry (the GPUs' telemetry, the
    // usage samples) shows by a refresh of the nodes, queues and overview
    // pages now and then (their poll), while the tab is seen; nodes' and
    // queues' changes come as events.
    setInterval(() => {
      if (token && current && current.poll && !document.hidden &&
          Date.now() - updatedAt >= current.poll) {
        scheduleUpdate();
      }
    }, 500);
    if (token) login(token);
    else logout();
  }

  start();
})();
