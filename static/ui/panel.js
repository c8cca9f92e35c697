// The context panel of one session: target vs actual bars, module cards, the session's context limit, the
// decision log and the turns; new snapshots arrive live over SSE, and the stream reconnects by itself.
import { activeSlots, compositionBar, usageBar } from "./bars.js";
import { api, errorText, fieldError, fmt, get, h, isAdmin, limitSource, loadModuleNames, lockForViewers, moduleLabel, notify, pct, reportError, ruleText } from "./lib.js";
import { byModuleTable, callLine, totalsFacts, usd } from "./cost_view.js";
import { decisionText, moduleCard } from "./snapshot_view.js";
import { comparison, timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const { sessionId } = document.body.dataset;
const limitFloor = Number(document.body.dataset.limitFloor);
const base = `/v1/sessions/${encodeURIComponent(sessionId)}`;
let modelLimit = 0;
let lastEventId = 0;
let typeId = null;
let lastTurns = [];
let profileId = null;
const traceHref = (n) => `/ui/sessions/${encodeURIComponent(sessionId)}/turns/${n}`;

// --- the latest snapshot -------------------------------------------------------------------------

function showSnapshot(snap) {
  usageBar($("usage-bar"), snap);
  if (!snap) {
    const last = lastTurns.at(-1);
    $("fact-turn").textContent = last ? `${last.turn} (no snapshot recorded)` : "none yet";
    return;
  }
  $("fact-turn").replaceChildren(h("a", { href: traceHref(snap.turn) }, `${snap.turn} (${new Date(snap.created_at).toLocaleTimeString()})`));
  $("fact-used").textContent = `${fmt(snap.total_used)} of ${fmt(snap.available_budget)} tokens (${pct(snap.utilisation)})`;
  const taking = snap.modules.filter((m) => m.status !== "skipped");
  const skipped = snap.modules.filter((m) => m.status === "skipped");
  $("module-cards").replaceChildren(...taking.map((m) => moduleCard(m, snap)));
  $("skipped").replaceChildren(...(skipped.length ? [h("h3", {}, "Not taking part"), h("ul", { class: "chips" },
    skipped.map((m) => h("li", {}, h("strong", {}, moduleLabel(m.module_id)), `: ${m.reason}`)))] : []));
  $("decisions").replaceChildren(...snap.decisions.map((d) => h("li", {}, decisionText(d))));
  if (snap.window_type_id !== typeId) loadType();
}

async function latestSnapshot() {
  const { snapshots } = await get(`${base}/snapshots?newest_first=true&limit=1`);
  const last = snapshots[0];
  if (last) lastEventId = Math.max(lastEventId, last.id);
  // The record's turn number: a chat client's snapshots stored before they carried theirs all said turn 1.
  return last ? { ...last.snapshot, turn: last.turn } : null;
}

// --- session, profile, type ----------------------------------------------------------------------

/** The type the session's turns run: its current version, or the version the profile's label is on. */
async function runningType(session) {
  const path = `/v1/context-window-types/${encodeURIComponent(session.context_window_type_id)}`;
  const type = await get(path);
  if (type.version === session.context_window_type_version) return type;
  const { versions } = await get(`${path}/versions`);
  return { ...versions.find((v) => v.version === session.context_window_type_version).data, version: session.context_window_type_version };
}

async function loadType(session) {
  session = session || await get(base);
  const type = await runningType(session);
  typeId = type.id;
  const label = session.profile.context_window_type_label;
  $("fact-type").replaceChildren(h("a", { href: `/ui/types/${encodeURIComponent(type.id)}` }, type.name),
    session.profile.context_window_type_id ? "" : " (the default type)", label ? ` v${type.version}, by its label ${label}` : "");
  compositionBar($("target-bar"), { slots: activeSlots(type), reservePct: type.output_reserve_pct });
}

async function loadSession() {
  const session = await get(base);
  const { profile } = session;
  profileId = profile.id;
  $("session-title").textContent = session.title || session.id;
  $("fact-profile").textContent = `${profile.name || profile.id} (${profile.type.replace(/_/g, " ")})`
    + (profile.context_limit ? `, limit ${fmt(profile.context_limit)}` : "");
  $("fact-model").textContent = `${session.model} (${fmt(session.model_limit)} tokens: ${limitSource(session.model_limit_source)})`;
  modelLimit = session.model_limit;
  for (const input of [$("limit-range"), $("limit-number")]) {
    input.min = Math.min(limitFloor, modelLimit);
    input.max = modelLimit;
  }
  showLimit(session.context_limit);
  $("phase").value = session.phase || "";
  showAttachments(session.attachments);
  renderTurns(session.turns);
  await loadType(session);
  showSnapshot(await latestSnapshot());
  await Promise.all([loadAnalytics(), loadTimeline(), loadTypeChoices()]);
}

// --- turns ---------------------------------------------------------------------------------------

function renderTurns(turns) {
  lastTurns = turns;
  const rows = [...turns].reverse().map((t) => {
    const toggle = h("input", {
      type: "checkbox", checked: t.valid, id: `valid-${t.turn}`, disabled: !isAdmin(),
      onchange: async () => {
        try {
          await api("PATCH", `${base}/turns/${t.turn}`, { body: { valid: toggle.checked } });
          notify(`Turn ${t.turn} is ${toggle.checked ? "back in" : "left out of"} the context from the next turn on.`);
        } catch (err) {
          toggle.checked = !toggle.checked;
          reportError(err, "Not changed");
        }
      },
    });
    return h("tr", { dataset: { turn: t.turn }, class: t.valid ? "" : "invalid" },
      h("th", { scope: "row" }, t.snapshot_id ? h("a", { href: traceHref(t.turn), "aria-label": `Trace of turn ${t.turn}` }, `Turn ${t.turn}`) : `Turn ${t.turn}`),
      h("td", {}, t.query),
      h("td", { class: "clip" }, t.answer || t.summary || ""),
      h("td", { class: "num" }, `${fmt(t.tokens_in)} / ${fmt(t.tokens_out)}`),
      h("td", {}, toggle, h("label", { for: `valid-${t.turn}` }, h("span", { class: "sr-only" }, `Turn ${t.turn} `), " in context")));
  });
  $("turns").querySelector("tbody").replaceChildren(...(rows.length ? rows
    : [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No turns yet."))]));
}

let turnsTimer;
/** The turn is recorded after the model answers, a moment after its snapshot: show it pending until then. */
function refreshTurnsSoon(snapshotId = 0, turn = null, tries = 40) {
  clearTimeout(turnsTimer);
  if (turn !== null && !$("turns").querySelector(`tr[data-turn="${turn}"]`)) {
    $("turns").querySelector("tbody").prepend(h("tr", { dataset: { turn }, class: "pending" },
      h("th", { scope: "row" }, String(turn)), h("td", { colspan: 4, class: "muted" }, "Waiting for the model's answer…")));
  }
  turnsTimer = setTimeout(async () => {
    const { turns } = await get(`${base}/turns`);
    const recorded = !snapshotId || turns.some((t) => (t.snapshot_id || 0) >= snapshotId);
    if (recorded || tries <= 0) {
      renderTurns(turns);
      loadAnalytics();
      loadTimeline();
    }
    else refreshTurnsSoon(snapshotId, null, tries - 1);
  }, 250);
}

// --- timeline and comparisons --------------------------------------------------------------------

let recorded = []; // the latest snapshot row of each turn, oldest first

async function loadTimeline() {
  const { snapshots } = await get(`${base}/snapshots?limit=500&newest_first=true`);
  const byTurn = new Map();
  const calls = new Map(); // every model call of a turn (a tool loop makes one per step)
  for (const row of [...snapshots].reverse()) {
    byTurn.set(row.turn, row); // a retried turn: its last snapshot
    if (row.snapshot.model_call) calls.set(row.turn, [...(calls.get(row.turn) || []), row.snapshot.model_call]);
  }
  recorded = [...byTurn.values()];
  timeline($("timeline"), recorded.map((r) => ({ turn: r.turn, snap: r.snapshot, typeVersion: r.type_version, calls: calls.get(r.turn) || [] })), { traceHref });
  const options = (selected) => recorded.map((r) => h("option", { value: r.id, selected: r === selected }, `Turn ${r.turn}`));
  const keep = (id) => $(id).value;
  const [a, b, one] = [keep("cmp-a"), keep("cmp-b"), keep("cmp-turn")];
  $("cmp-a").replaceChildren(...options(recorded.at(-2) || recorded.at(-1)));
  $("cmp-b").replaceChildren(...options(recorded.at(-1)));
  $("cmp-turn").replaceChildren(...options(recorded.at(-1)));
  if (a) $("cmp-a").value = a;
  if (b) $("cmp-b").value = b;
  if (one) $("cmp-turn").value = one;
}

async function loadTypeChoices() {
  const { types } = await get("/v1/context-window-types");
  for (const [id, pick] of [["cmp-type-a", 0], ["cmp-type-b", 1]]) {
    $(id).replaceChildren(...types.map((t, i) => h("option", { value: t.id, selected: i === Math.min(pick, types.length - 1) }, t.name)));
  }
}

const rowOf = (id) => recorded.find((r) => String(r.id) === String(id));

$("compare-turns").addEventListener("submit", (event) => {
  event.preventDefault();
  const [a, b] = [rowOf($("cmp-a").value), rowOf($("cmp-b").value)];
  if (!a || !b) return;
  $("compare-result").replaceChildren(comparison(a.snapshot, b.snapshot, { labelA: `Turn ${a.turn}`, labelB: `Turn ${b.turn}` }));
});

$("compare-types").addEventListener("submit", async (event) => {
  event.preventDefault();
  const row = rowOf($("cmp-turn").value);
  if (!row) return;
  const [ta, tb] = [$("cmp-type-a").value, $("cmp-type-b").value];
  const out = $("compare-result");
  out.replaceChildren(h("p", { class: "muted" }, "Assembling the turn under both types…"));
  try {
    const under = (t) => get(`/v1/snapshots/${row.id}/trace?type_id=${encodeURIComponent(t)}`);
    const [a, b] = await Promise.all([under(ta), under(tb)]);
    out.replaceChildren(comparison(a.snapshot, b.snapshot, {
      labelA: `${a.snapshot.window_type_name}`, labelB: `${b.snapshot.window_type_name}`,
    }), h("p", { class: "small muted" }, `Turn ${row.turn} assembled again from its recorded inputs under each type's current version. Nothing is stored.`));
  } catch (err) {
    out.replaceChildren(h("p", { class: "field-error" }, `Not compared: ${err.message}`));
  }
});

// --- analytics -----------------------------------------------------------------------------------

async function loadAnalytics() {
  const { summary, turns } = await get(`${base}/context-analytics`);
  if (!summary.turns) return;
  showCost(summary.cost, turns.at(-1).model_call); // the turn is recorded after its call is priced
  const pctOf = (u) => `${Math.round(u * 100)}%`;
  const rules = Object.entries(summary.adjustment_frequency);
  $("analytics").replaceChildren(
    h("dl", { class: "facts" },
      [["Snapshots", fmt(summary.turns)], ["Average use", pctOf(summary.avg_utilisation)],
        ["Peak use", pctOf(summary.max_utilisation)], ["Peak tokens", fmt(summary.max_total_used)],
        ["Condensations", fmt(summary.condensations)]].map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v)))),
    h("table", { class: "grid" },
      h("caption", { class: "sr-only" }, "Per-module figures over the session's snapshots"),
      h("thead", {}, h("tr", {}, ["Module", "Average allocated", "Average used", "Peak used", "Average utilisation", "Condensed", "Failed"]
        .map((t, i) => h("th", { scope: "col", class: i ? "num" : null }, t)))),
      h("tbody", {}, Object.entries(summary.modules).filter(([, m]) => m.avg_allocated > 0 || m.times_failed).map(([id, m]) =>
        h("tr", {}, h("th", { scope: "row" }, moduleLabel(id)), h("td", { class: "num" }, fmt(Math.round(m.avg_allocated))),
          h("td", { class: "num" }, fmt(Math.round(m.avg_used))), h("td", { class: "num" }, fmt(m.max_used)),
          h("td", { class: "num" }, pctOf(m.avg_utilisation)), h("td", { class: "num" }, `${m.times_condensed}×`),
          h("td", { class: "num" }, `${m.times_failed}×`))))),
    h("p", { class: "small muted" }, rules.length
      ? `Rules fired: ${rules.map(([rule, f]) => `${ruleText(rule).replace(/\.$/, "")} (${pctOf(f)} of turns)`).join("; ")}.` : "No rule has fired yet."),
    h("h3", {}, "Cost of the model calls"),
    h("dl", { class: "facts", dataset: { testid: "session-cost" } }, totalsFacts(summary.cost).map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v)))),
    summary.cost.priced_calls ? byModuleTable(summary.cost) : null,
    h("p", { class: "small muted", id: "profile-cost" }));
  loadProfileCost();
}

