// The TFJob tab: reads ./api/view and ./api/logs and draws the page.
// Everything that came from the cluster is put in the page as text (textContent), never as markup.
"use strict";

(function () {
  const REFRESH_MS = 5000;
  const EXPAND_UP_TO = 8; // a replica type with more slots starts collapsed
  const EVENTS_FIRST = 15; // events shown before "Show all"
  const SVG_NS = "http://www.w3.org/2000/svg";
  const OUTCOMES = {
    succeeded: "succeeded",
    failed_permanent: "failed (permanent)",
    failed_retryable: "failed (retryable)",
    deleted: "deleted",
    running: "running",
  };

  const query = new URLSearchParams(window.location.search);
  const ids = {
    dag_id: query.get("dag_id") || "",
    run_id: query.get("run_id") || "",
    task_id: query.get("task_id") || "",
    map_index: query.get("map_index") || "-1",
  };
  if (query.get("try_number")) ids.try_number = query.get("try_number");

  const state = {
    view: null,
    groupOpen: new Map(), // replica type -> open in the replicas table
    laneOpen: new Map(), // replica type -> lanes shown in the timeline
    logPod: null,
    logLoaded: false,
    allEvents: false,
    timer: null,
  };

  // ---- text and elements -------------------------------------------------------------------

  // Control characters (ANSI escapes included) shown as their visible symbols, not interpreted.
  function printable(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, function (c) {
      return c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0));
    });
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = printable(text);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const name of Object.keys(attrs || {})) node.setAttribute(name, String(attrs[name]));
    if (text !== undefined && text !== null) node.textContent = printable(text);
    return node;
  }

  function byId(id) {
    return document.getElementById(id);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // ---- times -------------------------------------------------------------------------------

  function ms(iso) {
    if (!iso) return null;
    const value = Date.parse(iso);
    return Number.isNaN(value) ? null : value;
  }

  function clock(iso) {
    const value = ms(iso);
    if (value === null) return "—";
    return new Date(value).toISOString().slice(11, 19);
  }

  function stamp(iso) {
    const value = ms(iso);
    if (value === null) return "—";
    return new Date(value).toISOString().replace("T", " ").slice(0, 19);
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    const total = Math.max(0, Math.round(Number(seconds)));
    const h = Math.floor(total / 3600);
    const m = Math.floor((total % 3600) / 60);
    const s = total % 60;
    if (h) return h + "h " + m + "m " + s + "s";
    if (m) return m + "m " + s + "s";
    return s + "s";
  }

  function dash(value) {
    return value === null || value === undefined || value === "" ? "—" : value;
  }

  // ---- requests ----------------------------------------------------------------------------

  function apiUrl(path, extra) {
    const url = new URL(path, window.location.href);
    const params = Object.assign({}, ids, extra || {});
    for (const name of Object.keys(params)) url.searchParams.set(name, params[name]);
    return url.toString();
  }

  // Airflow 3.2+ sends its cookie; 3.1 keeps the token in localStorage and wants a header.
  function authHeaders() {
    let token = null;
    try {
      token = window.localStorage.getItem("token");
    } catch (error) {
      token = null;
    }
    return token ? { Authorization: "Bearer " + token } : {};
  }

  async function request(url) {
    const answer = await fetch(url, { credentials: "same-origin", headers: authHeaders() });
    if (!answer.ok) {
      let detail = answer.statusText;
      try {
        const body = await answer.json();
        if (body && body.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
      } catch (error) {
        /* not JSON */
      }
      throw new Error(answer.status + " " + detail);
    }
    return answer;
  }

  // ---- header ------------------------------------------------------------------------------

  function badgeClass(stateName) {
    const value = String(stateName || "").toLowerCase();
    if (value === "succeeded") return "badge ok";
    if (value === "failed") return "badge bad";
    return "badge neutral";
  }

  function fact(list, name, value, className) {
    const row = el("div", className || null);
    row.appendChild(el("dt", null, name));
    const cell = el("dd");
    if (value instanceof Node) cell.appendChild(value);
    else cell.textContent = printable(dash(value));
    row.appendChild(cell);
    list.appendChild(row);
  }

  function renderHeader(view) {
    const job = view.tfjob || {};
    byId("job-name").textContent = printable((job.namespace || "?") + "/" + (job.name || "?"));
    const source = byId("source");
    source.textContent = view.status === "live" ? "live" : "from the record";
    source.className = "source " + (view.status === "live" ? "live" : "record");

    const verdict = view.verdict;
    const verdictBox = byId("verdict");
    if (verdict) {
      verdictBox.hidden = false;
      byId("verdict-state").textContent = printable(verdict.state);
      byId("verdict-state").className = badgeClass(verdict.state);
      byId("verdict-reason").textContent = printable(verdict.reason);
      byId("verdict-retryable").textContent =
        verdict.retryable === true ? "retryable" : verdict.retryable === false ? "not retryable" : "";
      byId("verdict-time").textContent = verdict.decided_at ? "decided " + stamp(verdict.decided_at) : "";
      byId("verdict-message").textContent = printable(verdict.message);
      const deciding = verdict.deciding || [];
      byId("verdict-deciding").textContent = deciding.length ? printable("Decided by: " + deciding.join(", ")) : "";
    } else {
      verdictBox.hidden = false;
      byId("verdict-state").textContent = view.running ? "Running" : "No verdict";
      byId("verdict-state").className = "badge neutral";
      for (const id of ["verdict-reason", "verdict-retryable", "verdict-time", "verdict-message", "verdict-deciding"]) {
        byId(id).textContent = "";
      }
    }

    const facts = byId("job-facts");
    clear(facts);
    fact(facts, "UID", job.uid);
    fact(facts, "Try", job.try_number);
    fact(facts, "Start (UTC)", stamp(job.start));
    fact(facts, "End (UTC)", stamp(job.end));
    fact(facts, "Duration", duration(job.duration_seconds));
    const url = job.dashboard_url;
    if (url && /^https?:\/\//i.test(String(url))) {
      const link = el("a", null, url);
      link.href = String(url);
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      fact(facts, "Dashboard", link);
    }

    const conditions = job.conditions || [];
    const table = byId("conditions");
    const body = table.tBodies[0];
    clear(body);
    for (const condition of conditions) {
      const row = el("tr");
      row.appendChild(el("td", null, condition.type));
      row.appendChild(el("td", null, condition.status));
      row.appendChild(el("td", null, dash(condition.reason)));
      row.appendChild(el("td", "message", dash(condition.message)));
      row.appendChild(el("td", null, stamp(condition.time)));
      body.appendChild(row);
    }
    table.hidden = conditions.length === 0;
  }

  // ---- replicas ----------------------------------------------------------------------------

  function groupSummary(group) {
    const phases = new Map();
    let recreations = 0;
    const marked = [];
    for (const row of group.rows) {
      const phase = row.phase || "Unknown";
      phases.set(phase, (phases.get(phase) || 0) + 1);
      recreations += Number(row.recreations || 0);
      if (row.culprit) marked.push(row.type + " " + row.index + " (culprit)");
      else if (row.deciding) marked.push(row.type + " " + row.index + " (decided)");
    }
    const parts = [group.count + (group.count === 1 ? " replica" : " replicas")];
    for (const [phase, count] of phases) parts.push(count + " " + phase);
    if (recreations) parts.push(recreations + (recreations === 1 ? " recreation" : " recreations"));
    if (marked.length) parts.push(marked.slice(0, 3).join(", ") + (marked.length > 3 ? ", …" : ""));
    return parts.join(" · ");
  }

  function replicaRow(row) {
    const tr = el("tr", "replica");
    tr.dataset.replica = row.type + "-" + row.index;
    if (row.culprit) tr.classList.add("culprit");
    if (row.deciding) tr.classList.add("deciding");
    tr.appendChild(el("td", "slot", row.type + " " + row.index));
    tr.appendChild(el("td", "pod", dash(row.pod)));
    const phase = tr.appendChild(el("td", "phase", dash(row.phase)));
    if (row.phase_note) phase.appendChild(el("span", "muted", " " + row.phase_note));
    tr.appendChild(el("td", "num", dash(row.exit_code)));
    tr.appendChild(el("td", null, dash(row.reason)));
    tr.appendChild(el("td", "num", dash(row.restarts)));
    tr.appendChild(el("td", "num", dash(row.recreations)));
    tr.appendChild(el("td", null, dash(row.node)));
    tr.appendChild(el("td", null, clock(row.start)));
    tr.appendChild(el("td", null, clock(row.end)));
    const mark = row.culprit ? "culprit" : row.deciding ? "decided the verdict" : "";
    tr.appendChild(el("td", "mark", mark));
    return tr;
  }

  function renderReplicas(view) {
    const replicas = view.replicas || { groups: [], more: 0 };
    const holder = byId("replica-groups");
    clear(holder);
    for (const group of replicas.groups || []) {
      const details = el("details", "group");
      details.dataset.type = group.type;
      const remembered = state.groupOpen.get(group.type);
      details.open = remembered === undefined ? group.count <= EXPAND_UP_TO : remembered;
      details.addEventListener("toggle", function () {
        state.groupOpen.set(group.type, details.open);
      });
      const summary = el("summary");
      summary.appendChild(el("strong", null, group.type));
      summary.appendChild(el("span", "muted", " — " + groupSummary(group)));
      details.appendChild(summary);
      const table = el("table", "grid");
      const head = el("tr");
      for (const name of ["Replica", "Pod", "Phase", "Exit", "Reason", "Restarts", "Recreations", "Node", "Start", "End", ""]) {
        head.appendChild(el("th", null, name));
      }
      table.appendChild(el("thead")).appendChild(head);
      const body = el("tbody");
      for (const row of group.rows) body.appendChild(replicaRow(row));
      table.appendChild(body);
      details.appendChild(table);
      holder.appendChild(details);
    }
    const more = byId("replicas-more");
    more.hidden = !replicas.more;
    more.textContent = replicas.more ? "and " + replicas.more + " more replica slots not shown" : "";
  }

  // ---- timeline ----------------------------------------------------------------------------

  const LABEL_W = 150;
  const LANE_H = 22;
  const BAR_H = 14;
  const AXIS_H = 24;

  function barTitle(bar) {
    const lines = [bar.pod || "pod", OUTCOMES[bar.outcome] || bar.outcome || ""];
    if (bar.exit_code !== null && bar.exit_code !== undefined) lines.push("exit code " + bar.exit_code);
    if (bar.reason) lines.push("reason " + bar.reason);
    if (bar.restarts) lines.push(bar.restarts + " restarts");
    lines.push("created " + clock(bar.created) + ", running " + clock(bar.running) + ", ended " + clock(bar.end));
    return lines.join("\n");
  }

  function laneRows(timeline) {
    // Lanes grouped by type, in the order they come; a collapsed type is one lane of all its bars.
    const order = [];
    const byType = new Map();
    for (const lane of timeline.lanes || []) {
      if (!byType.has(lane.type)) {
        byType.set(lane.type, []);
        order.push(lane.type);
      }
      byType.get(lane.type).push(lane);
    }
    const rows = [];
    for (const type of order) {
      const lanes = byType.get(type);
      const remembered = state.laneOpen.get(type);
      const open = remembered === undefined ? lanes.length <= EXPAND_UP_TO : remembered;
      rows.push({ kind: "group", type: type, count: lanes.length, open: open });
      if (open) {
        for (const lane of lanes) rows.push({ kind: "lane", type: type, label: type + " " + lane.index, key: type + "-" + lane.index, bars: lane.bars || [] });
      } else {
        const bars = [];
        for (const lane of lanes) for (const bar of lane.bars || []) bars.push(bar);
        rows.push({ kind: "lane", type: type, label: "all " + lanes.length, key: type + "-all", bars: bars });
      }
    }
    return rows;
  }

  function renderTimeline(view) {
    const timeline = view.timeline || { lanes: [] };
    const chart = byId("timeline-chart");
    clear(chart);
    const now = Date.now();
    let start = ms(timeline.start);
    let end = ms(timeline.end);
    for (const lane of timeline.lanes || []) {
      for (const bar of lane.bars || []) {
        const created = ms(bar.created);
        const ended = ms(bar.end);
        if (created !== null && (start === null || created < start)) start = created;
        if (ended !== null && (end === null || ended > end)) end = ended;
      }
    }
    if (view.running || end === null) end = Math.max(end || 0, now);
    if (start === null) start = end - 60000;
    if (end <= start) end = start + 1000;

    const rows = laneRows(timeline);
    const width = Math.max(640, chart.clientWidth || 900);
    const height = AXIS_H + rows.length * LANE_H + 6;
    const plotW = width - LABEL_W - 16;
    const x = function (value) {
      return LABEL_W + ((value - start) / (end - start)) * plotW;
    };
    const root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", class: "chart" });
    root.appendChild(svg("title", {}, "Pod instances of each replica slot over time"));

    // Axis: five ticks.
    for (let i = 0; i <= 4; i += 1) {
      const value = start + ((end - start) * i) / 4;
      const tx = x(value);
      root.appendChild(svg("line", { x1: tx, x2: tx, y1: AXIS_H - 4, y2: height, class: "tick" }));
      const iso = new Date(value).toISOString();
      const label = end - start < 20000 ? iso.slice(11, 21) : clock(iso); // tenths of a second for short spans
      root.appendChild(svg("text", { x: tx, y: AXIS_H - 8, class: "tick-label", "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, label));
    }

    rows.forEach(function (row, position) {
      const top = AXIS_H + position * LANE_H;
      if (row.kind === "group") {
        const group = svg("g", { class: "lane-group", tabindex: 0, "data-type": row.type });
        group.appendChild(svg("rect", { x: 0, y: top, width: width, height: LANE_H, class: "group-band" }));
        group.appendChild(svg("text", { x: 4, y: top + 15, class: "group-label" }, (row.open ? "▾ " : "▸ ") + row.type + " (" + row.count + ")"));
        const toggle = function () {
          state.laneOpen.set(row.type, !row.open);
          renderTimeline(state.view);
        };
        group.addEventListener("click", toggle);
        group.addEventListener("keydown", function (event) {
          if (event.key === "Enter" || event.key === " ") toggle();
        });
        root.appendChild(group);
        return;
      }
      const lane = svg("g", { class: "lane", "data-lane": row.key });
      lane.appendChild(svg("text", { x: 16, y: top + 15, class: "lane-label" }, row.label));
      for (const bar of row.bars) {
        const created = ms(bar.created);
        if (created === null) continue;
        const running = ms(bar.running);
        const ended = ms(bar.end) !== null ? ms(bar.end) : end;
        const outcome = OUTCOMES[bar.outcome] ? bar.outcome : "running";
        const mark = svg("g", { class: "bar " + outcome, "data-pod": bar.pod || "", "data-outcome": outcome });
        mark.appendChild(svg("title", {}, barTitle(bar)));
        const y = top + (LANE_H - BAR_H) / 2;
        const pendingEnd = running !== null ? running : ended;
        const x0 = x(created);
        const x1 = Math.max(x(pendingEnd), x0);
        mark.appendChild(svg("rect", { x: x0, y: y + 3, width: Math.max(x1 - x0, 1), height: BAR_H - 6, class: "pending" }));
        if (running !== null) {
          const x2 = Math.max(x(ended), x1 + 2);
          mark.appendChild(svg("rect", { x: x1, y: y, width: x2 - x1, height: BAR_H, rx: 2, class: "run" }));
        }
        const label = [];
        if (bar.exit_code !== null && bar.exit_code !== undefined && outcome !== "succeeded") label.push(String(bar.exit_code));
        if (bar.restarts) label.push("↻" + bar.restarts);
        if (label.length) mark.appendChild(svg("text", { x: Math.max(x(ended), x1 + 2) + 3, y: top + 15, class: "bar-label" }, label.join(" ")));
        lane.appendChild(mark);
      }
      root.appendChild(lane);
    });

    const verdictAt = ms(timeline.verdict_at);
    if (verdictAt !== null) {
      const vx = x(Math.min(Math.max(verdictAt, start), end));
      const line = svg("g", { class: "verdict-line" });
      line.appendChild(svg("title", {}, "verdict reached " + stamp(timeline.verdict_at)));
      line.appendChild(svg("line", { x1: vx, x2: vx, y1: AXIS_H - 4, y2: height }));
      const nearRight = vx > width - 70;
      line.appendChild(svg("text", { x: nearRight ? vx - 4 : vx + 4, y: height - 4, class: "verdict-label", "text-anchor": nearRight ? "end" : "start" }, "verdict"));
      root.appendChild(line);
    }
    chart.appendChild(root);

    const legend = byId("legend");
    if (!legend.firstChild) {
      for (const key of Object.keys(OUTCOMES)) {
        const item = el("li");
        item.appendChild(el("span", "swatch " + key));
        item.appendChild(document.createTextNode(OUTCOMES[key]));
        legend.appendChild(item);
      }
      const pending = el("li");
      pending.appendChild(el("span", "swatch swatch-pending"));
      pending.appendChild(document.createTextNode("thin part: pending (created, not yet running)"));
      legend.appendChild(pending);
      const line = el("li");
      line.appendChild(el("span", "swatch swatch-verdict"));
      line.appendChild(document.createTextNode("verdict reached"));
      legend.appendChild(line);
    }
  }

  // ---- logs --------------------------------------------------------------------------------

  function defaultPod(view) {
    const pods = (view.logs && view.logs.pods) || [];
    const culprits = new Set();
    for (const group of (view.replicas && view.replicas.groups) || []) {
      for (const row of group.rows) if (row.culprit && row.pod) culprits.add(row.pod);
    }
    const culprit = pods.find(function (pod) { return culprits.has(pod.pod); });
    if (culprit) return culprit.pod;
    const chief = pods.find(function (pod) { return String(pod.type).toLowerCase() === "chief" || String(pod.type).toLowerCase() === "master"; });
    if (chief) return chief.pod;
    const kept = (view.logs && view.logs.kept) || {};
    const printed = pods.find(function (pod) { return Object.prototype.hasOwnProperty.call(kept, pod.pod); });
    if (printed) return printed.pod;
    return pods.length ? pods[0].pod : null;
  }

  function renderLogPicker(view) {
    const logs = view.logs || { pods: [] };
    const select = byId("log-pod");
    const pods = logs.pods || [];
    const previous = state.logPod;
    clear(select);
    for (const pod of pods) {
      const option = el("option", null, pod.type + " " + pod.index + " — " + pod.pod + (pod.live ? "" : " (record)"));
      option.value = pod.pod;
      select.appendChild(option);
    }
    const names = pods.map(function (pod) { return pod.pod; });
    state.logPod = previous && names.indexOf(previous) >= 0 ? previous : defaultPod(view);
    if (state.logPod) select.value = state.logPod;
    const allowed = logs.allowed !== false;
    for (const id of ["log-pod", "log-lines", "log-show", "log-download"]) byId(id).disabled = !allowed || pods.length === 0;
    if (!allowed) {
      byId("log-status").textContent = "You may not read this DAG's task logs.";
      byId("log-text").textContent = "";
    } else if (pods.length === 0) {
      byId("log-status").textContent = "No replica log to show.";
    }
    return allowed && pods.length > 0;
  }

  function logParams(download) {
    const extra = { pod: byId("log-pod").value, lines: byId("log-lines").value };
    if (download) extra.download = "1";
    return extra;
  }

  async function showLog() {
    const pod = byId("log-pod").value;
    if (!pod) return;
    state.logPod = pod;
    const status = byId("log-status");
    status.textContent = "Reading the log of " + printable(pod) + "…";
    try {
      const answer = await request(apiUrl("api/logs", logParams(false)));
      const text = await answer.text();
      byId("log-text").textContent = printable(text);
      const source = answer.headers.get("X-TFJob-Log-Source") === "record" ? "kept in the record" : "live";
      const truncated = answer.headers.get("X-TFJob-Log-Truncated") === "true" ? " · older lines cut" : "";
      const count = text ? text.split("\n").length : 0;
      status.textContent = printable(pod) + " · " + count + (count === 1 ? " line · " : " lines · ") + source + truncated;
      state.logLoaded = true;
    } catch (error) {
      status.textContent = "Could not read the log: " + printable(error.message);
    }
  }

  async function downloadLog() {
    const status = byId("log-status");
    try {
      const answer = await request(apiUrl("api/logs", logParams(true)));
      const blob = await answer.blob();
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = (byId("log-pod").value || "pod").replace(/[^A-Za-z0-9._-]+/g, "_") + ".log";
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
    } catch (error) {
      status.textContent = "Could not download the log: " + printable(error.message);
    }
  }

  // ---- events ------------------------------------------------------------------------------

  function renderEvents(view) {
    const events = view.events || { items: [], more: 0 };
    const items = (events.items || []).slice().sort(function (a, b) {
      return (ms(b.time) || 0) - (ms(a.time) || 0);
    });
    const body = byId("events-table").tBodies[0];
    clear(body);
    const shown = state.allEvents ? items : items.slice(0, EVENTS_FIRST);
    for (const item of shown) {
      const row = el("tr", String(item.type).toLowerCase() === "warning" ? "event warning" : "event");
      row.appendChild(el("td", null, stamp(item.time)));
      row.appendChild(el("td", null, dash(item.type)));
      row.appendChild(el("td", null, dash(item.reason)));
      row.appendChild(el("td", null, dash(item.object)));
      row.appendChild(el("td", "message", dash(item.message)));
      body.appendChild(row);
    }
    if (!items.length) {
      const row = el("tr");
      const cell = el("td", "muted", "No events.");
      cell.colSpan = 5;
      row.appendChild(cell);
      body.appendChild(row);
    }
    const showAll = byId("events-all");
    showAll.hidden = shown.length === items.length;
    showAll.textContent = "Show all " + items.length + " events";
    const more = byId("events-more");
    more.hidden = !events.more;
    more.textContent = events.more ? "and " + events.more + " more (older) events" : "";
  }

  // ---- the page ----------------------------------------------------------------------------

  function setNotice(text, kind) {
    const notice = byId("notice");
    notice.hidden = !text;
    notice.textContent = printable(text || "");
    notice.className = "notice" + (kind ? " " + kind : "");
  }

  function showSections(visible) {
    for (const id of ["header", "replicas", "timeline", "logs", "events"]) byId(id).hidden = !visible;
  }

  function render(view) {
    state.view = view;
    const main = byId("tfjob");
    main.dataset.status = view.status;
    main.dataset.running = view.running ? "true" : "false";
    if (view.status === "no_tfjob" || view.status === "not_submitted") {
      showSections(false);
      const fallback = view.status === "no_tfjob" ? "This task instance ran no TFJob." : "This task has not submitted its TFJob yet.";
      setNotice(view.message || fallback, "info");
      return;
    }
    setNotice(view.message || "", view.status === "record" ? "record" : "info");
    showSections(true);
    renderHeader(view);
    renderReplicas(view);
    renderTimeline(view);
    const canRead = renderLogPicker(view);
    const livePod = ((view.logs && view.logs.pods) || []).some(function (pod) { return pod.pod === state.logPod && pod.live; });
    if (canRead && (!state.logLoaded || (view.running && livePod))) showLog();
    renderEvents(view);
  }

  async function refresh() {
    state.timer = null;
    let running = state.view ? state.view.running : false;
    try {
      const answer = await request(apiUrl("api/view"));
      const view = await answer.json();
      render(view);
      running = Boolean(view.running);
    } catch (error) {
      byId("tfjob").dataset.status = "error";
      setNotice("Could not load the TFJob view: " + error.message, "error");
    }
    byId("tfjob").dataset.loaded = "true";
    if (running) state.timer = setTimeout(refresh, REFRESH_MS);
  }

  function start() {
    byId("log-show").addEventListener("click", showLog);
    byId("log-download").addEventListener("click", downloadLog);
    byId("log-pod").addEventListener("change", showLog);
    byId("log-lines").addEventListener("change", showLog);
    byId("events-all").addEventListener("click", function () {
      state.allEvents = true;
      if (state.view) renderEvents(state.view);
    });
    let resizing = null;
    window.addEventListener("resize", function () {
      clearTimeout(resizing);
      resizing = setTimeout(function () {
        if (state.view && !byId("timeline").hidden) renderTimeline(state.view);
      }, 150);
    });
    refresh();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
