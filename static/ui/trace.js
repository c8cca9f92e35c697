// One turn's trace: the window as sent (messages and tools coloured by module, tokens each), the modules' details,
// the decision log, the cache-stable prefix, token method and duration; replay with its differences; feedback.
import { colourFor, usageBar } from "./bars.js";
import { api, fmt, get, h, loadModuleNames, lockForViewers, moduleLabel, notify, pct, plain, reportError, snapshotLimitSource } from "./lib.js";
import { badges, decisionText, eventLists, moduleTable } from "./snapshot_view.js";
import { comparison } from "./timeline.js";
import { costSection } from "./cost_view.js";

const $ = (id) => document.getElementById(id);
const { sessionId, turn, snapshotId } = document.body.dataset;
const session = `/v1/sessions/${encodeURIComponent(sessionId)}`;

const label = (id) => (id === "query" ? "Query" : id ? moduleLabel(id) : "Unattributed");
const colour = (id) => (id === "query" ? "#4a5360" : id ? colourFor(id) : "#6b7480");

function fact(name, value, testid) {
  return h("div", {}, h("dt", {}, name), h("dd", { dataset: testid ? { testid } : undefined }, value));
}

function showFacts(trace) {
  const snap = trace.snapshot;
  const limitNote = snapshotLimitSource(snap);
  $("trace-facts").replaceChildren(
    fact("Window type", h("a", { href: `/ui/types/${encodeURIComponent(trace.type_id)}` }, `${snap.window_type_name} (version ${trace.type_version})`)),
    fact("Model", `${trace.model}`),
    fact("Context limit", `${fmt(snap.effective_limit)} tokens (${limitNote})`),
    fact("Used", `${fmt(snap.total_used)} of ${fmt(snap.available_budget)} (${pct(snap.utilisation)})`, "used"),
    fact("Cache-stable prefix", `${fmt(snap.prefix_stable_tokens)} tokens (${pct(snap.total_used ? snap.prefix_stable_tokens / snap.total_used : 0)})`, "prefix"),
    fact("Token counting", snap.token_method || "not recorded", "token-method"),
    fact("Assembly time", `${Number(snap.duration_ms).toFixed(1)} ms`, "duration"),
    fact("Recorded", new Date(snap.created_at).toLocaleString()),
    ...extraFacts(snap));
}

const KNOWN = new Set(["window_type_id", "window_type_name", "model", "model_limit", "model_limit_source", "profile_override",
  "session_override", "effective_limit", "output_reserve", "available_budget", "query_tokens", "total_used", "modules",
  "condensations", "reallocations", "adjustments_fired", "decisions", "prefix_stable_tokens", "token_method", "duration_ms",
  "session_id", "profile_id", "turn", "created_at", "utilisation"]);

/** Facts the snapshot holds that this page has no special place for (newer fields, such as loop flags). */
function extraFacts(snap) {
  const words = (key) => key.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
  const show = (v) => (typeof v === "boolean" ? (v ? "yes" : "no") : typeof v === "number" ? fmt(v) : Array.isArray(v) ? v.join(", ") || "none" : String(v));
  const plain = (v) => v !== null && (typeof v !== "object" || (Array.isArray(v) && v.every((x) => typeof x !== "object")));
  return Object.entries(snap).filter(([k, v]) => !KNOWN.has(k) && plain(v)).map(([k, v]) => fact(words(k), show(v)));
}

function toolCalls(calls) {
  return calls.map((c) => h("p", { class: "small" }, h("strong", {}, "Calls "), h("code", {}, `${c.function?.name || "?"}(${c.function?.arguments || ""})`)));
}

/** A message's share of the window as a bar (its width) and a figure beside the token count. */
function tokenBar(tokens, total) {
  const share = total ? tokens / total : 0;
  return [h("span", { class: "token-bar", "aria-hidden": "true" }, h("span", { style: { width: `${Math.min(100, share * 100)}%` } })),
    h("span", { class: "token-share muted small", dataset: { testid: "message-share" } }, pct(share, share && share < 0.01 ? 1 : 0))];
}

