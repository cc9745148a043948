// The live page of kinesis-esm run. It reads one stream of server-sent events (/page/events)
// and draws what they say; the server decides everything (phases, lineage depths, decoded
// records). No framework: a few DOM helpers, and the lineage graph and chart in plain SVG.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CHART_WINDOW_MS = 5 * 60 * 1000; // the chart shows the last five minutes
const CHART_BUCKET_MS = 10 * 1000; // in buckets of ten seconds
const LOG_LINES_KEPT = 1000;
const LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];
const COLOURS = ["#0969da", "#1a7f37", "#8250df", "#bf3989", "#9a6700", "#cf222e", "#57606a"];

let latest = null; // the last status document
const history = new Map(); // "stream/shard" -> [[time, settled records], ...]
const openDetails = new Set(); // which on-failure lists the user opened
const logLines = [];

// Builds an element: el("td", {class: "text"}, "text", childNode, ...).
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  setAttributes(node, attributes);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  setAttributes(node, attributes);
  node.append(...children);
  return node;
}

function setAttributes(node, attributes) {
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
}

function phaseClass(phase) {
  return "phase-" + phase.replace(/ /g, "-");
}

// ---- the status -------------------------------------------------------------------------

function onStatus(document_) {
  latest = document_;
  const now = document_.atEpochMillis;
  for (const mapping of document_.mappings) {
    for (const shard of mapping.shards) {
      const key = mapping.stream + "/" + shard.id;
      const samples = history.get(key) || [];
      samples.push([now, shard.acked + shard.dropped + shard.undecodable + shard.discarded]);
      while (samples.length > 2 && samples[0][0] < now - CHART_WINDOW_MS - CHART_BUCKET_MS) samples.shift();
      history.set(key, samples);
    }
  }
  render();
  fillStreamChoices();
}

function render() {
  if (!latest) return;
  const section = document.getElementById("mappings");
  if (latest.mappings.length === 0) {
    section.replaceChildren(el("p", { class: "quiet" }, "No mapping is running yet."));
    return;
  }
  section.replaceChildren(...latest.mappings.map(renderMapping));
}

function renderMapping(mapping) {
  const settings = el("p", { class: "settings" },
    ...mapping.settings.map(([name, value]) => el("span", {}, name + " ", el("b", {}, value))));
  const heldPanels = mapping.shards.filter((shard) => shard.held).map((shard) => renderHeld(mapping, shard));
  return el("article", { class: "mapping", "data-function": mapping.function, "data-stream": mapping.stream },
    el("h2", {}, mapping.function + " ← stream " + mapping.stream),
    settings,
    mapping.lastError ? el("p", { class: "error" }, mapping.lastError) : null,
    renderEnvironments(mapping),
    renderLineage(mapping),
    ...heldPanels,
    renderTable(mapping),
    renderRecent(mapping),
    renderChart(mapping),
    renderOnFailure(mapping));
}

// A function on Managed Instances: its execution environments running now, each with its
// invocations in flight.
function renderEnvironments(mapping) {
  if (!mapping.environments || mapping.environments.length === 0) return null;
  return el("p", { class: "settings environments" }, "execution environments",
    ...mapping.environments.map((environment) => el("span", { "data-environment": String(environment.number) },
      "#" + environment.number + " ", el("b", {}, String(environment.inFlight)), " in flight")));
}

