// The profiles page: bind a context window type and set the context-limit override, one row per profile. A new
// binding is confirmed (it applies to every session of the profile at once); unsaved rows are guarded.
import { api, errorText, fieldError, get, guardUnsaved, h, lockForViewers, notify } from "./lib.js";

const tbody = document.querySelector("#profile-table tbody");
const rows = []; // { dirty() } per profile

/** The sessions a binding applies to, in words (a profile's sessions are listed up to the API's page size). */
async function sessionsOf(profileId) {
  const { sessions, more } = await get(`/v1/sessions?profile_id=${encodeURIComponent(profileId)}&limit=1000`);
  const n = `${sessions.length.toLocaleString("en-US")}${more ? " or more" : ""}`;
  return sessions.length ? `all ${n} of its session${sessions.length === 1 && !more ? "" : "s"}` : "every session it gets";
}

async function confirmBinding(p, binding) {
  let whom = "every session of the profile";
  try {
    whom = await sessionsOf(p.id);
  } catch { /* the count is a courtesy: the question stands without it */ }
  return confirm(`Bind ${p.name || p.id} to ${binding}?\n\nThis applies at once to ${whom}, existing and new: `
    + "each assembles its next turn under this type.");
}

/** The label choices of a type: its current version, or the version a label is on. */
function labelOptions(labels, selected) {
  return [h("option", { value: "" }, "Current version"),
    ...labels.map((l) => h("option", { value: l.label, selected: l.label === selected }, `${l.label} (v${l.version})`))];
}

function row(p, types, defaultId, labelsOf) {
  const saved = { type: p.context_window_type_id || "", label: p.context_window_type_label || "", limit: p.context_limit ?? "" };
  const label = p.name || p.id;
  const typeSelect = h("select", { id: `type-${p.id}`, class: "admin-only", "aria-label": `Context window type for ${label}` },
    h("option", { value: "" }, `Default type (${defaultId})`),
    types.map((t) => h("option", { value: t.id, selected: t.id === p.context_window_type_id }, t.name)));
  const labelSelect = h("select", { id: `label-${p.id}`, class: "admin-only", "aria-label": `Version of the type for ${label}: its current one, or a label's` },
    labelOptions(labelsOf(saved.type), saved.label));
  const showLabels = () => {
    labelSelect.replaceChildren(...labelOptions(labelsOf(typeSelect.value), saved.type === typeSelect.value ? saved.label : ""));
    labelSelect.disabled = !typeSelect.value || !labelsOf(typeSelect.value).length;
  };
  showLabels();
  const limit = h("input", {
    type: "number", id: `limit-${p.id}`, class: "wide-number admin-only", min: 256, step: 1, value: saved.limit, placeholder: "model default",
    "aria-label": `Context-limit override for ${label}, in tokens; empty for the model default`,
    "aria-describedby": `err-${p.id}`,
  });
  const error = h("p", { class: "field-error", id: `err-${p.id}`, role: "alert" });
  const state = h("span", { class: "small muted unsaved", dataset: { testid: `unsaved-${p.id}` } });
  const rebinds = () => typeSelect.value !== saved.type || labelSelect.value !== saved.label;
  const dirty = () => rebinds() || limit.value !== String(saved.limit);
  const mark = () => { state.textContent = dirty() ? "Unsaved" : ""; };
  typeSelect.addEventListener("change", () => { showLabels(); mark(); });
  labelSelect.addEventListener("change", mark);
  limit.addEventListener("input", mark);
  const save = h("button", {
    type: "button", class: "primary admin-only", "aria-label": `Save ${label}`,
    onclick: async () => {
      fieldError(limit, error);
      const binding = `${typeSelect.selectedOptions[0].textContent}${labelSelect.value ? `, ${labelSelect.selectedOptions[0].textContent}` : ""}`;
      if (rebinds() && !(await confirmBinding(p, binding))) {
        notify(`Not saved: ${label} keeps its type.`);
        return;
      }
      const body = {
        context_window_type_id: typeSelect.value || null, context_window_type_label: labelSelect.value || null,
        context_limit: limit.value === "" ? null : Number(limit.value),
      };
      try {
        await api("PATCH", `/v1/profiles/${encodeURIComponent(p.id)}`, { body });
        Object.assign(saved, { type: typeSelect.value, label: labelSelect.value, limit: limit.value });
        mark();
        notify(`Saved ${label}.`);
      } catch (err) {
        fieldError(limit, error, errorText(err));
      }
    },
  }, "Save");
  rows.push({ dirty });
  return h("tr", { dataset: { profile: p.id } },
    h("th", { scope: "row" }, label, h("br"), h("code", { class: "small muted" }, p.id)),
    h("td", {}, p.type.replace(/_/g, " ")),
    h("td", { class: "name" }, p.model || `${document.body.dataset.serviceModel} (service default)`),
    h("td", {}, typeSelect, " ", labelSelect),
    h("td", {}, limit, error),
    h("td", {}, save, " ", state));
}

async function load() {
  const [{ profiles }, { types, default: defaultId }] = await Promise.all([get("/v1/profiles"), get("/v1/context-window-types")]);
  const labels = Object.fromEntries(await Promise.all(types.map(async (t) => [t.id, (await get(`/v1/context-window-types/${encodeURIComponent(t.id)}/labels`)).labels])));
  tbody.replaceChildren(...profiles.map((p) => row(p, types, defaultId, (typeId) => labels[typeId] || [])));
  lockForViewers(tbody);
}

guardUnsaved(() => rows.some((r) => r.dirty()), "A profile's binding or limit is not saved. Leave this page and lose it?");
load();