function messageItem(m, i, total) {
  return h("li", { class: "message", id: `message-${i + 1}`, dataset: { module: m.module_id, role: m.role }, style: { borderLeftColor: colour(m.module_id) } },
    h("div", { class: "message-head" },
      h("span", { class: "swatch", style: { background: colour(m.module_id) }, "aria-hidden": "true" }),
      h("strong", {}, `${i + 1}. ${m.role}${m.name ? ` (${m.name})` : ""}`),
      m.tool_call_id ? h("span", { class: "muted small" }, ` result of call ${m.tool_call_id}`) : null,
      h("span", { class: "muted" }, ` from ${label(m.module_id)}`),
      h("span", { class: "tokens-badge", dataset: { testid: "message-tokens" } }, `${fmt(m.tokens)} tokens`),
      ...tokenBar(m.tokens, total)),
    // A box that scrolls takes focus, so its text can be scrolled from the keyboard.
    m.content ? h("pre", { class: "message-text", tabindex: "0", "aria-label": "Message text" }, m.content) : h("p", { class: "muted small" }, "(no text)"),
    m.tool_calls ? toolCalls(m.tool_calls) : null);
}

function toolItem(t) {
  const fn = t.tool.function || {};
  return h("li", { class: "message", dataset: { module: t.module_id }, style: { borderLeftColor: colour(t.module_id) } },
    h("div", { class: "message-head" },
      h("span", { class: "swatch", style: { background: colour(t.module_id) }, "aria-hidden": "true" }),
      h("strong", {}, fn.name), h("span", { class: "muted" }, ` from ${label(t.module_id)}`),
      h("span", { class: "tokens-badge" }, `${fmt(t.tokens)} tokens`)),
    fn.description ? h("p", { class: "small" }, fn.description) : null,
    h("details", {}, h("summary", {}, "Parameters as sent"), h("pre", { class: "message-text", tabindex: "0", "aria-label": `Parameters of ${fn.name}` }, JSON.stringify(fn.parameters, null, 2))));
}

/** Runs of messages from the same module, in the order sent: [{module, items: [[message, index]]}]. */
function runs(messages) {
  const out = [];
  messages.forEach((m, i) => {
    const last = out.at(-1);
    if (last && last.module === m.module_id) last.items.push([m, i]);
    else out.push({ module: m.module_id, items: [[m, i]] });
  });
  return out;
}

/** A group's heading in the list: a button that shows or hides the group's messages (kept in the list, so the
 * order the model read them stays visible), with the group's tokens and share of the window. */
function groupHead(run, n, total) {
  const tokens = run.items.reduce((sum, [m]) => sum + m.tokens, 0);
  const ids = run.items.map(([, i]) => `message-${i + 1}`);
  const count = `${run.items.length} message${run.items.length === 1 ? "" : "s"}`;
  const button = h("button", { type: "button", class: "group-toggle link", "aria-expanded": "true", "aria-controls": ids.join(" "),
    onclick: () => setGroup(button, button.getAttribute("aria-expanded") !== "true") },
  h("span", { class: "swatch", style: { background: colour(run.module) }, "aria-hidden": "true" }),
  `${label(run.module)}: ${count}, ${fmt(tokens)} tokens`);
  return h("li", { class: "message-group", id: `group-${n}`, dataset: { group: run.module } },
    button, ...tokenBar(tokens, total));
}

function setGroup(button, open) {
  button.setAttribute("aria-expanded", String(open));
  for (const id of button.getAttribute("aria-controls").split(" ")) document.getElementById(id).hidden = !open;
}

function groupedMessages(messages, total) {
  return runs(messages).flatMap((run, n) => [groupHead(run, n, total), ...run.items.map(([m, i]) => messageItem(m, i, total))]);
}

$("collapse-all").addEventListener("click", () => document.querySelectorAll(".group-toggle").forEach((b) => setGroup(b, false)));
$("expand-all").addEventListener("click", () => document.querySelectorAll(".group-toggle").forEach((b) => setGroup(b, true)));

const words = (key) => key.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());