// The lineage: one row per depth, parents above children, a line from each parent to each
// child.
function renderLineage(mapping) {
  const width = 196, height = 58, gapX = 16, gapY = 34;
  const rows = new Map();
  for (const shard of mapping.shards) {
    if (!rows.has(shard.depth)) rows.set(shard.depth, []);
    rows.get(shard.depth).push(shard);
  }
  const place = new Map();
  let widest = 0;
  for (const [depth, shards] of rows) {
    shards.forEach((shard, index) => place.set(shard.id, { x: index * (width + gapX), y: depth * (height + gapY) }));
    widest = Math.max(widest, shards.length);
  }
  const graph = svg("svg", {
    class: "lineage",
    width: Math.max(1, widest * (width + gapX) - gapX) + 4,
    height: rows.size * (height + gapY) - gapY + 4,
    role: "img",
    "aria-label": "shard lineage of stream " + mapping.stream,
  });
  for (const shard of mapping.shards) {
    for (const parent of shard.parents) {
      const from = place.get(parent), to = place.get(shard.id);
      if (!from || !to) continue;
      graph.append(svg("line", { x1: from.x + width / 2 + 2, y1: from.y + height + 2, x2: to.x + width / 2 + 2, y2: to.y + 2 }));
    }
  }
  for (const shard of mapping.shards) {
    const { x, y } = place.get(shard.id);
    const retry = shard.held && shard.held.nextRetry ? retryText(shard.held.nextRetry) : "";
    graph.append(svg("g", { class: "shard " + phaseClass(shard.phase), "data-shard": shard.id, "data-phase": shard.phase, transform: `translate(${x + 2},${y + 2})` },
      svg("title", {}, shard.id + ": " + shard.phase),
      svg("rect", { width, height }),
      svg("text", { x: 8, y: 16 }, shard.id),
      svg("text", { x: 8, y: 32, class: "phase" }, shard.phase + (retry ? " · " + retry : "")),
      svg("text", { x: 8, y: 48, class: "checkpoint" }, "checkpoint " + shard.checkpointShort)));
  }
  return graph;
}

function retryText(next) {
  const seconds = Math.max(0, Math.round((next.atEpochMillis - Date.now()) / 1000));
  const of = next.limit === null ? "" : " of " + next.limit;
  return next.number === 0 ? `next try in ${seconds} s` : `retry ${next.number}${of} in ${seconds} s`;
}

function renderHeld(mapping, shard) {
  const held = shard.held;
  const record = held.record;
  let data = el("p", { class: "quiet" }, "(the record could not be read from the stream)");
  let key = null;
  if (record) {
    key = el("div", {}, "partition key ", el("code", { class: "partition-key" }, record.partitionKey));
    const [kind, text] = Object.entries(record.data)[0];
    data = el("pre", { class: "data", "data-kind": kind }, text);
  }
  const attempts = held.nextRetry && held.nextRetry.number > 0
    ? `attempt ${held.nextRetry.number + 1}` + (held.nextRetry.limit === null ? "" : ` of ${held.nextRetry.limit + 1}`)
    : `${held.failedDeliveries} failed ${held.failedDeliveries === 1 ? "delivery" : "deliveries"}`;
  return el("div", { class: "held", "data-shard": shard.id },
    el("h3", {}, "Held on " + shard.id),
    el("div", {}, "sequence number ", el("code", { class: "sequence-number" }, held.sequenceNumber)),
    key,
    el("div", { class: "reason" }, "why: " + held.reason),
    el("div", {}, attempts + (held.nextRetry ? "; " + retryText(held.nextRetry) : "") +
      (held.retriesCapped ? "" : " (no retry limit)")),
    data);
}

// The shards' counts under the summary's headings and in its order (`kinesis-esm status`).
function renderTable(mapping) {
  const columns = ["shard", "phase", "records", "acked", "dropped", "undecodable", "discarded", "filtered", "held", "deliveries", "invocations", "retries", "iterator age"];
  return el("table", { class: "shards" },
    el("thead", {}, el("tr", {}, ...columns.map((name) => el("th", {}, name)))),
    el("tbody", {}, ...mapping.shards.map((shard) => el("tr", { "data-shard": shard.id },
      el("td", {}, shard.id), el("td", { class: "text" }, shard.phase),
      el("td", {}, shard.records), el("td", {}, shard.acked), el("td", {}, shard.dropped),
      el("td", {}, shard.undecodable), el("td", {}, shard.discarded), el("td", {}, shard.filtered), el("td", {}, shard.unsettled),
      el("td", {}, shard.delivered), el("td", {}, shard.invocations), el("td", {}, shard.retries),
      el("td", {}, shard.iteratorAgeMillis === null ? "–" : shard.iteratorAgeMillis + " ms")))));
}