/** The live figure: the newest call's dollars, and the session's so far. */
function showCost(cost, last) {
  const session = cost.priced_calls ? `${usd(cost.total_usd)} this session${cost.unpriced_calls ? ` (+ ${cost.unpriced_calls} unpriced)` : ""}` : "price unknown this session";
  $("fact-cost").textContent = `${callLine(last)}; ${session}`;
}

async function loadProfileCost() {
  if (!profileId) return;
  const { summary, sessions } = await get(`/v1/profiles/${encodeURIComponent(profileId)}/analytics`);
  const spent = summary.priced_calls ? usd(summary.total_usd) : "price unknown";
  $("profile-cost").textContent = `Profile ${profileId}: ${spent} over ${fmt(summary.model_calls)} model calls in ${fmt(sessions.length)} session${sessions.length === 1 ? "" : "s"}`
    + (summary.priced_calls && summary.unpriced_calls ? `, besides ${fmt(summary.unpriced_calls)} at unknown prices.` : ".");
}

// --- context limit -------------------------------------------------------------------------------

function showLimit(limit) {
  const value = limit ?? modelLimit;
  $("limit-range").value = value;
  $("limit-number").value = value;
  $("limit-state").textContent = limit
    ? `This session is limited to ${fmt(limit)} tokens (the model allows ${fmt(modelLimit)}).`
    : `Model default: ${fmt(modelLimit)} tokens.`;
}