function metaValue(v) {
  if (Array.isArray(v)) {
    if (!v.length) return "none";
    if (v.every((x) => x && typeof x === "object")) {
      return h("ul", { class: "meta-list" }, v.slice(0, 20).map((x) => h("li", {}, Object.entries(x).map(([k, y]) => `${words(k)}: ${typeof y === "number" ? fmt(Math.round(y * 1000) / 1000) : y}`).join(" · "))),
        v.length > 20 ? h("li", { class: "muted" }, `and ${v.length - 20} more`) : null);
    }
    return v.join(", ");
  }
  if (v && typeof v === "object") return Object.entries(v).map(([k, y]) => `${words(k)}: ${y}`).join(" · ");
  return typeof v === "number" ? fmt(Math.round(v * 1000) / 1000) : String(v);
}

function moduleDetails(snap) {
  const withMeta = snap.modules.filter((m) => Object.keys(m.metadata || {}).length);
  return h("div", {}, moduleTable(snap),
    withMeta.map((m) => h("details", { class: "module-meta", dataset: { module: m.module_id } },
      h("summary", {}, `${moduleLabel(m.module_id)}: details`), badges(m, snap),
      h("dl", { class: "meta" }, Object.entries(m.metadata).map(([k, v]) => h("div", {}, h("dt", {}, words(k)), h("dd", {}, metaValue(v))))))));
}


async function load() {
  const [trace, { turns }] = await Promise.all([get(`/v1/snapshots/${snapshotId}/trace`), get(`${session}/turns`), loadModuleNames()]);
  const snap = trace.snapshot;
  $("trace-status").textContent = trace.identical
    ? "Assembled again from the recorded inputs: identical to the recorded window, so this is the text that was sent."
    : "The session changed since this turn (for example, a turn was left out of the context): the text below is how the window assembles now, and differs from what was sent. The figures above and in the modules table are the recorded ones.";
  $("trace-status").className = trace.identical ? "hint ok-note" : "warning";
  showFacts(trace);
  usageBar($("trace-bar"), snap);
  $("messages").replaceChildren(...groupedMessages(trace.messages, snap.total_used));
  $("tools").replaceChildren(...(trace.tools.length ? [...trace.tools.map(toolItem), h("li", { class: "message" },
    h("div", { class: "message-head" }, h("span", {}, "The tool definitions block around them"),
      h("span", { class: "tokens-badge" }, `${fmt(trace.tools_overhead)} tokens`)))] : [h("li", { class: "muted" }, "No tools were sent.")]));
  $("trace-modules").replaceChildren(moduleDetails(snap), costSection(trace.model_call)); // tokens and dollars per module
  $("trace-decisions").replaceChildren(...snap.decisions.map((d) => h("li", {}, decisionText(d))));
  $("trace-events").replaceChildren(eventLists(snap));
  const row = turns.find((t) => String(t.turn) === turn);
  showCall(trace, row);
  $("answer").replaceChildren(row && row.answer ? h("blockquote", { class: "answer" }, row.answer) : h("p", { class: "muted" }, "No answer was recorded."));
}

// --- the model call: tokens, cache, cost, step times, and the request to send again --------------------

const STEPS = { load: "Load the session", assemble: "Assemble the window", snapshot: "Store the snapshot", model: "Model call", record: "Record the turn" };
const STEP_COLOURS = { load: "#455a64", assemble: "#1f4e79", snapshot: "#7a6000", model: "#2e6b30", record: "#ad1457" };

const dollars = (usd) => (usd >= 0.01 || usd === 0 ? `$${usd.toFixed(4)}` : `$${usd.toPrecision(3)}`);

