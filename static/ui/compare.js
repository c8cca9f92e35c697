// The compare page: two turns (of one session or two) side by side: their facts, tokens per module, and the
// messages each window sent, aligned, with what differs marked. The picks live in the address (?sa=&ta=&sb=&tb=),
// so a comparison can be linked to.
import { fmt, get, h, loadModuleNames, moduleLabel, pct, plain } from "./lib.js";
import { comparison } from "./timeline.js";
import { windowDiff } from "./window_diff.js";

const $ = (id) => document.getElementById(id);
const sessionUrl = (id) => `/v1/sessions/${encodeURIComponent(id)}`;
let sessions = [];
const turnsOf = new Map(); // session id -> its traceable turns (those with a snapshot)

async function traceable(sessionId) {
  if (!turnsOf.has(sessionId)) {
    const { turns } = await get(`${sessionUrl(sessionId)}/turns`);
    turnsOf.set(sessionId, turns.filter((t) => t.snapshot_id !== null));
  }
  return turnsOf.get(sessionId);
}

async function fillTurns(select, sessionId, wanted) {
  const turns = sessionId ? await traceable(sessionId) : [];
  select.replaceChildren(...(turns.length
    ? turns.map((t) => h("option", { value: t.turn }, `Turn ${t.turn}: ${(t.query || "").slice(0, 60)}`))
    : [h("option", { value: "" }, "No recorded turns")]));
  if (wanted && turns.some((t) => String(t.turn) === String(wanted))) select.value = String(wanted);
  return turns;
}

/** The picks from the address, with defaults: the first session, its last two turns. */
async function picks() {
  const q = new URLSearchParams(location.search);
  const sa = q.get("sa") || sessions[0]?.id || "";
  const sb = q.get("sb") || sa;
  const [turnsA, turnsB] = await Promise.all([sa ? traceable(sa) : [], sb ? traceable(sb) : []]);
  const ta = q.get("ta") || String(turnsA.at(-2)?.turn ?? turnsA.at(-1)?.turn ?? "");
  const tb = q.get("tb") || String(turnsB.at(-1)?.turn ?? "");
  $("pick-sa").value = sa;
  $("pick-sb").value = sb;
  await Promise.all([fillTurns($("pick-ta"), sa, ta), fillTurns($("pick-tb"), sb, tb)]);
  return { sa, ta, sb, tb };
}

function labelsFor({ sa, ta, sb, tb }) {
  const title = (id) => sessions.find((s) => s.id === id)?.title || id;
  let a = sa === sb ? `Turn ${ta}` : `${title(sa)}, turn ${ta}`;
  let b = sa === sb ? `Turn ${tb}` : `${title(sb)}, turn ${tb}`;
  if (a === b) [a, b] = [`A: ${a}`, `B: ${b}`];
  return { a, b };
}