async function setLimit(limit) {
  fieldError($("limit-number"), $("limit-error"));
  try {
    const { data } = await api("POST", `${base}/context-limit`, { body: { context_limit: limit } });
    showLimit(data.context_limit);
    notify(limit ? `Context limit set to ${fmt(limit)} tokens from the next turn on.` : "Back to the model's limit.");
  } catch (err) {
    fieldError($("limit-number"), $("limit-error"), errorText(err));
  }
}

/** The limit box is checked as it is typed: a whole number between the slider's floor and the model's limit. */
function limitProblem() {
  const raw = $("limit-number").value;
  const value = Number(raw);
  const floor = Number($("limit-number").min);
  if (raw === "" || !Number.isInteger(value)) return "Give a whole number of tokens.";
  if (value < floor) return `At least ${fmt(floor)} tokens: smaller windows cannot hold a system prompt and tools usefully.`;
  if (value > modelLimit) return `At most ${fmt(modelLimit)} tokens (the model's limit); a session limit can only lower it.`;
  return "";
}

$("limit-range").addEventListener("input", () => { $("limit-number").value = $("limit-range").value; fieldError($("limit-number"), $("limit-error"), limitProblem()); });
$("limit-number").addEventListener("input", () => { $("limit-range").value = $("limit-number").value; fieldError($("limit-number"), $("limit-error"), limitProblem()); });
$("limit-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const problem = limitProblem();
  fieldError($("limit-number"), $("limit-error"), problem);
  if (problem) $("limit-number").focus();
  else setLimit(Number($("limit-number").value));
});
$("limit-clear").addEventListener("click", () => setLimit(null));