// Each shard's recent invocations, newest first: a compact table per shard that was invoked.
function renderRecent(mapping) {
  const invoked = mapping.shards.filter((shard) => shard.recent.length > 0);
  if (invoked.length === 0) return null;
  const columns = ["sent", "first", "last", "records", "took", "verdict"];
  return el("div", { class: "recent-list" }, ...invoked.map((shard) => el("div", { class: "recent", "data-shard": shard.id },
    el("h3", {}, "Recent invocations of " + shard.id),
    el("table", {},
      el("thead", {}, el("tr", {}, ...columns.map((name) => el("th", {}, name)))),
      el("tbody", {}, ...shard.recent.map((invocation) => el("tr", {
        class: "verdict-" + invocation.kind + (invocation.discarded ? " discarded" : ""),
        "data-kind": invocation.kind,
        "data-held-at": invocation.heldAt,
      },
      el("td", {}, new Date(invocation.atEpochMillis).toISOString().slice(11, 23)),
      el("td", { title: invocation.first }, invocation.firstShort),
      el("td", { title: invocation.last }, invocation.lastShort),
      el("td", {}, invocation.records), el("td", {}, invocation.duration),
      el("td", { class: "text verdict" }, invocation.verdict))))))));
}

// Records settled per second, per shard, in ten-second buckets over the last five minutes.
function renderChart(mapping) {
  const width = 560, height = 90, now = Date.now();
  const buckets = CHART_WINDOW_MS / CHART_BUCKET_MS;
  const series = mapping.shards.map((shard) => {
    const samples = history.get(mapping.stream + "/" + shard.id) || [];
    const rates = [];
    for (let bucket = 0; bucket < buckets; bucket++) {
      const end = now - (buckets - bucket - 1) * CHART_BUCKET_MS;
      rates.push((settledAt(samples, end) - settledAt(samples, end - CHART_BUCKET_MS)) * 1000 / CHART_BUCKET_MS);
    }
    return { shard, rates };
  });
  const top = Math.max(1, ...series.flatMap((line) => line.rates));
  const chart = svg("svg", { width, height, role: "img", "aria-label": "records settled per second" });
  series.forEach(({ rates }, index) => {
    const points = rates.map((rate, bucket) =>
      `${(bucket * width / (buckets - 1)).toFixed(1)},${(height - 4 - rate * (height - 8) / top).toFixed(1)}`);
    chart.append(svg("polyline", { points: points.join(" "), stroke: COLOURS[index % COLOURS.length] }));
  });
  return el("div", { class: "chart" },
    el("div", { class: "legend" }, el("span", {}, `records settled per second, last 5 minutes (top ${top.toFixed(1)}/s)`),
      ...series.map(({ shard }, index) => el("span", {}, el("i", { style: "background:" + COLOURS[index % COLOURS.length] }), shard.id))),
    chart);
}

// The settled count a shard had at `time`: the last sample at or before it.
function settledAt(samples, time) {
  let found = samples.length ? samples[0][1] : 0;
  for (const [at, settled] of samples) {
    if (at > time) break;
    found = settled;
  }
  return found;
}

function renderOnFailure(mapping) {
  if (mapping.onFailureCount === 0) return null;
  const key = mapping.function + "/" + mapping.stream;
  const details = el("details", { class: "on-failure" },
    el("summary", {}, `${mapping.onFailureCount} on-failure ${mapping.onFailureCount === 1 ? "record" : "records"} → ${mapping.onFailureDestination || "(no on-failure destination)"}`),
    ...mapping.onFailure.map((record) => el("pre", {}, JSON.stringify(record, null, 2))));
  details.open = openDetails.has(key);
  details.addEventListener("toggle", () => details.open ? openDetails.add(key) : openDetails.delete(key));
  return details;
}

// ---- the forms --------------------------------------------------------------------------

function fillStreamChoices() {
  const streams = [...new Set(latest.mappings.map((mapping) => mapping.stream))];
  for (const id of ["put-stream", "reshard-stream"]) fillSelect(document.getElementById(id), streams);
  fillShardChoices();
}

