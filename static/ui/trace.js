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

function messageItem(m, i) {
  return h("li", { class: "message", dataset: { module: m.module_id, role: m.role }, style: { borderLeftColor: colour(m.module_id) } },
    h("div", { class: "message-head" },
      h("span", { class: "swatch", style: { background: colour(m.module_id) }, "aria-hidden": "true" }),
      h("strong", {}, `${i + 1}. ${m.role}${m.name ? ` (${m.name})` : ""}`),
      m.tool_call_id ? h("span", { class: "muted small" }, ` result of call ${m.tool_call_id}`) : null,
      h("span", { class: "muted" }, ` from ${label(m.module_id)}`),
      h("span", { class: "tokens-badge", dataset: { testid: "message-tokens" } }, `${fmt(m.tokens)} tokens`)),
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
  $("messages").replaceChildren(...trace.messages.map(messageItem));
  $("tools").replaceChildren(...(trace.tools.length ? [...trace.tools.map(toolItem), h("li", { class: "message" },
    h("div", { class: "message-head" }, h("span", {}, "The tool definitions block around them"),
      h("span", { class: "tokens-badge" }, `${fmt(trace.tools_overhead)} tokens`)))] : [h("li", { class: "muted" }, "No tools were sent.")]));
  $("trace-modules").replaceChildren(moduleDetails(snap), costSection(trace.model_call)); // tokens and dollars per module
  $("trace-decisions").replaceChildren(...snap.decisions.map((d) => h("li", {}, decisionText(d))));
  $("trace-events").replaceChildren(eventLists(snap));
  const row = turns.find((t) => String(t.turn) === turn);
  $("answer").replaceChildren(row && row.answer ? h("blockquote", { class: "answer" }, row.answer) : h("p", { class: "muted" }, "No answer was recorded."));
}

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
