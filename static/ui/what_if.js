// The editor's what-if: the edited type assembled for a recorded session under a chosen profile and context limit;
// the bar, and the differences from the saved type and from the session's last recorded turn. Nothing is stored.
import { usageBar } from "./bars.js";
import { api, errorText, fieldError, get, h, plain, snapshotSummary } from "./lib.js";
import { eventLists, moduleTable } from "./snapshot_view.js";
import { comparison } from "./timeline.js";
import { windowDiff } from "./window_diff.js";

const $ = (id) => document.getElementById(id);

async function loadSessions() {
  const [{ sessions }, { profiles }] = await Promise.all([get("/v1/sessions"), get("/v1/profiles")]);
  $("preview-session").replaceChildren(...(sessions.length
    ? sessions.map((s) => h("option", { value: s.id }, `${s.title || s.id} (${s.profile_id})`))
    : [h("option", { value: "" }, "No sessions yet")]));
  $("preview-profile").append(...profiles.map((p) => h("option", { value: p.id }, p.name || p.id)));
}

/** The session's last recorded snapshot, to compare the what-if with (null when it has none). */
async function lastRecorded(sessionId) {
  const { snapshots } = await get(`/v1/sessions/${encodeURIComponent(sessionId)}/snapshots?newest_first=true&limit=1`);
  return snapshots[0] || null;
}

/** The what-if's messages and tools as it would send them; beside the recorded turn's when there is one. */
async function sentMessages(whatIf, recorded) {
  const sent = whatIf.messages.map((m, i) => ({ ...m, ...(whatIf.attribution?.[i] || {}) })); // with module and tokens
  const tools = whatIf.tools.length
    ? h("p", { class: "small" }, `And ${whatIf.tools.length} tool${whatIf.tools.length === 1 ? "" : "s"}: ${whatIf.tools.map((t) => t.function?.name).join(", ")}.`)
    : h("p", { class: "small muted" }, "No tools.");
  if (!recorded) return h("div", {}, windowDiff([], sent, { a: "No recorded turn", b: "What-if" }), tools);
  try {
    const trace = await get(`/v1/snapshots/${recorded.id}/trace`);
    return h("div", {}, windowDiff(trace.messages, sent, { a: `Turn ${recorded.turn} (as sent)`, b: "What-if" }), tools);
  } catch (err) { // the what-if stands on its own when the recorded turn cannot be traced
    return h("div", {}, h("p", { class: "muted" }, `Turn ${recorded.turn}'s messages are not shown: ${plain(err.message)}`),
      windowDiff([], sent, { a: `Turn ${recorded.turn}`, b: "What-if" }), tools);
  }
}

async function runPreview(event, { getState, getTypeId, check, showTypeErrors }) {
  event.preventDefault();
  const out = $("preview");
  const limitInput = $("preview-limit");
  fieldError(limitInput, $("preview-limit-error"));
  if (!check()) {
    out.replaceChildren(h("p", { class: "field-error" }, "No preview: the type has mistakes, marked at their fields."));
    return;
  }
  out.replaceChildren(h("p", { class: "muted" }, "Assembling…"));
  const sessionId = $("preview-session").value;
  const common = { session_id: sessionId, query: $("preview-query").value || "Preview" };
  if ($("preview-profile").value) common.profile_id = $("preview-profile").value;
  if (limitInput.value) common.context_limit = Number(limitInput.value);
  try {
    const ask = (extra) => api("POST", "/v1/context-window-types/preview", { body: { ...common, ...extra } }).then((r) => r.data);
    const [whatIf, savedOut, recorded] = await Promise.all([
      ask({ type: getState() }), getTypeId() ? ask({ type_id: getTypeId() }) : null, lastRecorded(sessionId)]);
    const snap = whatIf.snapshot;
    const saved = savedOut?.snapshot;
    const bar = h("div", {});
    usageBar(bar, snap, { title: "What-if (the next turn, not recorded)" });
    const compared = [];
    if (saved) compared.push(h("div", {}, h("h3", {}, "Against the saved type"), comparison(saved, snap, { labelA: "Saved", labelB: "As edited" })));
    else compared.push(h("p", { class: "muted" }, "Not saved yet: nothing to compare with."));
    if (recorded) {
      compared.push(h("div", {}, h("h3", {}, `Against the recorded turn ${recorded.turn}`),
        comparison(recorded.snapshot, snap, { labelA: `Turn ${recorded.turn}`, labelB: "What-if" }),
        h("p", { class: "small muted" }, "The recorded turn had its own query and the history before it; the what-if uses the whole history.")));
    } else compared.push(h("p", { class: "muted" }, "This session has no recorded turn to compare with."));
    out.replaceChildren(h("p", { class: "bar-summary", dataset: { testid: "preview-summary" } }, snapshotSummary(snap)),
      bar, h("div", { class: "two-col" }, compared), h("details", {}, h("summary", {}, "Module by module"), moduleTable(snap), eventLists(snap)),
      h("section", { class: "what-if-messages", "aria-labelledby": "what-if-messages-h" },
        h("h3", { id: "what-if-messages-h" }, recorded ? `Messages it would send, beside turn ${recorded.turn}'s` : "Messages it would send"),
        await sentMessages(whatIf, recorded)));
  } catch (err) {
    out.replaceChildren(h("p", { class: "field-error" }, `No preview: ${plain(err.message)}`));
    if (err.status === 422 && err.fieldErrors.some((e) => e.loc === "context_limit")) fieldError(limitInput, $("preview-limit-error"), errorText(err));
    else if (err.status === 422 && err.fieldErrors.length) showTypeErrors(err.fieldErrors);
  }
}

/** ``check()`` runs the editor's own checks first; ``showTypeErrors`` places the API's errors on the fields. */
export function initWhatIf(editor) {
  $("preview-form").addEventListener("submit", (event) => runPreview(event, editor));
  loadSessions();
}