function callFacts(trace, row) {
  const call = trace.model_call;
  const turnNote = (own, all, what) => (row && all !== own ? ` (${fmt(all)} ${what} in the whole turn: every model call it made, tool-loop steps and retries included, and the modules' own calls)` : "");
  if (!call) return [fact("Model call", "not recorded: the call failed or the snapshot is older than these figures")];
  const cost = call.cost;
  return [
    fact("Tokens in", `${fmt(call.prompt_tokens)}${turnNote(call.prompt_tokens, row?.tokens_in, "in")}`, "tokens-in"),
    fact("Tokens out", `${fmt(call.completion_tokens)}${turnNote(call.completion_tokens, row?.tokens_out, "out")}`, "tokens-out"),
    fact("Cached tokens", `${fmt(call.cache_read_tokens)} read from the provider's cache${call.cache_write_tokens ? `, ${fmt(call.cache_write_tokens)} written to it` : ""}`, "cached"),
    fact("Cost", cost ? `${dollars(cost.total_usd)} (input ${dollars(cost.input_usd)}, output ${dollars(cost.output_usd)}${cost.saved_by_cache_usd > 0 ? `; the cache saved ${dollars(cost.saved_by_cache_usd)}` : ""})`
      : `price unknown: litellm has no price for ${call.model}`, "cost"),
  ];
}

function latency(timings) {
  const order = Object.keys(STEPS); // the store may keep the keys in another order
  const rank = (step) => (order.includes(step) ? order.indexOf(step) : order.length);
  const steps = Object.entries(timings || {}).filter(([, ms]) => ms > 0).sort(([a], [b]) => rank(a) - rank(b));
  if (!steps.length) return h("p", { class: "muted" }, "Not recorded for this turn: step times are kept with turns made by this version on.");
  const total = steps.reduce((sum, [, ms]) => sum + ms, 0);
  const ms = (x) => `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`;
  const name = (step) => STEPS[step] || words(step);
  return h("div", {},
    h("div", { class: "stack latency-bar", role: "img", "aria-label": `Latency: ${steps.map(([step, x]) => `${name(step)} ${ms(x)}`).join(", ")}` },
      steps.map(([step, x]) => h("span", { class: "seg", style: { width: `${(x / total) * 100}%`, background: STEP_COLOURS[step] || "#37474f" } }))),
    h("ol", { class: "latency-steps" }, steps.map(([step, x]) => h("li", { dataset: { step } },
      h("span", { class: "swatch", style: { background: STEP_COLOURS[step] || "#37474f" }, "aria-hidden": "true" }),
      `${name(step)}: `, h("strong", {}, ms(x)), h("span", { class: "muted" }, ` (${pct(x / total)})`)))),
    h("p", { class: "small", dataset: { testid: "latency-total" } }, `${ms(total)} in all before the turn was recorded (the time the client waited, less sending the reply).`));
}

let request = null;

/** The body with the fields a reader looks for first (the API returns keys sorted). */
function readable(body, order = ["model", "messages", "tools", "tool_choice", "max_tokens", "query"]) {
  if (!body) return body;
  const first = order.filter((k) => k in body);
  const out = Object.fromEntries([...first.map((k) => [k, body[k]]), ...Object.entries(body).filter(([k]) => !first.includes(k))]);
  if (Array.isArray(out.messages)) out.messages = out.messages.map((m) => readable(m, ["role", "name", "content", "tool_calls", "tool_call_id"]));
  return out;
}

function showCall(trace, row) {
  $("call-facts").replaceChildren(...callFacts(trace, row));
  $("latency").replaceChildren(latency(trace.timings_ms));
  request = trace.request && { ...trace.request, body: readable(trace.request.body) };
  const unusable = !request || request.body === null;
  document.querySelectorAll("[data-copy]").forEach((b) => { b.disabled = unusable; });
  if (request?.note) $("copy-hint").append(` Note: ${request.note}.`);
  if (request?.headers["X-TDA-New-Turn"]) {
    $("copy-warning").append(" The copy sends ", h("code", {}, "X-TDA-New-Turn: true"), " for that: without it, tda takes the call for a retry of this turn and adds its tokens to this turn's record.");
  }
}

const shellQuote = (text) => `'${String(text).replace(/'/g, "'\\''")}'`;

function curlOf(req) {
  const lines = [`curl -sS ${shellQuote(location.origin + req.path)}`, '-H "Authorization: Bearer $TDA_TOKEN"', "-H 'Content-Type: application/json'",
    ...Object.entries(req.headers).map(([k, v]) => `-H ${shellQuote(`${k}: ${v}`)}`), "--data-binary @- <<'JSON'"];
  return `${lines.join(" \\\n  ")}\n${JSON.stringify(req.body, null, 2)}\nJSON\n`;
}

