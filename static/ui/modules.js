// The modules page: installed modules and their lifecycle (activate, deactivate, purge, install, uninstall, reload).
import { api, fieldError, get, h, isAdmin, lockForViewers, notify, reportError } from "./lib.js";

const tbody = document.querySelector("#module-table tbody");
let sessions = [];

async function act(what, method, path, body) {
  try {
    await api(method, path, { body });
    notify(what);
    await load();
  } catch (err) {
    reportError(err, "Not done");
  }
}

function capabilities(m) {
  const caps = Object.entries(m.capabilities).filter(([, on]) => on).map(([k]) => k.replace(/_/g, " "));
  if (m.applicability.required) caps.unshift("required");
  return h("ul", { class: "chips" }, caps.map((c) => h("li", {}, c)));
}

function purgeControl(m) {
  if (!m.capabilities.purgeable) return null;
  const id = `purge-${m.module_id}`;
  const pick = h("select", { id }, sessions.map((s) => h("option", { value: s.id }, s.title || s.id)));
  return h("span", { class: "purge" },
    h("label", { for: id, class: "sr-only" }, `Session to purge ${m.display_name} for`), pick,
    h("button", {
      type: "button", class: "admin-only",
      onclick: () => act(`Purged ${m.display_name} for ${pick.value}.`, "POST", `/v1/context-window/modules/${m.module_id}/purge`, { session_id: pick.value }),
    }, "Purge for session"));
}

function row(m) {
  const base = `/v1/context-window/modules/${encodeURIComponent(m.module_id)}`;
  const required = m.applicability.required;
  return h("tr", { dataset: { module: m.module_id } },
    h("th", { scope: "row" }, h("span", { class: "module-name" }, m.display_name), h("br"), h("code", { class: "small muted" }, m.module_id),
      m.description ? h("p", { class: "small muted description" }, m.description) : null),
    h("td", {}, h("span", { class: `badge src-${m.source}` }, m.source)),
    h("td", {}, m.version),
    h("td", {}, capabilities(m)),
    h("td", {}, h("span", { class: `badge ${m.active ? "b-ok" : "b-skipped"}` }, m.active ? "active" : "inactive"),
      m.status && m.status.error ? h("p", { class: "field-error" }, m.status.error) : null),
    h("td", {}, h("div", { class: "actions" },
      m.active
        ? h("button", { type: "button", class: "admin-only", disabled: required, title: required ? "Required modules cannot be deactivated" : null,
          onclick: () => act(`Deactivated ${m.display_name}.`, "POST", `${base}/deactivate`) }, "Deactivate")
        : h("button", { type: "button", class: "admin-only", onclick: () => act(`Activated ${m.display_name}.`, "POST", `${base}/activate`) }, "Activate"),
      purgeControl(m),
      m.source === "user" ? h("button", {
        type: "button", class: "danger admin-only",
        onclick: () => confirm(`Uninstall ${m.display_name}?`) && act(`Uninstalled ${m.display_name}.`, "DELETE", base),
      }, "Uninstall") : null)));
}

async function load() {
  try {
    const [data, list] = await Promise.all([get("/v1/context-window/modules"), get("/v1/sessions")]);
    sessions = list.sessions;
    tbody.replaceChildren(...data.modules.map(row));
    document.getElementById("load-errors-section").hidden = !data.load_errors.length;
    document.getElementById("load-errors").replaceChildren(...data.load_errors.map((e) =>
      h("li", {}, h("strong", {}, e.name), ` (${e.source}): ${e.error}`)));
    lockForViewers(tbody);
  } catch (err) {
    reportError(err, "Could not load the modules");
  }
}

document.getElementById("reload-modules").addEventListener("click", () => act("Modules reloaded.", "POST", "/v1/context-window/modules/reload"));
document.getElementById("install-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!isAdmin()) return; // the form is hidden for viewers; the API would refuse anyway
  const input = document.getElementById("install-path");
  const error = document.getElementById("install-path-error");
  fieldError(input, error);
  try {
    const { data } = await api("POST", "/v1/context-window/modules/install", { body: { path: input.value.trim() } });
    notify(`Installed ${data.display_name} ${data.version}.`);
    input.value = "";
    await load();
  } catch (err) {
    fieldError(input, error, err.message);
    input.focus();
  }
});
load();