// --- phase and attachments ----------------------------------------------------------------------

function showAttachments(list) {
  $("attachments").replaceChildren(...(list.length ? list.map((a) => h("li", { dataset: { attachment: a.id } },
    h("span", {}, h("strong", {}, a.name), ` · ${fmt(a.chars)} characters`),
    h("button", {
      type: "button", class: "link small admin-only", "aria-label": `Remove ${a.name}`,
      onclick: async () => {
        if (!confirm(`Remove “${a.name}” from this session? The next turn no longer sees it.`)) return;
        try {
          await api("DELETE", `${base}/attachments/${encodeURIComponent(a.id)}`);
          notify(`Removed ${a.name}.`);
          await loadAttachments();
        } catch (err) { reportError(err, "Not removed"); }
      },
    }, "Remove"))) : [h("li", { class: "muted" }, "No documents attached.")]));
  lockForViewers($("attachments"));
}

async function loadAttachments() {
  showAttachments((await get(`${base}/attachments`)).attachments);
}

$("attach-file").addEventListener("change", async () => {
  const file = $("attach-file").files[0];
  if (!file) return;
  $("attach-text").value = await file.text();
  if (!$("attach-name").value) $("attach-name").value = file.name;
});

$("attach-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  fieldError($("attach-text"), $("attach-error"));
  const body = { name: $("attach-name").value.trim(), text: $("attach-text").value };
  if (!body.name || !body.text.trim()) {
    fieldError(body.name ? $("attach-text") : $("attach-name"), $("attach-error"), "Give the document a name and some text (or pick a text file).");
    return;
  }
  try {
    await api("POST", `${base}/attachments`, { body });
    notify(`Attached ${body.name}: the next turn can use it.`);
    $("attach-form").reset();
    await loadAttachments();
  } catch (err) {
    fieldError($("attach-text"), $("attach-error"), errorText(err));
  }
});

