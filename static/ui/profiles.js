// The profiles page: bind a context window type and set the context-limit override, one row per profile.
import { api, errorText, fieldError, get, h, lockForViewers, notify } from "./lib.js";

const tbody = document.querySelector("#profile-table tbody");

function row(p, types, defaultId) {
  const typeSelect = h("select", { id: `type-${p.id}`, class: "admin-only", "aria-label": `Context window type for ${p.name || p.id}` },
    h("option", { value: "" }, `Default type (${defaultId})`),
    types.map((t) => h("option", { value: t.id, selected: t.id === p.context_window_type_id }, t.name)));
  const limit = h("input", {
    type: "number", id: `limit-${p.id}`, class: "wide-number admin-only", min: 256, step: 1, value: p.context_limit ?? "", placeholder: "model default",
    "aria-label": `Context-limit override for ${p.name || p.id}, in tokens; empty for the model default`,
    "aria-describedby": `err-${p.id}`,
  });
  const error = h("p", { class: "field-error", id: `err-${p.id}`, role: "alert" });
  const save = h("button", {
    type: "button", class: "primary admin-only",
    onclick: async () => {
      fieldError(limit, error);
      const body = { context_window_type_id: typeSelect.value || null, context_limit: limit.value === "" ? null : Number(limit.value) };
      try {
        await api("PATCH", `/v1/profiles/${encodeURIComponent(p.id)}`, { body });
        notify(`Saved ${p.name || p.id}.`);
      } catch (err) {
        fieldError(limit, error, errorText(err));
      }
    },
  }, "Save");
  return h("tr", { dataset: { profile: p.id } },
    h("th", { scope: "row" }, p.name || p.id, h("br"), h("code", { class: "small muted" }, p.id)),
    h("td", {}, p.type.replace(/_/g, " ")),
    h("td", {}, p.model || `${document.body.dataset.serviceModel} (service default)`),
    h("td", {}, typeSelect),
    h("td", {}, limit, error),
    h("td", {}, save));
}

async function load() {
  const [{ profiles }, { types, default: defaultId }] = await Promise.all([get("/v1/profiles"), get("/v1/context-window-types")]);
  tbody.replaceChildren(...profiles.map((p) => row(p, types, defaultId)));
  lockForViewers(tbody);
}
load();