function factsTable(ta, tb, labels) {
  const rows = [
    ["Session", (t) => h("a", { href: `/ui/sessions/${encodeURIComponent(t.session_id)}` }, t.session_id)],
    ["Turn", (t) => h("a", { href: `/ui/sessions/${encodeURIComponent(t.session_id)}/turns/${t.turn}` }, `Turn ${t.turn} trace`)],
    ["Query", (t) => t.query || "–"],
    ["Window type", (t) => `${t.snapshot.window_type_name} (version ${t.type_version})`],
    ["Model", (t) => t.model],
    ["Context limit", (t) => `${fmt(t.snapshot.effective_limit)} tokens`],
    ["Used", (t) => `${fmt(t.snapshot.total_used)} of ${fmt(t.snapshot.available_budget)} (${pct(t.snapshot.utilisation)})`],
    ["Messages sent", (t) => `${t.messages.length} (${fmt(t.messages.reduce((n, m) => n + m.tokens, 0))} tokens)`],
  ];
  return h("table", { class: "grid compare-facts" },
    h("caption", { class: "sr-only" }, "The two turns"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Fact"), h("th", { scope: "col" }, labels.a), h("th", { scope: "col" }, labels.b))),
    h("tbody", {}, rows.map(([name, show]) => h("tr", {}, h("th", { scope: "row" }, name),
      h("td", { dataset: { label: labels.a } }, show(ta)), h("td", { dataset: { label: labels.b } }, show(tb))))));
}

function toolsTable(ta, tb, labels) {
  const tokens = (t, name) => t.tools.find((x) => x.tool.function?.name === name)?.tokens;
  const names = [...new Set([...ta.tools, ...tb.tools].map((x) => x.tool.function?.name))];
  if (!names.length) return h("p", { class: "muted" }, "Neither window sent tools.");
  const owner = (name) => [...ta.tools, ...tb.tools].find((x) => x.tool.function?.name === name)?.module_id;
  return h("table", { class: "grid compare" },
    h("caption", { class: "sr-only" }, "Tools each window sent (tokens)"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Tool"), h("th", { scope: "col", class: "num" }, labels.a), h("th", { scope: "col", class: "num" }, labels.b))),
    h("tbody", {}, names.map((name) => h("tr", { class: tokens(ta, name) === tokens(tb, name) ? "" : "wd-changed-row" },
      h("th", { scope: "row" }, name, h("span", { class: "muted small" }, ` from ${moduleLabel(owner(name) || "")}`)),
      h("td", { class: "num", dataset: { label: labels.a } }, tokens(ta, name) === undefined ? "not sent" : fmt(tokens(ta, name))),
      h("td", { class: "num", dataset: { label: labels.b } }, tokens(tb, name) === undefined ? "not sent" : fmt(tokens(tb, name)))))));
}

async function show(pick) {
  const snapshotOf = async (sessionId, turn) => (await traceable(sessionId)).find((t) => String(t.turn) === String(turn))?.snapshot_id;
  const [idA, idB] = await Promise.all([snapshotOf(pick.sa, pick.ta), snapshotOf(pick.sb, pick.tb)]);
  if (!idA || !idB) {
    $("compare-status").textContent = sessions.length ? "Pick two recorded turns to compare." : "No sessions yet: run a turn first.";
    return;
  }
  $("compare-status").textContent = "Assembling both windows from their recorded inputs…";
  const [ta, tb] = await Promise.all([get(`/v1/snapshots/${idA}/trace`), get(`/v1/snapshots/${idB}/trace`)]);
  const labels = labelsFor(pick);
  $("cmp-facts").replaceChildren(factsTable(ta, tb, labels));
  $("cmp-modules").replaceChildren(comparison(ta.snapshot, tb.snapshot, { labelA: labels.a, labelB: labels.b }));
  $("cmp-messages").replaceChildren(windowDiff(ta.messages, tb.messages, labels));
  $("cmp-tools").replaceChildren(toolsTable(ta, tb, labels));
  const notSame = [ta, tb].filter((t) => !t.identical).map((t) => `turn ${t.turn}`);
  $("compare-status").textContent = notSame.length
    ? `The session changed since ${notSame.join(" and ")} (a turn left out, for example): its messages are as the window assembles now.`
    : `${labels.a} compared with ${labels.b}.`;
  $("compare-out").hidden = false;
}

async function load() {
  [{ sessions }] = await Promise.all([get("/v1/sessions"), loadModuleNames()]);
  const options = () => sessions.map((s) => h("option", { value: s.id }, s.title ? `${s.title} (${s.id})` : s.id));
  $("pick-sa").replaceChildren(...options());
  $("pick-sb").replaceChildren(...options());
  $("pick-sa").addEventListener("change", () => fillTurns($("pick-ta"), $("pick-sa").value));
  $("pick-sb").addEventListener("change", () => fillTurns($("pick-tb"), $("pick-sb").value));
  await show(await picks());
}

load().catch((err) => {
  $("compare-status").className = "field-error";
  $("compare-status").textContent = `Not compared: ${plain(err.message)}`;
});
