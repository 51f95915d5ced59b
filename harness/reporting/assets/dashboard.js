// The history page's script: reads the data block that harness.reporting.dashboard_data writes and draws the "what
// changed" list, the index of series with sparklines, and one series group (a GPU x workload x split, every track) on a
// time axis with uPlot: step time, census counts, peak memory and kernel time on linked panels. No network.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("dashboard-data").textContent);
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  };
  const fmt = (x, d = 1) => (x === null || x === undefined ? "–" : x.toLocaleString("en-US", {maximumFractionDigits: d, minimumFractionDigits: d}));
  const day = (t) => (t ? new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ") : "undated");
  const groupOf = (s) => [s.gpu, s.workload, s.split].join("/");
  const link = (key, session) => "#series=" + encodeURIComponent(key) + (session ? "&session=" + encodeURIComponent(session) : "");
  const TRACK_COLORS = ["#1b6ac9", "#d95f02", "#1b9e77", "#7570b3", "#e7298a"];
  const state = {group: null, hiddenMachines: new Set(), picks: [], plots: [], view: null};
  window.dashboard = {data: D, state: state};

  // ---- what changed ---------------------------------------------------------------------------------------------
  function eventItem(e) {
    const li = el("li", {class: "event kind-" + e.kind.replace(" ", "-")},
      el("span", {class: "kind", text: e.kind}), " ", el("span", {class: "when", text: (e.at || "").slice(0, 16).replace("T", " ")}), " ",
      el("a", {class: "event-link", href: link(e.series, e.session_id), text: e.title}));
    if (e.lines.length) li.append(el("div", {class: "detail", text: e.lines.join(" · ")}));
    return li;
  }
  function renderEvents() {
    const ol = $("#events");
    const shown = 60;
    D.events.slice(0, shown).forEach((e) => ol.append(eventItem(e)));
    if (!D.events.length) ol.append(el("li", {class: "muted", text: "Nothing changed in the stored history."}));
    if (D.events.length > shown) {
      const more = el("button", {type: "button", id: "more-events", text: `${D.events.length - shown} more`});
      more.onclick = () => { D.events.slice(shown).forEach((e) => ol.append(eventItem(e))); more.remove(); };
      ol.after(more);
    }
    if (D.events_total > D.events.length) ol.after(el("p", {class: "muted", text: `The newest ${D.events.length} of ${D.events_total} events; the rest are in history.json.`}));
  }

  // ---- index --------------------------------------------------------------------------------------------------------
  function sparkline(values) {
    const c = el("canvas", {width: 120, height: 26, class: "spark"});
    const v = values.filter((x) => x !== null);
    if (v.length < 2) return c;
    const step = Math.max(1, Math.floor(v.length / 120));
    const pts = v.filter((_, i) => i % step === 0);
    const lo = Math.min(...pts), hi = Math.max(...pts);
    const g = c.getContext("2d");
    g.strokeStyle = "#1b6ac9"; g.lineWidth = 1; g.beginPath();
    pts.forEach((y, i) => g[i ? "lineTo" : "moveTo"](i * 120 / (pts.length - 1), 24 - (hi > lo ? (y - lo) / (hi - lo) * 22 : 11)));
    g.stroke();
    return c;
  }
  function latest(arr) { for (let i = arr.length - 1; i >= 0; i--) if (arr[i] !== null) return arr[i]; return null; }
  function indexRow(s) {
    const t = s.timing, vd = latest(t.vd), lc = s.last_change;
    return el("tr", {"data-key": s.key, "data-gpu": s.gpu, "data-workload": s.workload, "data-split": s.split},
      el("td", {}, el("a", {class: "series-link", href: link(s.key), text: s.name})), el("td", {}, sparkline(t.ms)),
      el("td", {class: "n", text: fmt(latest(t.ms))}), el("td", {class: "n", text: fmt(latest(t.mem), 0)}),
      el("td", {class: "verdict", text: vd === null ? "–" : D.verdicts[vd]}), el("td", {class: "n", text: String(t.t.length)}),
      el("td", {class: "last", text: lc ? `${lc.at.slice(0, 10)} ${lc.title}` : "–"}));
  }
  function filterSelect(name, values) {
    const sel = el("select", {"data-filter": name}, el("option", {value: "", text: `every ${name}`}));
    [...new Set(values)].sort().forEach((v) => sel.append(el("option", {value: v, text: v})));
    sel.onchange = applyIndexFilters;
    return el("label", {}, sel);
  }
  function applyIndexFilters() {
    const f = {};
    document.querySelectorAll("#filters select").forEach((s) => { f[s.dataset.filter] = s.value; });
    document.querySelectorAll("#series-index tbody tr").forEach((tr) => {
      tr.hidden = Object.entries(f).some(([k, v]) => v && tr.dataset[k] !== v);
    });
  }
  function renderIndex() {
    const filters = $("#filters");
    for (const name of ["gpu", "workload", "split"]) filters.append(filterSelect(name, D.series.map((s) => s[name])));
    const head = el("tr", {});
    ["series", "step time", "latest ms", "peak MiB", "verdict", "sessions", "last change"].forEach((h) => head.append(el("th", {text: h})));
    const body = el("tbody", {});
    D.series.forEach((s) => body.append(indexRow(s)));
    $("#series-index").append(el("thead", {}, head), body);
  }

  // ---- one series group on a time axis ------------------------------------------------------------------------------
  // The group's timing points joined on one time axis: x, then per track its medians (null where the track has no session
  // then, or its machine is hidden), with a map back from (track, aligned index) to the point of that track.
  function joined(tracks, column) {
    const xs = [...new Set(tracks.flatMap((s) => s[column].t))].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    return {xs, at};
  }
  function timingData(tracks) {
    const {xs, at} = joined(tracks, "timing");
    const ys = [], back = [];
    tracks.forEach((s) => {
      const y = new Array(xs.length).fill(null), b = new Array(xs.length).fill(-1);
      s.timing.t.forEach((t, i) => {
        const m = D.machines[s.timing.m[i]];
        if (!state.hiddenMachines.has(m)) y[at.get(t)] = s.timing.ms[i];
        b[at.get(t)] = i;
      });
      ys.push(y); back.push(b);
    });
    return {data: [xs, ...ys], back};
  }
  function columnData(tracks, kind, cols) {
    const {xs, at} = joined(tracks, kind);
    const out = [xs];
    for (const col of cols) {
      tracks.forEach((s) => {
        const y = new Array(xs.length).fill(null);
        s[kind].t.forEach((t, i) => { y[at.get(t)] = s[kind][col][i]; });
        out.push(y);
      });
    }
    return out;
  }
  function drawMarks(u, tracks) {
    const g = u.ctx, top = u.bbox.top, h = u.bbox.height, px = devicePixelRatio || 1;
    g.save(); g.font = `${10 * px}px sans-serif`;
    const seen = new Set();
    for (const s of tracks) for (const m of s.marks) {
      if (m.kind !== "timing" || seen.has(m.t + m.text)) continue;
      seen.add(m.t + m.text);
      const x = u.valToPos(m.t, "x", true);
      g.strokeStyle = "#888"; g.setLineDash([4 * px, 3 * px]); g.beginPath(); g.moveTo(x, top); g.lineTo(x, top + h); g.stroke();
      g.fillStyle = "#555"; g.fillText(m.text.slice(0, 40), x + 3 * px, top + 12 * px);
    }
    g.setLineDash([]);
    tracks.forEach((s, j) => drawSegments(u, s, j));
    g.restore();
  }
  // Change points: a red line at each with its ratio and interval, and the median level of every segment between them.
  function drawSegments(u, s, j) {
    if (!s.change_points.length || !u.series[j + 1].show) return;
    const g = u.ctx, px = devicePixelRatio || 1, t = s.timing;
    const cuts = [t.t[0], ...s.change_points.map((c) => c.t), t.t[t.t.length - 1] + 1];
    for (let k = 0; k + 1 < cuts.length; k++) {
      const v = t.ms.filter((_, i) => t.t[i] >= cuts[k] && t.t[i] < cuts[k + 1]).sort((a, b) => a - b);
      if (!v.length) continue;
      const y = u.valToPos(v[Math.floor(v.length / 2)], "y", true);
      g.strokeStyle = "#c0392b"; g.lineWidth = 2 * px; g.beginPath();
      g.moveTo(u.valToPos(cuts[k], "x", true), y); g.lineTo(u.valToPos(Math.min(cuts[k + 1], t.t[t.t.length - 1]), "x", true), y); g.stroke();
    }
    for (const c of s.change_points) {
      const x = u.valToPos(c.t, "x", true);
      g.fillStyle = "#c0392b"; g.fillRect(x - px, u.bbox.top, 2 * px, u.bbox.height);
      g.fillText(`×${c.ratio.toFixed(3)} [${c.lo.toFixed(3)}, ${c.hi.toFixed(3)}]`, x + 3 * px, u.bbox.top + 26 * px);
    }
  }
  function plotOpts(title, series, axes, height, hooks) {
    return {title, width: Math.min(1100, document.body.clientWidth - 40), height, series: [{}, ...series], axes: [{}, ...axes],
      scales: {x: {time: true}}, cursor: {sync: {key: "history", setSeries: false}}, legend: {live: false}, hooks: hooks || {}};
  }
  // The nearest shown point to the cursor: its track and its index in that track's timing columns, or null.
  function hovered(u, tracks, back) {
    const {left, top} = u.cursor;
    if (!back || left === undefined || left < 0) return null;
    let best = null;
    tracks.forEach((s, j) => {
      const i = (u.cursor.idxs || [])[j + 1] ?? u.cursor.idx;
      if (i === null || i === undefined || !u.series[j + 1].show || u.data[j + 1][i] === null) return;
      const d = Math.hypot(u.valToPos(u.data[0][i], "x") - left, u.valToPos(u.data[j + 1][i], "y") - top);
      if (!best || d < best.d) best = {d, track: j, i: back[j][i]};
    });
    return best && best.i >= 0 ? {series: tracks[best.track], i: best.i} : null;
  }
  function pointInfo(p) {
    const t = p.series.timing, ses = D.sessions[t.s[p.i]];
    return {series: p.series, i: p.i, session: ses, versions: D.versions[ses.v], machine: D.machines[t.m[p.i]], ms: t.ms[p.i],
      lo: t.lo[p.i], hi: t.hi[p.i], mem: t.mem[p.i], verdict: t.vd[p.i] === null ? null : D.verdicts[t.vd[p.i]]};
  }
  function showHover(p) {
    const box = $("#hover");
    if (!p) { box.hidden = true; return; }
    const info = pointInfo(p);
    box.hidden = false; box.replaceChildren(
      el("div", {class: "h-session", text: `${info.session.id} · ${day(info.session.t)}` + (p.series.track ? ` · ${p.series.track}` : "")}),
      el("div", {text: `median ${fmt(info.ms)} ms (runs ${fmt(info.lo)}–${fmt(info.hi)})` + (info.mem ? ` · peak ${fmt(info.mem, 0)} MiB` : "")}),
      el("div", {class: "h-machine", text: `machine ${info.machine}` + (info.session.commit ? ` · commit ${info.session.commit}` : "") +
        ` · verdict ${info.verdict || "none"}`}),
      el("div", {class: "h-versions", text: Object.entries(info.versions).map(([k, v]) => `${k} ${v}`).join(" · ")}));
  }
  function redraw() { state.plots.forEach((u) => u.redraw()); }
  function mainPlot(tracks, box) {
    const td = timingData(tracks);
    const series = tracks.map((s, j) => ({label: s.track || "step time", stroke: TRACK_COLORS[j % TRACK_COLORS.length], width: 1, spanGaps: true,
      points: {show: true, size: 5}}));
    const hooks = {draw: [(u) => drawMarks(u, tracks)], setCursor: [(u) => { state.hover = hovered(u, tracks, state.back); showHover(state.hover); }],
      setScale: [(u, key) => { if (key === "x") syncX(u); }]};
    const u = new uPlot(plotOpts("median step time, ms", series, [{label: "ms"}], 300, hooks), td.data, box);
    state.back = td.back;
    u.over.addEventListener("click", () => { if (state.hover) pick(state.hover); });
    return u;
  }
  function syncX(src) {
    const {min, max} = src.scales.x;
    state.plots.forEach((u) => { if (u !== src && (u.scales.x.min !== min || u.scales.x.max !== max)) u.setScale("x", {min, max}); });
  }
  function panel(title, data, series, axes) {
    const box = el("div", {class: "panel"});
    $("#plots").append(box);
    const hooks = {setScale: [(u, key) => { if (key === "x") syncX(u); }]};
    return new uPlot(plotOpts(title, series, axes, 160, hooks), data, box);
  }
  function panels(tracks) {
    const names = (what) => tracks.map((s, j) => ({label: `${what}${s.track ? " " + s.track : ""}`, spanGaps: true, points: {show: true, size: 4},
      stroke: TRACK_COLORS[j % TRACK_COLORS.length]}));
    const out = [];
    if (tracks.some((s) => s.census.t.length)) {
      const dash = (list) => list.map((x) => ({...x, dash: [5, 3], scale: "calls"}));
      out.push(panel("census per step: kernel launches (solid), Python calls (dashed)", columnData(tracks, "census", ["kernels", "calls"]),
        [...names("kernels"), ...dash(names("Python calls"))], [{label: "kernels"}, {scale: "calls", side: 1, grid: {show: false}}]));
      if (tracks.some((s) => s.census.kms.some((x) => x !== null))) {
        out.push(panel("GPU kernel time per step, ms (census)", columnData(tracks, "census", ["kms"]), names("kernel ms"), [{label: "ms"}]));
      }
    }
    if (tracks.some((s) => s.timing.mem.some((x) => x !== null))) {
      out.push(panel("peak reserved memory, MiB", columnData(tracks, "timing", ["mem"]), names("peak MiB"), [{label: "MiB"}]));
    }
    return out;
  }
  function countPoints() {
    const u = state.plots[0];
    const n = u.series.slice(1).reduce((acc, s, j) => acc + (s.show ? u.data[j + 1].filter((y) => y !== null).length : 0), 0);
    $("#plots").dataset.points = String(n);
  }
  function toggle(cls, label, checked, onchange) {
    const box = el("input", {type: "checkbox", class: cls});
    box.checked = checked; box.onchange = () => onchange(box.checked);
    return el("label", {class: "toggle"}, box, " " + label);
  }
  function renderToggles(tracks) {
    const t = $("#toggles");
    t.replaceChildren();
    if (tracks.length > 1 || tracks[0].track) {
      t.append(el("span", {class: "muted", text: "tracks: "}));
      tracks.forEach((s, j) => t.append(toggle("track-toggle", s.track || "default", true, (on) => {
        state.plots.forEach((u) => u.series.forEach((x, i) => { if (i > 0 && (i - 1) % tracks.length === j) u.setSeries(i, {show: on}); }));
        countPoints();
      })));
    }
    const machines = [...new Set(tracks.flatMap((s) => s.timing.m.map((m) => D.machines[m])))].sort();
    t.append(el("span", {class: "muted", text: " machines: "}));
    // a results dir stands for the machine of runs made before boot ids were recorded: named by its last two folders
    const label = (m) => (m.startsWith("dir:") ? "dir …/" + m.split("/").slice(-2).join("/") : m);
    machines.forEach((m) => { const l = toggle("machine-toggle", label(m), true, (on) => setMachine(m, on)); l.dataset.machine = m; t.append(l); });
  }
  function setMachine(m, on) {
    if (on) state.hiddenMachines.delete(m); else state.hiddenMachines.add(m);
    const td = timingData(state.view);
    state.plots[0].setData(td.data, false);
    state.back = td.back;
    countPoints();
  }
  function openGroup(key, session) {
    const s0 = D.series.find((s) => s.key === key);
    if (!s0) return;
    const tracks = D.series.filter((s) => groupOf(s) === groupOf(s0));
    if (state.group !== groupOf(s0)) {
      state.plots.forEach((u) => u.destroy());
      $("#plots").replaceChildren();
      state.group = groupOf(s0); state.view = tracks; state.picks = []; state.hiddenMachines.clear();
      $("#compare").replaceChildren();
      $("#series").hidden = false;
      $("#series-title").textContent = [s0.gpu, s0.workload, s0.split].join(" · ");
      renderToggles(tracks);
      const box = el("div", {class: "panel main"});
      $("#plots").append(box);
      state.plots = [mainPlot(tracks, box)];
      state.plots.push(...panels(tracks));
      countPoints();
    }
    if (session) {
      const j = tracks.findIndex((s) => s.timing.s.some((x) => D.sessions[x].id === session));
      if (j >= 0) showHover({series: tracks[j], i: tracks[j].timing.s.findIndex((x) => D.sessions[x].id === session)});
    }
    $("#series").scrollIntoView();
  }

  // ---- two sessions side by side ----------------------------------------------------------------------------------
  function censusAt(s, t) {
    let found = -1;
    s.census.t.forEach((x, i) => { if (x <= t + 6 * 3600) found = i; });
    return found < 0 ? null : {ops: s.census.ops[found], kernels: s.census.kernels[found], calls: s.census.calls[found], session: D.sessions[s.census.s[found]].id};
  }
  function pick(p) {
    state.picks = [...state.picks, pointInfo(p)].slice(-2);
    renderCompare();
  }
  function diffRow(name, a, b) {
    return el("tr", {class: a === b ? "same" : "diff"}, el("td", {text: name}), el("td", {text: a ?? "–"}), el("td", {text: b ?? "–"}));
  }
  function renderCompare() {
    const box = $("#compare");
    const [a, b] = state.picks;
    box.replaceChildren(el("h3", {text: b ? "Two sessions side by side" : `Picked ${a.session.id}: click a second point to compare`}));
    if (!b) return;
    const rows = [diffRow("session", a.session.id, b.session.id), diffRow("started", day(a.session.t), day(b.session.t)),
      diffRow("median step ms", fmt(a.ms), fmt(b.ms) + ` (×${(b.ms / a.ms).toFixed(3)})`), diffRow("machine", a.machine, b.machine),
      diffRow("commit", a.session.commit, b.session.commit)];
    const libs = [...new Set([...Object.keys(a.versions), ...Object.keys(b.versions)])].sort();
    const vrows = libs.map((k) => diffRow(k, a.versions[k], b.versions[k]));
    const ca = censusAt(a.series, a.session.t), cb = censusAt(b.series, b.session.t);
    const crows = ca && cb ? [["ops", "ops"], ["kernels", "kernel launches"], ["calls", "Python calls"]].map(([k, n]) =>
      diffRow(n + " per step", fmt(ca[k]), fmt(cb[k]) + (ca[k] !== null && cb[k] !== null ? ` (${cb[k] - ca[k] >= 0 ? "+" : ""}${fmt(cb[k] - ca[k])})` : ""))) : [];
    const table = (title, trs) => el("table", {class: "compare"}, el("caption", {text: title}), ...trs);
    box.append(table("sessions", rows), table("version diff (changed rows marked)", vrows),
      crows.length ? table(`census diff (${ca.session} vs ${cb.session})`, crows) : el("p", {class: "muted", text: "no census for one of them"}));
  }

  function route() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get("series")) openGroup(h.get("series"), h.get("session"));
  }
  renderEvents();
  renderIndex();
  addEventListener("hashchange", route);
  route();
  performance.mark("dashboard-ready");
  document.body.dataset.ready = String(performance.now());
})();
