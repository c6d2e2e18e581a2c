// The dashboard page's own script: reads the data that `gdnbench dashboard` put in #gdn-data and
// draws the header, one table per op (sortable, filtered), the ratio and roofline charts, the prefill
// heat map and the history. It decides nothing: ratios, best peers and regression statuses come
// computed in the data (src/dashboard/dashboard_data.cpp). Charts are Chart.js, inlined before this
// script. Every chart is drawn synchronously (animation off), so the page is complete when this
// script returns; it then records its timings on <body> (data-ready, data-render-ms, data-ready-ms).
(function () {
  'use strict';
  const started = performance.now();
  const data = JSON.parse(document.getElementById('gdn-data').textContent);
  const app = document.getElementById('app');
  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;

  // ---- small tools -----------------------------------------------------------------------------
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const isNum = (x) => typeof x === 'number' && isFinite(x);
  const us = (s) => (isNum(s) ? (s * 1e6).toFixed(2) : '-');
  const ratioText = (x) => (isNum(x) ? x.toFixed(2) + 'x' : '-');
  const pct = (x) => (isNum(x) ? x.toFixed(1) : '-');
  const shortText = (s, n) => (s.length > n ? s.slice(0, n - 1) + '\u2026' : s);
  const palette = ['#0969da', '#1a7f37', '#8250df', '#bf3989', '#953800', '#1b7c83', '#4d2d00', '#6639ba', '#0550ae', '#116329'];
  const peerPalette = ['#e16f24', '#cf222e', '#9a6700', '#a475f9', '#d4a72c', '#fb8f44'];
  const colorOf = (i, ours) => (ours ? palette : peerPalette)[i % (ours ? palette.length : peerPalette.length)];
  function section(id, title) {
    const s = document.createElement('section');
    s.id = id;
    s.innerHTML = '<h2>' + esc(title) + '</h2>';
    app.appendChild(s);
    return s;
  }
  function add(parent, tag, cls, html) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (html !== undefined) e.innerHTML = html;
    parent.appendChild(e);
    return e;
  }
  function chartBox(parent, cls) {
    const box = add(parent, 'div', 'chart' + (cls ? ' ' + cls : ''));
    return add(box, 'canvas');
  }
  const headsKey = (h) => h.split('/').map(Number);
  function cmpNullLast(a, b, dir) {
    const na = a === null || a === undefined || (typeof a === 'number' && !isFinite(a));
    const nb = b === null || b === undefined || (typeof b === 'number' && !isFinite(b));
    if (na || nb) return na === nb ? 0 : na ? 1 : -1;
    if (Array.isArray(a)) {
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] < b[i] ? -1 : 1) * dir;
      return 0;
    }
    return (a < b ? -1 : a > b ? 1 : 0) * dir;
  }
  function mark(status, why) {
    const title = why ? ' title="' + esc(why) + '"' : '';
    if (status === 'verify_failed') return '<span class="mark fail"' + title + '>FAIL</span>';
    if (status === 'skipped') return '<span class="mark skip"' + title + '>skipped</span>';
    if (status === 'error') return '<span class="mark err"' + title + '>error</span>';
    return '';
  }

  // ---- header ----------------------------------------------------------------------------------
  function renderHeader() {
    const s = section('header', 'Runs');
    let html = '<table class="header"><thead><tr>' +
      ['report', 'source', 'commit', 'config', 'config hash', 'device', 'driver / CUDA / CUPTI', 'started (UTC)', 'records', 'shown in']
        .map((h) => '<th class="text">' + h + '</th>').join('') + '</tr></thead><tbody>';
    for (const r of data.reports) {
      const d = r.devices.length ? r.devices[0] : { driver: '-', cuda: '-', cupti: '-' };
      const started = r.started_at.replace('T', ' ').replace(/:\d\dZ$/, '');
      html += '<tr>' + [r.file, r.source + ' ' + r.version, r.git_sha || '-', r.config_path, r.config_hash, r.device,
        d.driver + ' / ' + d.cuda + ' / ' + (d.cupti || 'none'), started + (r.complete ? '' : ' (incomplete)'), r.records,
        r.current ? 'tables' : 'history']
        .map((v) => '<td>' + esc(v) + '</td>').join('') + '</tr>';
    }
    s.insertAdjacentHTML('beforeend', html + '</tbody></table>');
    add(s, 'p', 'note', esc(data.flop_convention) + ' Times are medians in microseconds; ours / best peer above 1 means ' +
      'the fastest verified peer on the same device is faster. The tables, charts and heat map show the newest run of each ' +
      'source, config and device; earlier runs make the history.');
  }

  // ---- filters ---------------------------------------------------------------------------------
  const filters = { variant: '', peer: '', heads: '', seqs: '', status: '', shape: '' };
  const listeners = [];
  function renderFilters() {
    const variants = new Set(), peers = new Set(), heads = new Set(), seqs = new Set();
    for (const op of data.ops) {
      op.columns.forEach((c) => peers.add(c));
      for (const r of op.rows) variants.add(r.variant), heads.add(r.heads), seqs.add(r.seqs);
    }
    const bar = add(app, 'div', 'filters');
    bar.id = 'filters';
    const select = (key, label, values) => {
      const opts = ['<option value="">all</option>'].concat(values.map((v) => '<option value="' + esc(v) + '">' + esc(v) + '</option>'));
      add(bar, 'label', '', esc(label) + '<select id="filter-' + key + '">' + opts.join('') + '</select>');
    };
    select('variant', 'variant', [...variants].sort());
    select('peer', 'peer', [...peers].sort());
    select('heads', 'heads', [...heads].sort((a, b) => cmpNullLast(headsKey(a), headsKey(b), 1)));
    select('seqs', 'sequences', [...seqs].sort((a, b) => a.length - b.length || (a < b ? -1 : 1)));
    add(bar, 'label', '', 'show<select id="filter-status">' +
      [['', 'every row'], ['fastest', 'our fastest variant per point'], ['peer_faster', 'a peer faster'], ['verify_failed', 'failed verification'], ['skipped', 'skipped'],
        ['error', 'error'], ['ok', 'verified and timed']].map(([v, t]) => '<option value="' + v + '">' + t + '</option>').join('') +
      '</select>');
    add(bar, 'label', '', 'shape contains<input id="filter-shape" type="search" size="18">');
    for (const key of Object.keys(filters)) {
      const input = document.getElementById('filter-' + key);
      input.addEventListener(key === 'shape' ? 'input' : 'change', () => {
        filters[key] = input.value;
        listeners.forEach((f) => f());
      });
    }
  }
  function rowPasses(r, columns) {
    if (filters.variant && r.variant !== filters.variant) return false;
    if (filters.heads && r.heads !== filters.heads) return false;
    if (filters.seqs && r.seqs !== filters.seqs) return false;
    if (filters.shape && r.shape.indexOf(filters.shape) < 0) return false;
    if (filters.peer) {
      const c = columns.indexOf(filters.peer);
      if (c < 0 || !r.peers[c]) return false;
    }
    if (filters.status === 'peer_faster') return isNum(r.ratio) && r.ratio > 1;
    if (filters.status === 'fastest') return r.fastest;
    if (filters.status) return r.status === filters.status;
    return true;
  }

  // ---- one op: summary, ratio chart, table -----------------------------------------------------
  function rateText(r) {
    const m = r.rate;
    if (!m.bandwidth_bound && isNum(m.tflops))
      return m.tflops.toFixed(1) + ' / ' + (isNum(m.tflops_fi) ? m.tflops_fi.toFixed(1) : '-') + ' TFLOP/s';
    return isNum(m.tbps) ? m.tbps.toFixed(3) + ' TB/s' : '-';
  }
  function renderOp(op) {
    const s = section('op-' + op.op, op.op + ': ours against every peer, per shape');
    const sum = op.summary;
    if (sum) {
      let text = 'A peer is faster on <b>' + sum.peer_ahead + ' of ' + sum.compared + '</b> points; ours / best peer, geometric mean <b>' +
        ratioText(sum.geomean) + '</b> (each point once, at our fastest variant).';
      for (const p of sum.per_peer) text += ' ' + esc(p.peer) + ': ours / it ' + ratioText(p.geomean) + ' over ' + p.points + ' points, faster on ' + p.ahead + '.';
      for (const d of sum.other_devices) text += ' Peer records from ' + esc(d) + ' are not compared.';
      add(s, 'p', 'summary', text);
    } else {
      add(s, 'p', 'summary', 'No peer report has a verified number at these points.');
    }
    let chart = null;
    if (op.columns.length) {
      add(s, 'h3', '', 'ours / best peer per point, our fastest variant at each (or the chosen variant); above 1: a peer is faster');
      chart = new Chart(chartBox(s, 'small'), {
        type: 'bar',
        data: { labels: [], datasets: [{ label: 'ours / best peer', data: [], backgroundColor: [] }] },
        options: {
          plugins: { legend: { display: false }, tooltip: { callbacks: { label: (c) => ratioText(c.raw) } } },
          scales: { x: { ticks: { display: false }, title: { display: true, text: 'points, worst first (hover for the shape)' } },
            y: { type: 'logarithmic', title: { display: true, text: 'ours / best peer (log scale)' } } }
        }
      });
    }
    const cols = [
      { name: 'variant', cls: 'text', key: (r) => r.variant },
      { name: 'shape', cls: 'text', key: (r) => r.shape },
      { name: 'heads', key: (r) => headsKey(r.heads) },
      { name: 'sequences', key: (r) => r.seqs },
      { name: 'ours us', key: (r) => r.t }
    ];
    op.columns.forEach((c, i) => cols.push({ name: c + ' us', key: (r) => (r.peers[i] ? r.peers[i].t : null) }));
    cols.push({ name: 'best peer', cls: 'text', key: (r) => (r.best >= 0 ? op.columns[r.best] : null) },
      { name: 'ours / best', key: (r) => r.ratio, id: 'ratio' },
      { name: 'ours rate', key: (r) => (r.rate.bandwidth_bound ? r.rate.tbps : r.rate.tflops) },
      { name: 'roof %', key: (r) => r.rate.roof },
      { name: 'notes', cls: 'text', key: (r) => r.why });
    const count = add(s, 'p', 'muted');
    count.id = 'count-' + op.op;
    const wrap = add(s, 'div', 'scroll');
    const table = add(wrap, 'table', 'rows');
    table.id = 'table-' + op.op;
    table.innerHTML = '<thead><tr>' + cols.map((c, i) => '<th class="sortable ' + (c.cls || '') + '" data-col="' + i + '"' +
      (c.id ? ' data-id="' + c.id + '"' : '') + '>' + esc(c.name) + '</th>').join('') + '</tr></thead>';
    let body = '';
    for (const r of op.rows) {
      const classes = [r.status === 'ok' ? '' : r.status.replace('_', '-'), isNum(r.ratio) && r.ratio > 1 ? 'peer-faster' : ''].join(' ').trim();
      let tr = '<tr class="' + classes + '" data-variant="' + esc(r.variant) + '" data-status="' + esc(r.status) + '">';
      tr += '<td class="text">' + esc(r.variant) + '</td><td class="shape">' + esc(r.shape) + '</td><td>' + esc(r.heads) + '</td><td>' + esc(r.seqs) + '</td>';
      tr += '<td>' + (isNum(r.t) ? us(r.t) : '') + mark(r.status, r.why) + '</td>';
      r.peers.forEach((p, i) => {
        if (!p) { tr += '<td class="muted">-</td>'; return; }
        if (isNum(p.t)) { tr += '<td' + (i === r.best ? ' class="best" title="fastest verified peer"' : '') + '>' + us(p.t) + (i === r.best ? '*' : '') + '</td>'; return; }
        tr += '<td>' + (mark(p.status, p.why) || '<span class="muted" title="' + esc(p.why) + '">n/a</span>') +
          (p.why ? '<div class="why" title="' + esc(p.why) + '">' + esc(shortText(p.why, 60)) + '</div>' : '') + '</td>';
      });
      tr += '<td class="text">' + (r.best >= 0 ? esc(op.columns[r.best]) : '-') + '</td>';
      tr += '<td class="ratio">' + ratioText(r.ratio) + (isNum(r.ratio) && r.ratio > 1 ? '<span class="mark faster" title="a peer is faster">peer faster</span>' : '') + '</td>';
      tr += '<td>' + rateText(r) + '</td><td' + (r.rate.roof_note ? ' title="' + esc(r.rate.roof_note) + '"' : '') + '>' +
        (isNum(r.rate.roof) ? pct(r.rate.roof) : r.rate.roof_note ? '&gt;peak*' : '-') + '</td>';
      tr += '<td class="why">' + esc(r.why) + '</td></tr>';
      body += tr;
    }
    const tbody = add(table, 'tbody', '', body);
    const trs = Array.from(tbody.children);
    const items = op.rows.map((r, i) => ({ r: r, tr: trs[i] }));
    let sortCol = -1, sortDir = 1;
    function sortBy(th, c, dir, fastestFirst) {
      sortCol = c;
      sortDir = dir;
      table.querySelectorAll('th').forEach((h) => h.classList.remove('sorted-asc', 'sorted-desc'));
      th.classList.add(sortDir > 0 ? 'sorted-asc' : 'sorted-desc');
      const key = cols[c].key;
      items.sort((a, b) => (fastestFirst ? b.r.fastest - a.r.fastest : 0) || cmpNullLast(key(a.r), key(b.r), sortDir));
      const frag = document.createDocumentFragment();
      items.forEach((it) => frag.appendChild(it.tr));
      tbody.appendChild(frag);
    }
    const heads = Array.from(table.querySelectorAll('th.sortable'));
    heads.forEach((th) => th.addEventListener('click', () => {
      const c = Number(th.dataset.col);
      sortBy(th, c, c === sortCol ? -sortDir : cols[c].id === 'ratio' ? -1 : 1);
    }));
    // Our fastest variant at each point first, worst ratio first; then our other variants the same
    // way; rows without a ratio keep their report order below. A click sorts by the column alone.
    const ratioCol = cols.findIndex((c) => c.id === 'ratio');
    sortBy(heads[ratioCol], ratioCol, -1, true);
    function apply() {
      let shown = 0;
      const bars = [];
      for (const it of items) {
        const pass = rowPasses(it.r, op.columns);
        it.tr.classList.toggle('hidden-row', !pass);
        if (!pass) continue;
        ++shown;
        if (isNum(it.r.ratio) && (filters.variant || it.r.fastest)) bars.push(it.r);
      }
      count.textContent = shown + ' of ' + items.length + ' rows';
      count.dataset.shown = shown;
      if (!chart) return;
      bars.sort((a, b) => b.ratio - a.ratio);
      chart.data.labels = bars.map((r) => r.variant + '  ' + r.shape);
      chart.data.datasets[0].data = bars.map((r) => r.ratio);
      chart.data.datasets[0].backgroundColor = bars.map((r) => (r.ratio > 1 ? '#cf222e' : '#2da44e'));
      chart.update();
    }
    listeners.push(apply);
  }

  // ---- roofline --------------------------------------------------------------------------------
  function renderRoofline() {
    if (!data.roofline.length) return;
    const s = section('roofline', 'Roofline');
    add(s, 'p', 'note', 'Each timed, verified record at its arithmetic intensity (FLOP per byte of minimal traffic) against ' +
      'the calibrated peaks of its device (gdnbench calibrate): the dense bf16 MMA rate, and the copy bandwidth times the ' +
      'intensity. ' + esc(data.flop_convention));
    const devices = data.roofline.slice().sort((a, b) => b.points.length - a.points.length);
    for (const dev of devices) {
      const bw = dev.peaks.copy_bandwidth || dev.peaks.host_bandwidth || null;
      const mma = dev.peaks.bf16_mma || null;
      const peaksText = [bw ? (bw / 1e12).toFixed(2) + ' TB/s ' + (dev.peaks.copy_bandwidth ? 'copy bandwidth' : 'host bandwidth') : 'no bandwidth peak',
        mma ? (mma / 1e12).toFixed(0) + ' TFLOP/s bf16 MMA' : 'no MMA peak'].join(', ');
      add(s, 'h3', '', esc(dev.device) + ': ' + esc(peaksText));
      const byVariant = new Map();
      for (const p of dev.points) {
        if (!byVariant.has(p.variant)) byVariant.set(p.variant, []);
        byVariant.get(p.variant).push(p);
      }
      let oursIdx = 0, peerIdx = 0;
      const datasets = [];
      for (const [variant, pts] of byVariant) {
        const ours = pts[0].ours;
        datasets.push({ label: variant, data: pts.map((p) => ({ x: p.ai, y: p.tflops, p: p })), pointStyle: ours ? 'circle' : 'triangle',
          pointRadius: ours ? 4 : 5, backgroundColor: colorOf(ours ? oursIdx++ : peerIdx++, ours), showLine: false });
      }
      const ais = dev.points.map((p) => p.ai);
      const lo = Math.min(...ais) / 2, hi = Math.max(...ais) * 2;
      if (bw || mma) {
        const roof = (ai) => Math.min(mma ? mma / 1e12 : Infinity, bw ? ai * bw / 1e12 : Infinity);
        const xs = [lo, hi];
        if (bw && mma && mma / bw > lo && mma / bw < hi) xs.splice(1, 0, mma / bw);
        datasets.push({ label: 'roof', data: xs.map((x) => ({ x: x, y: roof(x) })), showLine: true, borderColor: '#57606a',
          borderDash: [6, 4], pointRadius: 0, fill: false });
      }
      new Chart(chartBox(s), {
        type: 'scatter',
        data: { datasets: datasets },
        options: {
          scales: { x: { type: 'logarithmic', title: { display: true, text: 'FLOP / byte' } },
            y: { type: 'logarithmic', title: { display: true, text: 'achieved TFLOP/s' } } },
          plugins: { tooltip: { callbacks: { label: (c) => {
            const p = c.raw.p;
            if (!p) return 'roof ' + c.raw.y.toFixed(1) + ' TFLOP/s';
            return p.variant + ' ' + p.shape + ': ' + p.tflops.toFixed(2) + ' TFLOP/s, ' + (isNum(p.tbps) ? p.tbps.toFixed(3) + ' TB/s, ' : '') +
              'roof ' + pct(p.roof) + ' %';
          } } } }
        }
      });
    }
  }

  // ---- heat map --------------------------------------------------------------------------------
  function heatColor(r) {
    const t = Math.max(-1, Math.min(1, Math.log2(r)));  // 0.5x .. 2x
    const a = Math.abs(t);
    const [R, G, B] = t > 0 ? [207, 34, 46] : [45, 164, 78];
    return 'rgb(' + Math.round(255 + (R - 255) * a) + ',' + Math.round(255 + (G - 255) * a) + ',' + Math.round(255 + (B - 255) * a) + ')';
  }
  function renderHeatmap() {
    const h = data.heatmap;
    if (!h || !h.cells.length) return;
    const s = section('heatmap', 'prefill: ours / best peer over heads x sequence sets');
    add(s, 'p', 'note', 'At each point our fastest variant over the fastest verified peer; a cell holding several points ' +
      '(other axes differ) shows their geometric mean and, in brackets, how many. Green: ours is faster; red: a peer is; ' +
      'full colour at 2x either way.');
    const at = new Map(h.cells.map((c) => [c.heads + '|' + c.seqs, c]));
    let html = '<table class="heat" id="heat-table"><thead><tr><th>h_qk/h_v \\ sequences</th>' + h.seqs.map((q) => '<th>' + esc(q) + '</th>').join('') + '</tr></thead><tbody>';
    for (const hd of h.heads) {
      html += '<tr><th>' + esc(hd) + '</th>';
      for (const q of h.seqs) {
        const c = at.get(hd + '|' + q);
        html += c ? '<td style="background:' + heatColor(c.ratio) + '" title="' + c.points + ' point(s)">' + ratioText(c.ratio) +
          (c.points > 1 ? ' <span class="muted">(' + c.points + ')</span>' : '') + '</td>' : '<td class="muted">-</td>';
      }
      html += '</tr>';
    }
    s.insertAdjacentHTML('beforeend', html + '</tbody></table>');
  }

  // ---- history ---------------------------------------------------------------------------------
  function renderHistory() {
    if (!data.history.length) return;
    const s = section('history', 'History');
    add(s, 'p', 'note', 'Runs of the same config on the same device, oldest first. Each point is judged against the run before ' +
      'it as gdnbench compare judges (threshold ' + data.history[0].threshold_pct + ' % unless a case sets its own, beyond the ' +
      'measured noise, or by the U test where both runs have repetitions; CPU times are shown, not judged): red points are ' +
      'slower or failed verification, green ones faster.');
    const maxLines = 24;
    for (const h of data.history) {
      add(s, 'h3', '', esc(h.config_path) + ' (' + esc(h.config_hash) + ') on ' + esc(h.device) + ': ' + h.runs.length + ' runs, ' +
        h.regressions.length + ' regression(s) flagged');
      const note = add(s, 'p', 'muted');
      const chart = new Chart(chartBox(s), {
        type: 'line',
        data: { labels: h.runs.map((r) => r.label), datasets: [] },
        options: {
          spanGaps: true,
          scales: { y: { type: 'logarithmic', title: { display: true, text: 'median us' } } },
          plugins: { legend: { position: 'right', labels: { boxWidth: 10, font: { size: 10 } } },
            tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + c.raw + ' us' + (c.dataset.status[c.dataIndex] ? ' (' + c.dataset.status[c.dataIndex] + ')' : '') } } }
        }
      });
      function apply() {
        const lines = h.lines.filter((l) => (!filters.variant || l.variant === filters.variant) && (!filters.shape || l.shape.indexOf(filters.shape) >= 0));
        // Lines with a flagged point first, so a regression is never among those left out.
        const flagged = (l) => l.status.some((st) => st === 'slower' || st === 'failed-verification');
        lines.sort((a, b) => flagged(b) - flagged(a));
        const drawn = lines.slice(0, maxLines);
        note.textContent = 'Drawing ' + drawn.length + ' of ' + lines.length + ' lines' + (lines.length > maxLines ? ' (flagged ones first; the filters narrow them)' : '') + '.';
        chart.data.datasets = drawn.map((l, i) => ({
          label: l.variant + ' ' + l.shape, status: l.status,
          data: l.t.map((t) => (isNum(t) ? Number((t * 1e6).toFixed(3)) : null)),
          borderColor: colorOf(i, true), backgroundColor: colorOf(i, true),
          pointRadius: l.status.map((st) => (st === 'slower' || st === 'failed-verification' || st === 'faster' ? 6 : 3)),
          pointBackgroundColor: l.status.map((st) => (st === 'slower' || st === 'failed-verification' ? '#cf222e' : st === 'faster' ? '#2da44e' : colorOf(i, true)))
        }));
        chart.options.plugins.legend.display = drawn.length <= 12;
        chart.update();
      }
      listeners.push(apply);
      if (!h.regressions.length) continue;
      let html = '<table class="regressions"><thead><tr>' + ['status', 'variant', 'shape', 'from', 'to', 'base us', 'new us', 'change', 'threshold', 'noise', 'note']
        .map((x) => '<th class="text">' + x + '</th>').join('') + '</tr></thead><tbody>';
      for (const g of h.regressions)
        html += '<tr class="' + (g.status === 'slower' ? 'slower' : 'verify-failed') + '"><td><span class="mark slower">' + esc(g.status) + '</span></td><td class="text">' + esc(g.variant) +
          '</td><td class="shape">' + esc(g.shape) + '</td><td>' + esc(h.runs[g.from].label) + '</td><td>' + esc(h.runs[g.to].label) + '</td><td>' + us(g.base_s) +
          '</td><td>' + us(g.new_s) + '</td><td>' + (isNum(g.change_pct) ? (g.change_pct > 0 ? '+' : '') + g.change_pct.toFixed(2) + ' %' : '-') + '</td><td>' +
          g.threshold_pct + ' %</td><td>' + (isNum(g.noise_pct) ? g.noise_pct.toFixed(2) + ' %' : '-') + '</td><td class="why">' + esc(g.note) + '</td></tr>';
      s.insertAdjacentHTML('beforeend', html + '</tbody></table>');
    }
  }

  renderHeader();
  renderFilters();
  data.ops.forEach(renderOp);
  renderHeatmap();
  renderRoofline();
  renderHistory();
  listeners.forEach((f) => f());
  const done = performance.now();
  document.body.dataset.renderMs = (done - started).toFixed(1);  // this script alone
  document.body.dataset.readyMs = done.toFixed(1);               // since navigation started
  document.body.dataset.ready = '1';
})();