function fillShardChoices() {
  if (!latest) return;
  const stream = document.getElementById("reshard-stream").value;
  const mapping = latest.mappings.find((candidate) => candidate.stream === stream);
  // Only open shards can be split or merged; a closed one has ended or waits to end.
  const open = mapping ? mapping.shards.filter((shard) => !["ended"].includes(shard.phase) && !hasChildren(mapping, shard.id)).map((shard) => shard.id) : [];
  fillSelect(document.getElementById("reshard-shard"), open);
  fillSelect(document.getElementById("reshard-adjacent"), open);
}

function hasChildren(mapping, id) {
  return mapping.shards.some((shard) => shard.parents.includes(id));
}

function fillSelect(select, values) {
  const chosen = select.value;
  const current = [...select.options].map((option) => option.value);
  if (current.join("\n") === values.join("\n")) return;
  select.replaceChildren(...values.map((value) => el("option", { value }, value)));
  if (values.includes(chosen)) select.value = chosen;
}

async function act(path, body) {
  const result = document.getElementById("action-result");
  result.className = "result";
  result.textContent = "…";
  try {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const answer = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
    result.textContent = answer.message || answer.error;
    if (!response.ok) result.className = "result failed";
  } catch (error) {
    result.className = "result failed";
    result.textContent = "kinesis-esm did not answer: " + error.message;
  }
}

function wireForms() {
  document.getElementById("put-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act("/page/put", {
      stream: document.getElementById("put-stream").value,
      partitionKey: document.getElementById("put-key").value,
      data: document.getElementById("put-data").value,
    });
  });
  document.getElementById("reshard-stream").addEventListener("change", fillShardChoices);
  document.getElementById("reshard-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const stream = document.getElementById("reshard-stream").value;
    const shard = document.getElementById("reshard-shard").value;
    const adjacent = document.getElementById("reshard-adjacent").value;
    const merge = event.submitter && event.submitter.name === "merge";
    act("/page/reshard", merge ? { stream, merge: [shard, adjacent] } : { stream, split: shard });
  });
  for (const id of ["log-shard", "log-record", "log-level"]) {
    document.getElementById(id).addEventListener("input", renderLog);
  }
}

// ---- the function's log -----------------------------------------------------------------

function onLog(line) {
  logLines.push(line);
  if (logLines.length > LOG_LINES_KEPT) logLines.shift();
  const list = document.getElementById("log-lines");
  if (shown(line)) {
    list.append(renderLine(line));
    while (list.childElementCount > LOG_LINES_KEPT) list.firstElementChild.remove();
    list.scrollTop = list.scrollHeight;
  }
}

function shown(line) {
  const shard = document.getElementById("log-shard").value.trim();
  const record = document.getElementById("log-record").value.trim();
  const least = LEVELS.indexOf(document.getElementById("log-level").value);
  return LEVELS.indexOf(line.level) >= least &&
    (!shard || (line.shardId || "").includes(shard)) &&
    (!record || (line.sequenceNumber || "").includes(record));
}

function renderLine(line) {
  const time = new Date(line.atEpochMillis).toISOString().slice(11, 23);
  return el("li", { class: line.level, "data-shard": line.shardId, "data-sequence-number": line.sequenceNumber },
    el("span", { class: "quiet" }, time + " "), el("span", { class: "level" }, line.level), line.function + ": " + line.text);
}

function renderLog() {
  document.getElementById("log-lines").replaceChildren(...logLines.filter(shown).map(renderLine));
}

// ---- the event stream -------------------------------------------------------------------

function connect() {
  const connection = document.getElementById("connection");
  const events = new EventSource("/page/events");
  events.addEventListener("open", () => { connection.textContent = "live"; connection.className = "connection live"; });
  // EventSource reconnects by itself; the page says so meanwhile.
  events.addEventListener("error", () => { connection.textContent = "reconnecting…"; connection.className = "connection"; });
  events.addEventListener("status", (event) => onStatus(JSON.parse(event.data)));
  events.addEventListener("log", (event) => onLog(JSON.parse(event.data)));
  events.addEventListener("missed", (event) => onLog({
    atEpochMillis: Date.now(), function: "kinesis-esm", level: "WARN", text: `the page fell behind and missed ${JSON.parse(event.data).lines} lines`,
  }));
}

wireForms();
connect();
// Countdowns and the chart move on between events.
setInterval(render, 1000);