/** A JSON value as a Python literal (JSON's strings and numbers are Python's too). */
function py(value, depth = 1) {
  const pad = "    ".repeat(depth), end = "    ".repeat(depth - 1);
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value !== "object") return JSON.stringify(value);
  const items = Array.isArray(value) ? value.map((x) => py(x, depth + 1)) : Object.entries(value).map(([k, x]) => `${JSON.stringify(k)}: ${py(x, depth + 1)}`);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  return items.length ? `${open}\n${items.map((x) => pad + x).join(",\n")},\n${end}${close}` : `${open}${close}`;
}

const SDK_ARGUMENTS = ["model", "messages", "tools", "tool_choice", "max_tokens"];

function pythonOf(req) {
  const head = ["import os", "", "from openai import OpenAI", "",
    `client = OpenAI(base_url=${JSON.stringify(`${location.origin}/v1`)}, api_key=os.environ["TDA_TOKEN"])`];
  if (req.path !== "/v1/chat/completions") {
    return [...head, `reply = client.post(${JSON.stringify(req.path.replace(/^\/v1/, ""))}, body=${py(req.body)}, cast_to=object)`, 'print(reply["answer"])', ""].join("\n");
  }
  const extra = Object.fromEntries(Object.entries(req.body).filter(([k]) => !SDK_ARGUMENTS.includes(k)));
  const args = [...SDK_ARGUMENTS.filter((k) => k in req.body).map((k) => `    ${k}=${py(req.body[k], 2)},`),
    Object.keys(req.headers).length ? `    extra_headers=${py(req.headers, 2)},` : null,
    Object.keys(extra).length ? `    extra_body=${py(extra, 2)},  # sent as they are: parameters the SDK has no argument for` : null].filter(Boolean);
  return [...head, "completion = client.chat.completions.create(", ...args, ")", "print(completion.choices[0].message.content)", ""].join("\n");
}

const COPIES = {
  json: ["the request body as JSON", (req) => `${JSON.stringify(req.body, null, 2)}\n`],
  curl: ["the cURL command", curlOf],
  python: ["the Python (OpenAI SDK) code", pythonOf],
};

document.querySelectorAll("[data-copy]").forEach((button) => button.addEventListener("click", async () => {
  const [what, render] = COPIES[button.dataset.copy];
  const req = request;
  const text = render(req);
  $("copy-text").hidden = false;
  $("copy-text").textContent = text;
  try {
    await navigator.clipboard.writeText(text);
    const send = `POST ${req.path}${Object.entries(req.headers).map(([k, v]) => ` with ${k}: ${v}`).join("")}`;
    $("copy-status").textContent = `Copied ${what} (${send}); it is shown below too. Set TDA_TOKEN to your token before running it.`;
  } catch {
    $("copy-status").textContent = `The browser did not allow copying: ${what} is below, select it and copy.`;
  }
}));

// --- compare with the previous turn ----------------------------------------------------------------

$("compare-previous")?.addEventListener("click", async () => {
  const previous = document.body.dataset.previous;
  const out = $("compare-previous-result");
  try {
    const { turns } = await get(`${session}/turns`);
    const [before, now] = await Promise.all([previous, turn].map((n) => get(`/v1/snapshots/${turns.find((t) => String(t.turn) === String(n)).snapshot_id}`)));
    out.replaceChildren(comparison(before.snapshot, now.snapshot, { labelA: `Turn ${previous}`, labelB: `Turn ${turn}` }));
  } catch (err) {
    out.replaceChildren(h("p", { class: "field-error" }, `Not compared: ${plain(err.message)}`));
  }
});

// --- replay -------------------------------------------------------------------------------------