$("phase-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const phase = $("phase").value || null;
  try {
    await api("PATCH", base, { body: { phase } });
    notify(phase ? `Phase set to ${phase} from the next turn on.` : "Phase cleared.");
  } catch (err) {
    reportError(err, "Phase not set");
  }
});

// --- actions -------------------------------------------------------------------------------------

$("purge-memory").addEventListener("click", async () => {
  if (!confirm("Purge this session's memory? Every turn is marked invalid (kept for audit and replay) and module caches are cleared.")) return;
  try {
    const { data } = await api("POST", `${base}/purge-memory`);
    notify(`Memory purged (${Object.entries(data).filter(([, v]) => typeof v === "number").map(([k, v]) => `${v} ${k}`).join(", ")}).`);
    refreshTurnsSoon();
  } catch (err) {
    reportError(err, "Not purged");
  }
});

$("turn-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const query = $("turn-query").value.trim();
  if (!query) return;
  try {
    await api("POST", `${base}/turns`, { body: { query } });
    $("turn-query").value = "";
  } catch (err) {
    reportError(err, "The turn failed");
  }
});

// --- live stream ---------------------------------------------------------------------------------

function connect(delay = 1000) {
  const source = new EventSource(`${base}/events${lastEventId ? `?last_event_id=${lastEventId}` : ""}`);
  const live = $("live");
  source.onopen = () => { live.textContent = "Live"; live.dataset.state = "live"; delay = 1000; };
  source.addEventListener("context_window_snapshot", (event) => {
    lastEventId = Math.max(lastEventId, Number(event.lastEventId) || 0);
    const snap = JSON.parse(event.data);
    showSnapshot(snap);
    refreshTurnsSoon(Number(event.lastEventId) || 0, snap.turn);
  });
  source.onerror = () => {
    live.textContent = "Reconnecting…";
    live.dataset.state = "down";
    if (source.readyState === EventSource.CLOSED) { // the browser gave up (e.g. the server answered an error)
      setTimeout(() => connect(Math.min(delay * 2, 30000)), delay);
    }
  };
}

lockForViewers();
loadModuleNames().then(loadSession).then(() => connect()).catch((err) => reportError(err, "Could not load the session"));
