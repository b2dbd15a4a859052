/// The lab's page: plain HTML, CSS and hand-written JavaScript, compiled into the binary (no CDN,
/// no build step, nothing fetched but the lab's own API and the media its runs made).
enum LabPage {
    struct Asset: Sendable {
        var path: String
        var type: String
        var body: String
    }

    static let assets: [Asset] = [
        Asset(path: "/", type: "text/html; charset=utf-8", body: html),
        Asset(path: "/lab.css", type: "text/css; charset=utf-8", body: css),
        Asset(path: "/lab.js", type: "text/javascript; charset=utf-8", body: script),
    ]

    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Attache lab</title>
    <link rel="stylesheet" href="/lab.css">
    <link rel="icon" href="data:,">
    <script src="/lab.js" defer></script>
    </head>
    <body>
    <header>
      <h1>Attache lab</h1>
      <p>Run a push payload through the real enrichment, watch where its time goes, and see what a phone would show.</p>
    </header>
    <section id="auth" hidden aria-labelledby="auth-title">
      <h2 id="auth-title">Token</h2>
      <p>This lab listens beyond loopback and asks for the token it was started with.</p>
      <form id="auth-form"><label for="token">Bearer token</label> <input id="token" type="password" autocomplete="off"> <button type="submit">Use token</button></form>
    </section>
    <main>
    <section id="payload-section" aria-labelledby="payload-title">
      <h2 id="payload-title">1. Payload</h2>
      <div class="row">
        <label for="sample">Sample</label>
        <select id="sample"><option value="">— pick a sample payload —</option></select>
        <label for="file" class="file-label">or a file</label>
        <input id="file" type="file" accept=".json,application/json">
      </div>
      <label for="payload" class="block">Payload JSON (APNs, any SDK's keys, or an FCM v1 send request)</label>
      <textarea id="payload" spellcheck="false" rows="12" aria-describedby="json-error"></textarea>
      <div id="json-error" role="alert" hidden></div>
    </section>
    <section id="conditions" aria-labelledby="conditions-title">
      <h2 id="conditions-title">2. Conditions</h2>
      <div class="row">
        <label for="deadline-range">Deadline</label>
        <input id="deadline-range" type="range" min="100" max="10000" step="50" value="2000" aria-describedby="deadline-help">
        <input id="deadline" type="number" min="10" max="30000" step="10" value="2000" aria-label="Deadline in milliseconds"> ms
      </div>
      <p id="deadline-help" class="help">iOS gives a Notification Service Extension about 30 s; push pipelines give Attache far less.</p>
      <div class="row">
        <label for="profile">Fault on the media</label>
        <select id="profile"></select>
      </div>
      <p class="help">Faults come from the lab's own origin: the sample media, or your media fetched once (through the same address policy as every fetch) and served under the fault.</p>
      <button id="run" type="button" class="primary">Run</button>
      <span id="run-status" role="status"></span>
    </section>
    <section id="timeline-section" aria-labelledby="timeline-title">
      <h2 id="timeline-title">3. Timeline</h2>
      <div id="timeline" class="timeline"><p class="help">Run a payload to see its stages as they happen.</p></div>
      <ul id="legend" class="legend" aria-label="Stages"></ul>
    </section>
    <section id="result" aria-labelledby="result-title">
      <h2 id="result-title">4. Result</h2>
      <p id="outcome" class="outcome"></p>
      <p id="budget"></p>
      <h3>What changed</h3>
      <div class="scroll"><table id="diff"><thead><tr><th scope="col">change</th><th scope="col">key</th><th scope="col">before</th><th scope="col">after</th></tr></thead><tbody></tbody></table></div>
      <h3>Payload as sent</h3>
      <pre id="payload-out" class="code"></pre>
      <h3>Images made</h3>
      <div class="scroll"><table id="images"><thead><tr><th scope="col">attachment</th><th scope="col">rendition</th><th scope="col">format</th><th scope="col">size</th><th scope="col">bytes</th></tr></thead><tbody></tbody></table></div>
    </section>
    <section id="previews" aria-labelledby="previews-title">
      <h2 id="previews-title">5. Device previews</h2>
      <p class="help"><strong>Previews, not screenshots:</strong> drawn here with HTML from the run's title, body and images.</p>
      <div class="devices">
        <figure class="device"><figcaption>iOS, on the lock screen</figcaption><div id="preview-ios-collapsed" class="ios-banner"></div></figure>
        <figure class="device"><figcaption>iOS, expanded (long press)</figcaption><div id="preview-ios-expanded" class="ios-expanded"></div></figure>
        <figure class="device"><figcaption>Android, BigPicture</figcaption><div id="preview-android" class="android"></div></figure>
      </div>
    </section>
    <section id="sweep" aria-labelledby="sweep-title">
      <h2 id="sweep-title">6. Sweep</h2>
      <p class="help">The same payload at every deadline under every fault, run in parallel: where does it start falling back?</p>
      <div class="row"><label for="sweep-deadlines">Deadlines (ms)</label> <input id="sweep-deadlines" type="text" value="500, 2000, 8000" inputmode="numeric"></div>
      <fieldset id="sweep-profiles"><legend>Faults</legend></fieldset>
      <button id="sweep-run" type="button">Run sweep</button>
      <span id="sweep-status" role="status"></span>
      <div class="scroll"><table id="heatmap" aria-label="Outcome by fault and deadline"></table></div>
      <p id="sweep-downloads" hidden><a id="sweep-csv" download="attache-sweep.csv">Download CSV</a> · <a id="sweep-svg" download="attache-sweep.svg">Download SVG</a></p>
      <div id="sweep-cell" hidden><h3 id="sweep-cell-title"></h3><div id="sweep-timeline" class="timeline"></div></div>
    </section>
    </main>
    </body>
    </html>
    """#

    static let css = #"""
    :root { --ink: #1d1d1f; --muted: #5f6368; --line: #d0d4d9; --accent: #0b57d0; --ok: #1e6b2d; --bad: #b3261e; --warn: #7a5a00; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f6f7f9; }
    header { padding: 16px 20px 4px; }
    header h1 { margin: 0; font-size: 22px; }
    header p { margin: 4px 0 0; color: var(--muted); }
    main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; padding: 16px 20px 40px; }
    section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; min-width: 0; }
    #timeline-section, #result, #previews, #sweep { grid-column: 1 / -1; }
    #auth { margin: 0 20px; }
    h2 { margin: 0 0 10px; font-size: 17px; }
    h3 { font-size: 14px; margin: 14px 0 6px; }
    .row { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 6px 0; }
    .block { display: block; margin: 8px 0 4px; }
    .help { color: var(--muted); font-size: 13px; margin: 4px 0 8px; }
    textarea, pre.code { width: 100%; font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
    textarea { border: 1px solid var(--line); border-radius: 6px; padding: 8px; resize: vertical; }
    textarea[aria-invalid="true"] { border-color: var(--bad); outline: 2px solid var(--bad); }
    pre.code { background: #f3f4f6; border-radius: 6px; padding: 8px; white-space: pre-wrap; word-break: break-all; max-height: 260px; overflow: auto; margin: 0; }
    #json-error { margin-top: 6px; color: var(--bad); font-size: 13px; }
    #json-error pre { margin: 4px 0 0; font: 13px/1.3 ui-monospace, Menlo, Consolas, monospace; color: var(--ink); background: #fdecea; padding: 6px; overflow-x: auto; }
    input[type=number] { width: 90px; }
    input[type=range] { flex: 1 1 160px; min-width: 120px; }
    button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid var(--line); background: #fff; cursor: pointer; }
    button.primary { background: var(--accent); color: #fff; border-color: var(--accent); }
    button:disabled { opacity: .6; cursor: progress; }
    :focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
    .timeline svg { width: 100%; height: auto; display: block; }
    .legend { list-style: none; padding: 0; margin: 8px 0 0; display: flex; flex-wrap: wrap; gap: 6px 14px; font-size: 13px; }
    .legend .swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px; border: 1px solid #0003; }
    .outcome { font-size: 18px; font-weight: 600; margin: 0 0 4px; }
    .outcome[data-outcome=enriched] { color: var(--ok); }
    .outcome[data-outcome=partial] { color: var(--warn); }
    .outcome[data-outcome=fallback] { color: var(--bad); }
    meter { width: 160px; vertical-align: middle; }
    .scroll { overflow-x: auto; }
    table { border-collapse: collapse; font-size: 13px; }
    th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
    #diff td { font-family: ui-monospace, Menlo, Consolas, monospace; word-break: break-all; max-width: 420px; }
    #diff tr.added td:first-child { background: #e6f4ea; }
    #diff tr.changed td:first-child { background: #fef7e0; }
    #diff tr.removed td:first-child { background: #fce8e6; }
    .devices { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
    .device { margin: 0; flex: 1 1 300px; max-width: 360px; }
    .device figcaption { font-size: 13px; color: var(--muted); margin-bottom: 6px; }
    .ios-banner, .ios-expanded { background: rgba(245,245,247,.96); border-radius: 18px; box-shadow: 0 1px 4px #0002; padding: 10px 12px; font-family: -apple-system, "SF Pro Text", system-ui, sans-serif; }
    .ios-banner { display: flex; gap: 10px; align-items: center; }
    .app-icon { width: 32px; height: 32px; border-radius: 8px; background: linear-gradient(135deg, #4f8ef7, #1a5ad7); flex: none; }
    .ios-text { flex: 1; min-width: 0; }
    .ios-text .meta, .android .meta { font-size: 12px; color: var(--muted); display: flex; justify-content: space-between; }
    .n-title { font-weight: 600; font-size: 14px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .n-body { font-size: 14px; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
    .ios-thumb { width: 40px; height: 40px; border-radius: 6px; flex: none; background-size: cover; background-position: center; background-repeat: no-repeat; }
    .ios-expanded .media, .android .media { display: block; width: 100%; max-height: 360px; object-fit: contain; background: #000; border-radius: 12px; margin-bottom: 8px; }
    .android { background: #fff; border-radius: 16px; box-shadow: 0 1px 4px #0003; padding: 12px 14px; font-family: Roboto, system-ui, sans-serif; }
    .android .media { border-radius: 8px; margin: 8px 0 0; }
    .no-media { font-size: 12px; color: var(--muted); font-style: italic; margin-top: 6px; }
    fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; display: flex; flex-wrap: wrap; gap: 4px 14px; }
    #heatmap { margin-top: 10px; }
    #heatmap th { white-space: nowrap; }
    #heatmap td { padding: 2px; }
    #heatmap button { width: 100%; min-width: 96px; text-align: left; border: 2px solid transparent; font-size: 13px; line-height: 1.25; }
    #heatmap button[aria-pressed=true] { border-color: var(--ink); }
    #heatmap button[data-outcome=enriched] { background: #b6d7a8; }
    #heatmap button[data-outcome=partial] { background: #ffe599; }
    #heatmap button[data-outcome=fallback] { background: #ea9999; }
    #heatmap button[data-outcome=passthrough] { background: #d9d9d9; }
    #heatmap button[data-outcome=pending] { background: #f3f3f3; }
    @media (max-width: 720px) {
      main { grid-template-columns: minmax(0, 1fr); padding: 10px; gap: 10px; }
      header { padding: 12px 10px 0; }
      section { padding: 12px; }
      #diff td { max-width: 200px; }
    }
    """#

    static let script = #"""
    'use strict';
    const $ = (id) => document.getElementById(id);
    const state = { setup: null, token: sessionStorage.getItem('attache-lab-token') || '', running: false, sweepCells: {} };

    function esc(text) {
      return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
    }

    // The lab's own media are shown from wherever the page was loaded from.
    function mediaPath(url) {
      try { const u = new URL(url); return u.pathname.startsWith('/media/') ? u.pathname : url; } catch (e) { return url; }
    }

    async function api(path, body) {
      const headers = { 'Content-Type': 'application/json' };
      if (state.token) headers.Authorization = 'Bearer ' + state.token;
      const response = await fetch('/api/' + path, body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) });
      if (response.status === 401) { $('auth').hidden = false; $('token').focus(); throw new Error('the lab wants its token'); }
      return response;
    }

    async function failure(response) {
      let info = { error: 'HTTP ' + response.status };
      try { info = await response.json(); } catch (e) { /* not JSON */ }
      const error = new Error(info.error);
      error.info = info;
      return error;
    }

    // Server-Sent Events over a POST: the body is read as it arrives and cut at blank lines.
    async function stream(path, body, onEvent) {
      const response = await api(path, body);
      if (!response.ok) throw await failure(response);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data) onEvent(event, JSON.parse(data));
        }
      }
    }

    // ---- payload ----
    function showJSONError(info) {
      const box = $('json-error'), area = $('payload');
      if (!info) { box.hidden = true; box.textContent = ''; area.removeAttribute('aria-invalid'); delete box.dataset.line; delete box.dataset.column; return; }
      area.setAttribute('aria-invalid', 'true');
      box.hidden = false;
      if (info.line) {
        box.dataset.line = info.line;
        box.dataset.column = info.column;
        const line = area.value.split('\n')[info.line - 1] || '';
        box.innerHTML = '<span class="where">Line ' + info.line + ', column ' + info.column + '</span>: ' + esc(info.error) +
          '<pre aria-hidden="true">' + esc(line) + '\n' + ' '.repeat(Math.max(0, info.column - 1)) + '^</pre>';
      } else {
        box.textContent = info.error;
      }
    }

    function placeCaret(info) {
      if (!info || !info.line) return;
      const area = $('payload'), lines = area.value.split('\n');
      let offset = 0;
      for (let i = 0; i < info.line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
      offset += info.column - 1;
      area.focus();
      area.setSelectionRange(offset, Math.min(area.value.length, offset + 1));
    }

    let checkTimer = null;
    function scheduleCheck() {
      clearTimeout(checkTimer);
      checkTimer = setTimeout(async () => {
        const text = $('payload').value;
        if (!text.trim()) { showJSONError(null); return; }
        try {
          const response = await api('check', { payload: text });
          if (response.ok) showJSONError(null); else showJSONError((await failure(response)).info);
        } catch (e) { /* shown by api() */ }
      }, 300);
    }

    // ---- timeline ----
    function stageColor(name) {
      const stage = (state.setup ? state.setup.stages : []).find((s) => s.name === name);
      return stage ? stage.color : '#999';
    }

    // The span drawn follows attache timeline's rule: up to the deadline, unless the payload was
    // out long before it.
    function drawTimeline(container, run) {
      const end = Math.max(run.elapsed_ms || run.now || 0, 1);
      const deadline = run.deadline_ms;
      const span = deadline <= end * 3 ? Math.max(deadline, end) * 1.05 : end * 1.5;
      const left = 150, right = 16, top = 34, lane = 48, width = 880, plot = width - left - right;
      const lanes = run.attachments.length || 1;
      const height = top + lane * lanes + 26;
      const x = (ms) => left + (ms / span) * plot;
      const parts = ['<svg viewBox="0 0 ' + width + ' ' + height + '" role="img" aria-label="Timeline: ' + esc(run.outcome ? run.outcome : 'running') + '" font-family="ui-monospace, monospace" font-size="12">'];
      const steps = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000];
      const tick = steps.find((s) => span / s <= 10) || span / 10;
      for (let t = 0; t <= span; t += tick) {
        parts.push('<line x1="' + x(t) + '" y1="' + (top - 8) + '" x2="' + x(t) + '" y2="' + (height - 22) + '" stroke="#eee"/>');
        parts.push('<text x="' + x(t) + '" y="' + (top - 12) + '" text-anchor="middle" fill="#666">' + t + ' ms</text>');
      }
      run.attachments.forEach((a, i) => {
        const y = top + i * lane;
        parts.push('<g class="lane" data-attachment="' + esc(a.id) + '">');
        parts.push('<text x="8" y="' + (y + 20) + '">' + esc(String(a.id).slice(0, 18)) + '</text>');
        for (const s of a.spans || []) {
          const w = Math.max(1.5, (s.length / span) * plot);
          parts.push('<rect class="stage" data-stage="' + esc(s.stage) + '" x="' + x(s.start) + '" y="' + (y + 6) + '" width="' + w + '" height="20" fill="' + stageColor(s.stage) + '"><title>' + esc(s.stage) + ' ' + s.length.toFixed(1) + ' ms</title></rect>');
        }
        const result = a.outcome === 'attached' ? '✓ attached' : a.outcome === 'pending' ? '… ' + 'working' : '✗ ' + a.outcome + (a.reason ? ' (' + a.reason + ')' : '');
        parts.push('<text class="lane-outcome" x="' + (left - 8) + '" y="' + (y + 32) + '" text-anchor="end" font-size="10" fill="' + (a.outcome === 'attached' ? '#1e6b2d' : a.outcome === 'pending' ? '#5f6368' : '#b3261e') + '">' + esc(result) + '</text>');
        if (a.outcome === 'failed' && a.message) {
          // Why, in words, under the lane; the one a developer can act on comes with its remedy.
          const hint = a.reason === 'address-denied' ? ' — restart the lab with --allow-address for that network' : '';
          const words = String(a.message) + hint;
          parts.push('<text class="lane-message" x="' + left + '" y="' + (y + 40) + '" font-size="10" fill="#b3261e">' + esc(words.length > 120 ? words.slice(0, 119) + '…' : words) + '<title>' + esc(words) + '</title></text>');
        }
        parts.push('</g>');
      });
      const bottom = height - 22;
      // A deadline far beyond the work is drawn at the right edge, saying where it really is.
      const beyond = deadline > span, at = beyond ? x(span) : x(deadline);
      parts.push('<line id="deadline-line" x1="' + at + '" y1="' + (top - 8) + '" x2="' + at + '" y2="' + bottom + '" stroke="#b3261e" stroke-width="2" stroke-dasharray="6 4"/>');
      // Labels stay inside the drawing: anchored at their end near the right edge.
      const nearRight = (px) => px > width - 120;
      parts.push('<text x="' + (beyond || nearRight(at) ? Math.min(at, width - 2) : at) + '" y="' + (bottom + 14) + '" text-anchor="' + (beyond || nearRight(at) ? 'end' : 'middle') + '" fill="#b3261e">deadline ' + Math.round(deadline) + ' ms' + (beyond ? ' (off scale) →' : '') + '</text>');
      if (run.elapsed_ms !== undefined) {
        parts.push('<line id="emitted-line" x1="' + x(run.elapsed_ms) + '" y1="' + (top - 8) + '" x2="' + x(run.elapsed_ms) + '" y2="' + bottom + '" stroke="#1e6b2d" stroke-width="2"/>');
        const out = x(run.elapsed_ms), flip = out > left + plot / 2;
        parts.push('<text id="timeline-outcome" x="' + (flip ? out - 4 : out + 4) + '" y="' + (top + 2) + '" text-anchor="' + (flip ? 'end' : 'start') + '" fill="#1e6b2d">' + (flip ? '' : '▲ ') + esc(run.outcome) + (run.reason ? ' (' + esc(run.reason) + ')' : '') + ' at ' + Math.round(run.elapsed_ms) + ' ms' + (flip ? ' ▲' : '') + '</text>');
      } else if (run.now !== undefined) {
        parts.push('<line id="now-line" x1="' + x(run.now) + '" y1="' + (top - 8) + '" x2="' + x(run.now) + '" y2="' + bottom + '" stroke="#5f6368"/>');
      }
      parts.push('</svg>');
      container.innerHTML = parts.join('');
    }

    // ---- result ----
    // What a run showed goes before the next one starts: a run that fails to start leaves nothing
    // that reads as its own.
    function clearResult() {
      $('timeline').innerHTML = '';
      const outcome = $('outcome');
      delete outcome.dataset.outcome;
      outcome.textContent = '';
      $('budget').innerHTML = '';
      $('diff').tBodies[0].innerHTML = '';
      $('payload-out').textContent = '';
      $('images').tBodies[0].innerHTML = '';
      for (const id of ['preview-ios-collapsed', 'preview-ios-expanded', 'preview-android']) $(id).innerHTML = '';
    }

    function showResult(result) {
      const outcome = $('outcome');
      outcome.dataset.outcome = result.outcome;
      outcome.textContent = ({ enriched: '✓ ', partial: '◐ ', fallback: '✗ ', passthrough: '– ' }[result.outcome] || '') + result.outcome +
        (result.reason ? ' — ' + result.reason : '') + ' · out at ' + Math.round(result.elapsed_ms) + ' ms of ' + Math.round(result.deadline_ms) + ' ms' +
        (result.unchanged ? ' · the original, byte for byte' : '');
      $('budget').innerHTML = 'Size: <span id="payload-bytes">' + result.payload_bytes + '</span> of ' + result.budget_bytes + ' bytes ' +
        '<meter min="0" max="' + result.budget_bytes + '" high="' + Math.round(result.budget_bytes * 0.9) + '" value="' + result.payload_bytes + '"></meter>';
      const marks = { added: '+ added', changed: '~ changed', removed: '− removed' };
      $('diff').tBodies[0].innerHTML = result.diff.length ? result.diff.map((d) =>
        '<tr class="' + d.change + '"><td>' + marks[d.change] + '</td><td>' + esc(d.pointer) + '</td><td>' + esc(d.before || '') + '</td><td>' + esc(d.after || '') + '</td></tr>'
      ).join('') : '<tr><td colspan="4">nothing: the payload went out as it came</td></tr>';
      $('payload-out').textContent = result.payload_out;
      $('images').tBodies[0].innerHTML = result.images.length ? result.images.map((m) =>
        '<tr><td>' + esc(m.attachment) + '</td><td>' + esc(m.role) + '</td><td>' + esc(m.format) + '</td><td>' +
        (m.width ? m.width + ' × ' + m.height : '') + '</td><td>' + (m.bytes === null ? '' : m.bytes.toLocaleString('en')) + '</td></tr>'
      ).join('') : '<tr><td colspan="5">none</td></tr>';
      showPreviews(result);
    }

    function mediaElement(image, className) {
      const src = esc(mediaPath(image.url));
      if (/mpeg-4|quicktime|movie|video/.test(image.type || '') || /^(mp4|mov|m4v)$/.test(image.format)) {
        return '<video class="' + className + '" src="' + src + '" controls muted playsinline></video>';
      }
      if (/audio|mp3|m4a|wav|aiff/.test((image.type || '') + image.format)) return '<audio class="' + className + '" src="' + src + '" controls></audio>';
      return '<img class="' + className + '" src="' + src + '" alt="attachment ' + esc(image.attachment) + '">';
    }

    function showPreviews(result) {
      const text = result.text || {};
      const title = text.title || '', body = text.body || '', subtitle = text.subtitle || '';
      const main = result.images.find((m) => m.role === 'attachment');
      const thumb = result.images.find((m) => m.role === 'thumbnail' && (!main || m.attachment === main.attachment));
      const android = result.images.find((m) => m.role === 'android') || main;
      const words = '<div class="n-title">' + esc(title) + '</div>' + (subtitle ? '<div class="n-title">' + esc(subtitle) + '</div>' : '') + '<div class="n-body">' + esc(body) + '</div>';
      const none = '<div class="no-media">no attachment: the device shows the text alone</div>';
      // The banner's thumbnail is the one Attache made (the clipping rect already applied); with
      // none, iOS crops the attachment to the rect itself, as drawn here.
      let thumbStyle = '';
      if (thumb) thumbStyle = 'background-image:url(' + mediaPath(thumb.url) + ')';
      else if (main && /^(jpg|jpeg|png|gif|heic)$/.test(main.format)) {
        thumbStyle = 'background-image:url(' + mediaPath(main.url) + ')';
        const c = main.clip;
        if (c && c.width > 0 && c.height > 0) {
          const pos = (o, s) => (s >= 1 ? 0 : (o / (1 - s)) * 100);
          thumbStyle += ';background-size:' + (100 / c.width) + '% ' + (100 / c.height) + '%;background-position:' + pos(c.x, c.width) + '% ' + pos(c.y, c.height) + '%';
        }
      }
      $('preview-ios-collapsed').innerHTML = '<div class="app-icon" aria-hidden="true"></div><div class="ios-text"><div class="meta"><span>YOUR APP</span><span>now</span></div>' + words + '</div>' +
        (thumbStyle ? '<div class="ios-thumb" id="ios-thumb" role="img" aria-label="thumbnail" style="' + esc(thumbStyle) + '"></div>' : '');
      $('preview-ios-expanded').innerHTML = (main ? mediaElement(main, 'media') : '') + '<div class="ios-text"><div class="meta"><span>YOUR APP</span><span>now</span></div>' + words + '</div>' + (main ? '' : none);
      $('preview-android').innerHTML = '<div class="meta"><span>Your app · now</span><span aria-hidden="true">⌃</span></div>' + words +
        (android && /^(jpg|jpeg|png|gif|webp)$/.test(android.format) ? mediaElement(android, 'media') : none);
    }

    // ---- run ----
    async function run() {
      if (state.running) return;
      const payload = $('payload').value;
      const deadline = Number($('deadline').value);
      const live = { deadline_ms: deadline, attachments: [], now: 0 };
      let started = 0, frame = 0, finished = false;
      const tick = () => { if (finished) return; live.now = performance.now() - started; drawTimeline($('timeline'), live); frame = requestAnimationFrame(tick); };
      state.running = true;
      $('run').disabled = true;
      $('run-status').textContent = 'running…';
      clearResult();
      try {
        await stream('run', { payload, deadline_ms: deadline, profile: $('profile').value }, (event, data) => {
          if (event === 'start') { showJSONError(null); started = performance.now(); live.deadline_ms = data.deadline_ms; frame = requestAnimationFrame(tick); }
          else if (event === 'attachment') { live.attachments[data.index] = data; }
          else if (event === 'result') {
            finished = true;
            cancelAnimationFrame(frame);
            drawTimeline($('timeline'), { deadline_ms: data.deadline_ms, elapsed_ms: data.elapsed_ms, outcome: data.outcome, reason: data.reason, attachments: data.attachments });
            showResult(data);
            $('run-status').textContent = 'done: ' + data.outcome;
          } else if (event === 'error') { throw new Error(data.error); }
        });
      } catch (e) {
        if (e.info && e.info.line) { showJSONError(e.info); placeCaret(e.info); }
        else if (e.info) showJSONError(e.info);
        $('run-status').textContent = 'not run: ' + e.message;
      } finally {
        finished = true;
        cancelAnimationFrame(frame);
        state.running = false;
        $('run').disabled = false;
      }
    }

    // ---- sweep ----
    function sweepKey(profile, deadline) { return profile + '@' + deadline; }
    // A fault as the page shows it (its label), never its internal name.
    function faultLabel(name) { const p = state.setup.profiles.find((p) => p.name === name); return p ? p.label : name; }

    function drawHeatmap(deadlines, profiles) {
      let rows = '<thead><tr><th scope="col">fault \\ deadline</th>' + deadlines.map((d) => '<th scope="col">' + d + ' ms</th>').join('') + '</tr></thead><tbody>';
      for (const p of profiles) {
        rows += '<tr><th scope="row">' + esc(faultLabel(p)) + '</th>' + deadlines.map((d) =>
          '<td><button type="button" class="cell" data-key="' + esc(sweepKey(p, d)) + '" data-outcome="pending" aria-pressed="false" disabled>… running</button></td>').join('') + '</tr>';
      }
      $('heatmap').innerHTML = rows + '</tbody>';
    }

    function showCell(cell) {
      const symbols = { enriched: '✓', partial: '◐', fallback: '✗', passthrough: '–' };
      const button = document.querySelector('#heatmap button[data-key="' + CSS.escape(sweepKey(cell.profile, cell.deadline_ms)) + '"]');
      if (!button) return;
      button.dataset.outcome = cell.outcome;
      button.disabled = false;
      button.innerHTML = (symbols[cell.outcome] || '?') + ' ' + esc(cell.outcome) + '<br><small>' + Math.round(cell.elapsed_ms) + ' ms' + (cell.reason ? ' · ' + esc(cell.reason) : '') + '</small>';
      button.setAttribute('aria-label', faultLabel(cell.profile) + ' at ' + cell.deadline_ms + ' ms: ' + cell.outcome + (cell.reason ? ', ' + cell.reason : '') + ', out at ' + Math.round(cell.elapsed_ms) + ' ms');
    }

    function openCell(key) {
      const cell = state.sweepCells[key];
      if (!cell) return;
      for (const b of document.querySelectorAll('#heatmap button')) b.setAttribute('aria-pressed', String(b.dataset.key === key));
      $('sweep-cell').hidden = false;
      $('sweep-cell-title').textContent = faultLabel(cell.profile) + ' at ' + cell.deadline_ms + ' ms: ' + cell.outcome + (cell.reason ? ' (' + cell.reason + ')' : '');
      drawTimeline($('sweep-timeline'), { deadline_ms: cell.deadline_ms, elapsed_ms: cell.elapsed_ms, outcome: cell.outcome, reason: cell.reason, attachments: cell.attachments });
    }

    async function sweep() {
      const deadlines = $('sweep-deadlines').value.split(/[\s,]+/).filter(Boolean).map(Number);
      const profiles = [...document.querySelectorAll('#sweep-profiles input:checked')].map((i) => i.value);
      if (!deadlines.length || deadlines.some((d) => !(d > 0)) || !profiles.length) { $('sweep-status').textContent = 'give deadlines in ms and tick at least one fault'; return; }
      $('sweep-run').disabled = true;
      $('sweep-status').textContent = 'running ' + deadlines.length * profiles.length + ' runs…';
      $('sweep-downloads').hidden = true;
      $('sweep-cell').hidden = true;
      state.sweepCells = {};
      let done = 0;
      try {
        await stream('sweep', { payload: $('payload').value, deadlines_ms: deadlines, profiles }, (event, data) => {
          if (event === 'start') drawHeatmap(data.deadlines_ms, data.profiles);
          else if (event === 'cell') {
            state.sweepCells[sweepKey(data.profile, data.deadline_ms)] = data;
            showCell(data);
            $('sweep-status').textContent = (++done) + ' of ' + deadlines.length * profiles.length + ' done';
          } else if (event === 'done') {
            $('sweep-csv').href = URL.createObjectURL(new Blob([data.csv], { type: 'text/csv' }));
            $('sweep-svg').href = URL.createObjectURL(new Blob([data.svg], { type: 'image/svg+xml' }));
            $('sweep-downloads').hidden = false;
            $('sweep-status').textContent = 'done: ' + done + ' runs';
          } else if (event === 'error') { throw new Error(data.error); }
        });
      } catch (e) {
        if (e.info && e.info.line) { showJSONError(e.info); placeCaret(e.info); }
        $('sweep-status').textContent = 'not run: ' + e.message;
      } finally {
        $('sweep-run').disabled = false;
      }
    }

    // ---- set-up ----
    async function load() {
      let response;
      try { response = await api('setup'); } catch (e) { return; }
      if (!response.ok) { $('run-status').textContent = (await failure(response)).message; return; }
      state.setup = await response.json();
      $('auth').hidden = true;
      const sample = $('sample');
      sample.length = 1;
      for (const s of state.setup.samples) sample.add(new Option(s.name, s.name));
      if (!state.setup.samples.length) sample.options[0].text = '— no samples: start the lab with --samples DIR —';
      $('profile').innerHTML = state.setup.profiles.map((p) => '<option value="' + esc(p.name) + '">' + esc(p.label) + '</option>').join('');
      $('sweep-profiles').innerHTML = '<legend>Faults</legend>' + state.setup.profiles.map((p, i) =>
        '<label><input type="checkbox" value="' + esc(p.name) + '"' + (i < 3 ? ' checked' : '') + '> ' + esc(p.label) + '</label>').join('');
      $('legend').innerHTML = state.setup.stages.map((s) => '<li><span class="swatch" style="background:' + esc(s.color) + '"></span>' + esc(s.name) + '</li>').join('') +
        '<li><span class="swatch" style="background:#b3261e;height:3px"></span>deadline (dashed)</li><li><span class="swatch" style="background:#1e6b2d;height:3px"></span>▲ payload out</li>';
      const max = state.setup.limits.max_deadline_ms;
      $('deadline').max = max;
      $('deadline-range').max = Math.min(10000, max);
      $('deadline').value = $('deadline-range').value = Math.min(state.setup.limits.deadline_ms, max);
      document.body.dataset.ready = 'true';
    }

    document.addEventListener('DOMContentLoaded', () => {
      $('sample').addEventListener('change', () => {
        const s = state.setup && state.setup.samples.find((x) => x.name === $('sample').value);
        if (s) { $('payload').value = s.payload; showJSONError(null); }
      });
      $('file').addEventListener('change', async () => {
        const f = $('file').files[0];
        if (f) { $('payload').value = await f.text(); scheduleCheck(); }
      });
      $('payload').addEventListener('input', scheduleCheck);
      $('deadline-range').addEventListener('input', () => { $('deadline').value = $('deadline-range').value; });
      $('deadline').addEventListener('input', () => { $('deadline-range').value = $('deadline').value; });
      $('run').addEventListener('click', run);
      $('sweep-run').addEventListener('click', sweep);
      $('heatmap').addEventListener('click', (e) => { const b = e.target.closest('button.cell'); if (b) openCell(b.dataset.key); });
      $('auth-form').addEventListener('submit', (e) => {
        e.preventDefault();
        state.token = $('token').value;
        sessionStorage.setItem('attache-lab-token', state.token);
        load();
      });
      load();
    });
    """#
}
