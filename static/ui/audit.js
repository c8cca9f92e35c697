// The audit log: who changed what, with the change in sentences for types and the fields that changed otherwise.
import { describeChanges } from "./diff.js";
import { actorName, get, h, loadModuleNames, moduleLabel, pageNav, reportError } from "./lib.js";

const $ = (id) => document.getElementById(id);
const ENTITY = { context_window_type: "window type", profile: "profile", session: "session", module: "module", api_token: "API token" };
const ACTION = { create: "created", update: "changed", delete: "deleted", rollback: "rolled back", attach: "attached a document to",
  detach: "removed a document from", add_messages: "imported messages into", purge_memory: "purged the memory of",
  turn_validity: "changed which turns count in", context_limit: "changed the context limit of", revoke: "revoked",
  install: "installed", uninstall: "uninstalled", activate: "activated", deactivate: "deactivated",
  label: "moved a label of", unlabel: "removed a label from" };

/** A label's move (the rollout or the rollback): from which version to which, and why. */
function labelMove(e) {
  const now = e.after || e.before;
  const where = e.after ? `${e.before ? `v${e.before.version} → ` : "put on "}v${e.after.version}` : `taken off v${e.before.version}`;
  const experiment = e.after?.experiment_id;
  return h("span", { dataset: { testid: "label-move" } }, h("strong", {}, now.label), `: ${where}`, now.reason && e.after ? ` · “${now.reason}”` : "",
    experiment ? [" · justified by ", h("a", { href: `/ui/experiments/${encodeURIComponent(experiment)}` }, `experiment ${experiment}`)] : "");
}

function change(e) {
  if (e.action === "label" || e.action === "unlabel") return labelMove(e);
  if (e.entity === "context_window_type" && e.before && e.after) {
    const lines = describeChanges(e.before, e.after, moduleLabel);
    return lines.length ? h("ul", { class: "diff" }, lines.map((l) => h("li", {}, l))) : h("span", { class: "muted" }, "No differences.");
  }
  if (e.before && e.after) {
    const keys = Object.keys({ ...e.before, ...e.after }).filter((k) => JSON.stringify(e.before[k]) !== JSON.stringify(e.after[k]) && k !== "updated_at");
    return keys.length ? h("ul", { class: "diff" }, keys.map((k) => h("li", {}, `${k.replace(/_/g, " ")}: ${JSON.stringify(e.before[k]) ?? "none"} → ${JSON.stringify(e.after[k]) ?? "none"}`)))
      : h("span", { class: "muted" }, "No field changed.");
  }
  const data = e.after || e.before;
  if (!data) return h("span", { class: "muted" }, "–");
  const name = data.name || data.title || data.display_name;
  const count = typeof data.count === "number" ? `${data.count} item${data.count === 1 ? "" : "s"}` : "";
  return h("span", {}, [name && `“${name}”`, count].filter(Boolean).join(" ") || h("details", {}, h("summary", {}, "Details"), h("pre", { class: "message-text", tabindex: "0", "aria-label": "Details" }, JSON.stringify(data, null, 2))));
}

function link(e) {
  const id = encodeURIComponent(e.entity_id);
  if (e.entity === "context_window_type" && e.action !== "delete") return h("a", { href: `/ui/types/${id}` }, e.entity_id);
  if (e.entity === "session" && e.action !== "delete") return h("a", { href: `/ui/sessions/${id}` }, e.entity_id);
  return h("code", {}, e.entity_id);
}

const PAGE = 200;

async function load(event, offset = 0) {
  event?.preventDefault();
  const params = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if ($("a-entity").value) params.set("entity", $("a-entity").value);
  if ($("a-id").value.trim()) params.set("entity_id", $("a-id").value.trim());
  if ($("a-actor").value.trim()) params.set("actor", $("a-actor").value.trim());
  try {
    const { entries, next_offset: nextOffset } = await get(`/v1/audit?${params}`);
    const go = (to) => load(null, to).then(() => $("audit-table").scrollIntoView());
    pageNav($("audit-pages"), { offset, shown: entries.length, nextOffset, size: PAGE, noun: "changes", go });
    $("audit-table").querySelector("tbody").replaceChildren(...(entries.length ? entries.map((e) => h("tr", { dataset: { entity: e.entity } },
      h("td", { dataset: { label: "When" } }, new Date(e.at).toLocaleString()),
      h("td", { dataset: { label: "Who" } }, actorName(e.actor)),
      h("td", { dataset: { label: "What" } }, `${ACTION[e.action] || e.action.replace(/_/g, " ")} ${ENTITY[e.entity] || e.entity} `, link(e)),
      h("td", { dataset: { label: "Change" } }, change(e))))
      : [h("tr", {}, h("td", { colspan: 4, class: "muted" }, "Nothing recorded for this filter."))]));
  } catch (err) {
    reportError(err, "Could not load the audit log");
  }
}

$("audit-filter").addEventListener("submit", load);
loadModuleNames().then(() => load());
