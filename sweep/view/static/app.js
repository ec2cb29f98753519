"use strict";
// sweep view: browse a sweep's episodes and read their transcripts. The data comes from the JSON API
// of `sweep view` (server mode) or from the JSON block that `sweep view --export` embeds (static
// mode). Every value from the results is inserted as text, never as HTML: model output is hostile.
(function () {
  const embedded = document.getElementById("sweep-data");
  const STATIC = embedded ? JSON.parse(embedded.textContent) : null;
  const PAGE = 50;
  const SVG = "http://www.w3.org/2000/svg";
  const state = { offset: 0, total: 0, detail: null, fold: false };
  const CHANGE = { w2r: "wrong → right", r2w: "right → wrong", w2w: "wrong → wrong", r2r: "right → right", other: "changed" };
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function fmt(v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(digits === undefined ? 3 : digits);
    return String(v);
  }

  function mark(ok) {
    if (ok === true) return el("span", { class: "ok", "data-k": "mark" }, "✓");
    if (ok === false) return el("span", { class: "bad", "data-k": "mark" }, "✗");
    return el("span", { class: "none", "data-k": "mark" }, "–");
  }

  function showError(err) {
    const box = $("error");
    box.textContent = "error: " + (err && err.message ? err.message : String(err));
    box.hidden = false;
  }

  // ---- data: the server's API, or the embedded export ------------------------------------------
  async function api(path, params) {
    if (STATIC) return staticApi(path, params || {});
    const url = new URL(path, window.location.href);
    for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== null && v !== undefined) url.searchParams.set(k, v);
    const response = await fetch(url);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }

  function staticApi(path, p) {
    if (path === "api/meta") return STATIC.meta;
    if (path === "api/episode") {
      const d = STATIC.details[p.id];
      if (!d) throw new Error("episode " + p.id + " is not in this export");
      return d;
    }
    const rows = STATIC.rows.filter((r) =>
      (!p.method || r.method_label === p.method) &&
      (!p.dataset || r.dataset + "/" + r.split === p.dataset) &&
      (!p.team || r.team === p.team) &&
      (!p.outcome || (p.outcome === "unparsable" ? !r.answered : r.correct === (p.outcome === "correct"))) &&
      (!p.flip || r.flip === p.flip) &&
      (!p.parse || r.parse_failures > 0) &&
      (!p.item || r.item_id.includes(p.item)));
    const offset = Number(p.offset || 0), limit = Number(p.limit || PAGE);
    return { total: rows.length, offset, limit, rows: rows.slice(offset, offset + limit) };
  }

  // ---- filters and the list ---------------------------------------------------------------------
  function fill(select, values, label) {
    for (const v of values) select.append(el("option", { value: v }, label ? label(v) : v));
  }

  function filters() {
    return {
      method: $("f-method").value, dataset: $("f-dataset").value, team: $("f-team").value,
      outcome: $("f-outcome").value, flip: $("f-flip").value, parse: $("f-parse").checked ? "1" : "",
      item: $("f-item").value.trim(), offset: state.offset, limit: PAGE,
    };
  }

  async function loadList() {
    const page = await api("api/episodes", filters());
    state.total = page.total;
    $("total").textContent = String(page.total);
    $("range").textContent = page.total ? `${page.offset + 1}–${page.offset + page.rows.length}` : "0";
    $("prev").disabled = page.offset === 0;
    $("next").disabled = page.offset + page.rows.length >= page.total;
    const body = $("list").tBodies[0];
    body.replaceChildren(...page.rows.map(listRow));
  }

  function listRow(r) {
    return el("tr", { "data-episode-id": r.episode_id, onclick: () => openEpisode(r.episode_id).catch(showError) },
      el("td", {}, r.item_id), el("td", {}, r.method_label), el("td", {}, r.seed),
      el("td", { "data-k": "vote" }, fmt(r.final_answer)), el("td", { class: "wide" }, r.gold),
      el("td", {}, r.answered ? mark(r.correct) : el("span", { class: "none" }, "unparsable")),
      el("td", {}, r.flip === "none" ? "" : r.flip.toUpperCase()), el("td", { class: "wide", "data-k": "tokens" }, r.tokens),
      el("td", { class: "wide" }, r.calls), el("td", { class: "wide" }, r.parse_failures || ""));
  }

  // ---- one episode --------------------------------------------------------------------------------
  async function openEpisode(id) {
    const detail = await api("api/episode", { id });
    state.detail = detail;
    for (const tr of $("list").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.episodeId === id);
    const compare = $("compare");
    compare.replaceChildren(el("option", { value: "" }, "—"),
      ...detail.siblings.map((s) => el("option", { value: s.episode_id }, `${s.method_label} (${s.correct ? "✓" : "✗"})`)));
    $("panes").replaceChildren(renderEpisode(detail));
    $("detail").hidden = false;
    $("main").classList.add("open");
    $("main").classList.remove("comparing");
    // Beside the list (or above it) the episode is in view as it is; scroll only when the reader had
    // scrolled its start away (further down a long transcript) or the window is too short to show it.
    const top = $("detail").getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight / 2) $("detail").scrollIntoView({ block: "start" });
    const hash = "#episode=" + encodeURIComponent(id);
    $("link").setAttribute("href", hash);
    history.replaceState(null, "", hash);
  }

  async function compareWith(id) {
    const panes = [renderEpisode(state.detail)];
    if (id) panes.push(renderEpisode(await api("api/episode", { id })));
    $("panes").replaceChildren(...panes);
    $("main").classList.toggle("comparing", Boolean(id));
  }

  function changeMark(c) {
    if (!c) return null;
    return el("span", { class: "change " + c.kind, "data-k": "change", "data-kind": c.kind, title: `answer changed this round: ${CHANGE[c.kind] || c.kind}` },
      `${fmt(c.from)} → ${fmt(c.to)}`);
  }

  function changeSummary(d) {
    const counts = {};
    for (const r of d.rounds) for (const c of r.changes || []) if (c) counts[c.kind] = (counts[c.kind] || 0) + 1;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (!total) return "none";
    return `${total}: ` + Object.keys(CHANGE).filter((k) => counts[k]).map((k) => `${counts[k]} ${CHANGE[k]}`).join(", ");
  }

  function facts(pairs) {
    return el("dl", { class: "facts" }, pairs.map(([k, v, field]) => [el("dt", {}, k), el("dd", { "data-field": field || null }, v)]));
  }

  function renderEpisode(d) {
    const e = d.episode;
    const diag = ["w2r", "r2w", "net", "acceptance", "cross_ans", "src_conf", "influence_entropy", "answer_entropy", "agreement"]
      .filter((k) => e[k] !== null && e[k] !== undefined).map((k) => `${k} ${fmt(e[k])}`).join(" · ");
    const pane = el("div", { class: "pane", "data-episode": e.episode_id },
      el("h2", {}, `${e.method_label} · ${e.dataset}/${e.split} · ${e.item_id} · seed ${e.seed}`),
      facts([
        ["gold", e.gold, "gold"],
        ["final vote", el("span", {}, el("span", { "data-field": "final_answer" }, fmt(e.final_answer)), " ", mark(e.final_answer === null ? null : e.correct))],
        ["tokens", String(e.prompt_tokens + e.completion_tokens), "tokens"],
        ["prompt / completion", `${e.prompt_tokens} / ${e.completion_tokens}`, "prompt_completion"],
        ["calls", String(e.calls), "calls"],
        ["cost", fmt(e.cost, 6), "cost"],
        ["parse failures", String(e.parse_failures), "parse_failures"],
        ["answer changes", changeSummary(d), "changes"],
        ["team", (e.models || []).join(", "), "models"],
        ["diagnostics", diag || "–", "diagnostics"],
        ["episode", e.episode_id, "episode_id"],
      ]),
      el("details", {}, el("summary", {}, "method spec"), el("pre", {}, JSON.stringify(e.method_spec, null, 2))));
    const last = new Array(e.n_agents).fill(null);
    for (const r of d.rounds) pane.append(renderRound(r, e, last));
    return pane;
  }

  function renderRound(r, e, last) {
    const active = new Set(r.active);
    for (let a = 0; a < e.n_agents; a++) {
      const said = r.agents[a].filter((t) => t.phase !== "critique");
      if (said.length) last[a] = said[said.length - 1];
    }
    const d = r.diagnostics || {};
    const diag = ["edges", "cross_ans", "src_conf", "w2r", "r2w", "acceptance", "agreement", "answer_entropy", "influence_entropy", "cost"]
      .filter((k) => d[k] !== null && d[k] !== undefined).map((k) => `${k} ${fmt(d[k])}`).join(" · ");
    const grid = el("div", { class: "agents" }, r.agents.map((turns, a) => renderAgent(r, a, turns, active.has(a), e, (r.changes || [])[a])));
    // Set through the CSSOM: a style="" attribute is inline style, which the pages' CSP refuses.
    grid.style.gridTemplateColumns = `repeat(${e.n_agents}, minmax(0, 1fr))`;
    const box = el("div", { class: "round", "data-round": r.round },
      el("h3", {}, `Round ${r.round} — vote `, el("span", { class: "vote", "data-field": "vote" }, fmt(r.vote)), " ",
        mark(r.vote === null ? null : r.vote_correct), ` (gold ${e.gold}) · `,
        el("span", { "data-field": "round_tokens" }, String(r.tokens)), " tokens · ", String(r.calls), " calls"),
      el("div", { class: "round-body" }, graph(r, e.n_agents, last), grid));
    if (diag) box.append(el("p", { class: "diag" }, diag + (r.round > 0 ? ` · graph from ${r.graph_from}` : "")));
    if (r.decision) box.append(el("details", { class: "decision" }, el("summary", {}, "router decision"), el("pre", {}, JSON.stringify(r.decision, null, 2))));
    return box;
  }

  function renderAgent(r, a, turns, active, e, change) {
    const cap = r.max_tokens && r.max_tokens[a] !== null && r.max_tokens[a] !== undefined ? ` · cap ${r.max_tokens[a]} tokens` : "";
    return el("div", { class: "agent" + (active ? "" : " inactive"), "data-agent": a },
      el("h4", {}, `agent ${a + 1} · ${(e.models || [])[a] || ""}${active ? "" : " · inactive"}${cap}`, changeMark(change)),
      turns.map((t) => renderTurn(r, t)));
  }

  function renderTurn(r, t) {
    const peers = t.sources.map((s) => s + 1).join(", ");
    const who = t.phase === "critique" ? `critiques ${peers}` : peers ? `saw ${peers}` : "";
    const verdicts = t.verdicts.length ? " · verdicts " + t.verdicts.map((v, i) => `${t.sources[i] + 1}:${v || "?"}`).join(" ") : "";
    const said = t.phase === "critique" && t.answer === null ? [] :  // a critique need not answer
      [el("b", { "data-k": "answer" }, fmt(t.answer)), " ", mark(t.correct), " conf ",
        el("span", { "data-k": "confidence" }, fmt(t.confidence)), " · "];
    return el("div", { class: "turn", "data-turn": `${r.round}-${t.agent}-${t.phase}` },
      el("span", { class: "phase" }, t.phase), " ", said,
      el("span", { "data-k": "tokens" }, String(t.prompt_tokens + t.completion_tokens)), " tok",
      t.parsed ? "" : el("span", { class: "bad" }, " · parse failed"), t.cache_hit ? " · cached" : "",
      who ? el("div", {}, who + verdicts) : null,
      t.reasoning ? el("details", { class: "reasoning", open: !state.fold }, el("summary", {}, "reasoning"), el("pre", {}, t.reasoning)) : null,
      el("details", {}, el("summary", {}, "full text" + (t.truncated ? " (cut)" : "")), el("pre", { "data-k": "text" }, t.text || "")));
  }

  // ---- the round's graph: agents on a circle, an arrow s → t when t saw s ------------------------
  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  }

  function graph(r, n, last) {
    const size = 170, c = size / 2, R = n > 1 ? 58 : 0, node = 13;
    const pos = Array.from({ length: n }, (_, i) => [c + R * Math.sin((2 * Math.PI * i) / n), c - R * Math.cos((2 * Math.PI * i) / n)]);
    const root = svg("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, class: "graph" });
    const id = "arrow-" + Math.random().toString(36).slice(2);
    const marker = svg("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#555" }));
    const defs = svg("defs", {});
    defs.append(marker);
    root.append(defs);
    for (const edge of r.edges) root.append(arrow(pos[edge.source], pos[edge.target], edge, node, id));
    const active = new Set(r.active);
    for (let i = 0; i < n; i++) {
      const t = last[i];
      const fill = !t || t.correct === null ? "#ccc" : t.correct ? "#8fd19e" : "#f1a19a";
      const g = svg("g", { opacity: active.has(i) || r.round === 0 ? 1 : 0.45 });
      g.append(svg("circle", { cx: pos[i][0], cy: pos[i][1], r: node, fill, stroke: "#333" }));
      const label = svg("text", { x: pos[i][0], y: pos[i][1] + 4, "text-anchor": "middle", "font-size": 11 });
      label.textContent = String(i + 1);
      g.append(label);
      root.append(g);
    }
    return root;
  }

  function arrow(a, b, edge, node, markerId) {
    if (!a || !b) return svg("g", {});
    const dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy) || 1;
    const [ux, uy] = [dx / len, dy / len];
    const s = [a[0] + ux * node, a[1] + uy * node], t = [b[0] - ux * (node + 2), b[1] - uy * (node + 2)];
    const bend = [(s[0] + t[0]) / 2 - uy * 10, (s[1] + t[1]) / 2 + ux * 10];  // two-way edges do not overlap
    const width = edge.weight === null || edge.weight === undefined ? 1.2 : 0.6 + 3 * edge.weight;
    const path = svg("path", { class: "edge", d: `M${s[0]},${s[1]} Q${bend[0]},${bend[1]} ${t[0]},${t[1]}`, fill: "none", stroke: "#555", "stroke-width": width, "marker-end": `url(#${markerId})` });
    const title = svg("title", {});
    title.textContent = `${edge.source + 1} → ${edge.target + 1}` + (edge.weight === null || edge.weight === undefined ? "" : ` (weight ${fmt(edge.weight)})`);
    path.append(title);
    return path;
  }

  // ---- start --------------------------------------------------------------------------------------
  async function start() {
    const meta = await api("api/meta");
    $("meta").textContent = `${meta.episodes} episodes · ${meta.methods.length} methods · ${meta.dirs.join(", ")}` +
      (meta.simulated ? " · simulated agents" : "") + (STATIC ? " · static export" : "");
    fill($("f-method"), meta.methods.map((m) => m.method_label));
    fill($("f-dataset"), meta.datasets);
    fill($("f-team"), meta.teams);
    fill($("f-outcome"), meta.outcomes);
    fill($("f-flip"), meta.flips, (f) => ({ w2r: "wrong → right", r2w: "right → wrong", none: "no flip" })[f] || f);
    const reload = () => { state.offset = 0; loadList().catch(showError); };
    for (const id of ["f-method", "f-dataset", "f-team", "f-outcome", "f-flip", "f-parse"]) $(id).addEventListener("change", reload);
    $("f-item").addEventListener("input", reload);
    $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); loadList().catch(showError); });
    $("next").addEventListener("click", () => { state.offset += PAGE; loadList().catch(showError); });
    $("close").addEventListener("click", () => {
      $("detail").hidden = true;
      $("main").classList.remove("open", "comparing");
      state.detail = null;
      history.replaceState(null, "", "#");
    });
    $("fold").addEventListener("change", (ev) => {
      state.fold = ev.target.checked;
      for (const box of document.querySelectorAll("#panes details.reasoning")) box.open = !state.fold;
    });
    $("compare").addEventListener("change", (ev) => compareWith(ev.target.value).catch(showError));
    window.addEventListener("hashchange", () => openFromHash().catch(showError));
    await loadList();
    await openFromHash();
  }

  // `#episode=<id>` opens one episode (`sweep view OUT --episode ID` prints that URL); `#ep=` is the
  // form earlier versions wrote.
  async function openFromHash() {
    const params = new URLSearchParams(window.location.hash.slice(1));
    const id = params.get("episode") || params.get("ep");
    if (id && (!state.detail || state.detail.episode.episode_id !== id)) await openEpisode(id);
  }

  start().catch(showError);
})();