const FIELD_WORDS = {
  used: "tokens used", allocated: "tokens allocated", total_used: "tokens used in all", utilisation: "share of the budget used",
  available_budget: "available budget", effective_limit: "context limit", output_reserve: "output reserve", target_pct: "target",
  surplus_received: "unused tokens received", surplus_donated: "unused tokens given away", condensed: "condensed",
  strategy: "strategy", decisions: "decision log", condensations: "condensations", adjustments_fired: "rules fired",
  reason: "reason", status: "status", metadata: "details", auxiliary_calls: "extra model calls",
};

/** A replayed value in words: shares as percentages (precise enough to differ), lists by their length. */
function replayValue(field, v, other) {
  if (v === null || v === undefined) return "none";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "number" && /utilisation|share|score/.test(field) && v <= 1) {
    for (const digits of [1, 2, 3]) {
      const text = `${(v * 100).toFixed(digits)}%`;
      if (typeof other !== "number" || text !== `${(other * 100).toFixed(digits)}%`) return text;
    }
    return `${(v * 100).toFixed(3)}%`;
  }
  if (typeof v === "number") return fmt(v);
  if (Array.isArray(v)) return `${v.length} entr${v.length === 1 ? "y" : "ies"}`;
  if (typeof v === "object") return `${Object.keys(v).length} details`;
  return `“${plain(String(v))}”`;
}

/** One replay difference as a sentence: "Conversation history: tokens used was 1,204, now 1,180." */
function difference(d) {
  const parts = d.path.replace(/\[(\d+)\]/g, ".#$1").split(".");
  let who = "";
  if (parts[0] === "modules" && parts.length > 2) {
    who = `${moduleLabel(parts[1])}: `;
    parts.splice(0, 2);
  }
  const field = parts.filter((x) => !x.startsWith("#")).at(-1) || parts[0];
  const index = parts.find((x) => x.startsWith("#"));
  const name = parts.filter((x) => !x.startsWith("#")).map((x) => FIELD_WORDS[x] || x.replace(/_/g, " ")).join(", ");
  const where = index ? `${name} (entry ${Number(index.slice(1)) + 1})` : name;
  const what = `${who}${where}`.replace(/^./, (c) => c.toUpperCase());
  return `${what} was ${replayValue(field, d.recorded, d.replayed)}, now ${replayValue(field, d.replayed, d.recorded)}.`;
}

$("replay").addEventListener("click", async () => {
  const out = $("replay-result");
  out.replaceChildren(h("p", { class: "muted" }, "Replaying…"));
  try {
    const { data } = await api("POST", `/v1/snapshots/${snapshotId}/replay`);
    const changed = data.inputs_changed.length ? h("p", {}, `Inputs that changed since: ${data.inputs_changed.map(words).join(", ")}.`) : null;
    out.replaceChildren(data.identical
      ? h("p", { class: "ok-note", dataset: { testid: "replay-verdict" } }, "Identical: the same inputs give the same window.")
      : h("div", {}, h("p", { class: "warning", dataset: { testid: "replay-verdict" } }, `Different in ${data.differences.length} place${data.differences.length === 1 ? "" : "s"}:`),
        h("ul", { class: "diff" }, data.differences.slice(0, 40).map((d) => h("li", {}, difference(d))))),
    ...(changed ? [changed] : [])); // replaceChildren would print a null as the word "null"
  } catch (err) {
    out.replaceChildren(h("p", { class: "field-error" }, `Not replayed: ${plain(err.message)}`));
  }
});

// --- feedback -----------------------------------------------------------------------------------

document.querySelectorAll("[data-feedback]").forEach((button) => button.addEventListener("click", async () => {
  const feedback = Number(button.dataset.feedback);
  try {
    await api("POST", `${session}/turns/${turn}/feedback`, { body: { feedback } });
    notify({ 1: `Turn ${turn} marked helpful.`, [-1]: `Turn ${turn} marked wrong: it will not be offered as an example again.`, 0: `Rating of turn ${turn} cleared.` }[feedback]);
  } catch (err) {
    reportError(err, "Feedback not saved");
  }
}));

lockForViewers();
load().catch((err) => {
  $("trace-status").className = "field-error";
  $("trace-status").textContent = `The trace could not be built: ${plain(err.message)}`;
});
