// The type editor: module rows, a live composition bar, the condensation order (drag or keyboard), rules,
// distillation; saving with If-Match (412 -> what changed, reload or reapply); versions; what-if preview.
import { activeSlots, compositionBar } from "./bars.js";
import { applyChanges, clone, diff, show, typeBody } from "./diff.js";
import { initOrder } from "./order.js";
import { initRules } from "./rules.js";
import { ApiError, api, get, h, isAdmin, loadModuleNames, lockForViewers, moduleLabel, notify, reportError } from "./lib.js";
import { eventLists, moduleTable } from "./snapshot_view.js";

const $ = (id) => document.getElementById(id);
const form = $("editor");
let typeId = document.body.dataset.typeId;
const copyOf = document.body.dataset.copyOf;
const url = () => `/v1/context-window-types/${encodeURIComponent(typeId)}`;

let modules = {}; // installed modules by id (display name, required, condensable)
let base = null; // the saved version being edited (null for a new type)
let etag = null;
let state = null; // the edited type
let order = null;
let rules = null;

// --- loading -------------------------------------------------------------------------------------

async function load() {
  modules = Object.fromEntries((await loadModuleNames()).map((m) => [m.module_id, m]));
  if (typeId) {
    const res = await api("GET", url());
    setLoaded(res.data);
  } else {
    const { types, default: defaultId } = await get("/v1/context-window-types");
    const source = types.find((t) => t.id === (copyOf || defaultId)) || types[0];
    state = typeBody(clone(source));
    Object.assign(state, copyOf ? { id: `${source.id}-copy`, name: `${source.name} (copy)` } : { id: "", name: "", description: "" });
    state.is_default = false;
    render();
  }
  form.setAttribute("aria-busy", "false");
  loadSessions();
}

function setLoaded(data) {
  base = typeBody(data);
  etag = data.etag;
  state = clone(base);
  $("version-label").textContent = `version ${data.version} · saved ${new Date(data.updated_at).toLocaleString()}`;
  $("editor-title").textContent = `Edit type: ${data.name}`;
  render();
  loadVersions();
}

// --- rendering -----------------------------------------------------------------------------------

/** The type's modules and the installed ones, highest priority first (the order they contribute in). */
function moduleIds() {
  const ids = [...new Set([...Object.keys(state.modules), ...Object.keys(modules)])];
  return ids.sort((a, b) => (peekSlot(b).priority - peekSlot(a).priority) || a.localeCompare(b));
}

function render() {
  $("f-id").value = state.id;
  $("f-id").readOnly = Boolean(typeId);
  $("f-name").value = state.name;
  $("f-description").value = state.description || "";
  $("f-default").checked = state.is_default;
  $("f-default").disabled = Boolean(base && base.is_default); // clearing it is refused: make another type the default
  setReserve(state.output_reserve_pct);
  $("f-max-rows").value = state.distillation.max_rows;
  $("f-max-chars").value = state.distillation.max_chars;
  $("module-rows").replaceChildren(...moduleIds().flatMap(moduleRow));
  order.render();
  rules.render();
  clearErrors();
  changed();
  lockForViewers(form);
}

function setReserve(value) {
  $("f-reserve").value = value;
  $("f-reserve-n").value = value;
}

/** A module's slot; an installed module the type does not name yet starts inactive with its defaults. */
function peekSlot(id) {
  const d = modules[id]?.defaults || {};
  return state.modules[id] || { active: false, target_pct: d.target_pct ?? 0, min_pct: d.min_pct ?? 0, max_pct: d.max_pct ?? 100, priority: d.priority ?? 50, config: {} };
}

/** The slot, added to the type on its first edit (so merely looking at a row changes nothing). */
function slotFor(id) {
  state.modules[id] = peekSlot(id);
  return state.modules[id];
}

/** A range and a number input kept in step, both labelled, writing one numeric field of the state. */
function sliderPair(id, field, label, { min = 0, max = 100, step = 1, value, onChange }) {
  const loc = `modules.${id}.${field}`;
  const errorId = `e-${id}-${field}`;
  const range = h("input", { type: "range", id: `in-${id}-${field}`, min, max, step, value, "aria-label": `${label}`, "data-loc": loc, "aria-describedby": errorId });
  const number = h("input", { type: "number", min, max, step: "any", value, "aria-label": `${label} (number)`, "aria-describedby": errorId });
  const set = (raw, from) => {
    const v = raw === "" ? "" : Number(raw);
    if (from !== range) range.value = v;
    if (from !== number) number.value = v;
    onChange(v);
  };
  range.addEventListener("input", () => set(range.value, range));
  number.addEventListener("input", () => set(number.value, number));
  return h("div", { class: "slider-pair" }, range, number, h("span", { class: "field-error", id: errorId }));
}

function moduleRow(id) {
  const info = modules[id];
  const slot = peekSlot(id);
  const required = Boolean(info?.applicability?.required);
  const name = info?.display_name || moduleLabel(id);
  const row = h("tr", { dataset: { module: id }, class: slot.active ? "" : "inactive" });
  const numberField = (field, label, opts = {}) => sliderPair(id, field, `${label} for ${name}`, {
    ...opts, value: slot[field], onChange: (v) => { slotFor(id)[field] = v; changed(); },
  });
  const toggle = h("input", {
    type: "checkbox", id: `active-${id}`, checked: slot.active, disabled: required && slot.active,
    "data-loc": `modules.${id}.active`,
    onchange: () => {
      slotFor(id).active = toggle.checked;
      row.classList.toggle("inactive", !toggle.checked);
      if (!toggle.checked) state.condensation_order = state.condensation_order.filter((m) => m !== id);
      order.render();
      changed();
    },
  });
  row.append(
    h("th", { scope: "row" }, h("span", { class: "module-name" }, name), " ", h("code", { class: "muted small" }, id),
      required ? h("span", { class: "badge", title: "Required modules always take part" }, "required") : null,
      info ? null : h("span", { class: "badge b-failed", title: "Named by the type but not installed here" }, "not installed")),
    h("td", {}, toggle, h("label", { for: `active-${id}`, class: "sr-only" }, `${name} active`),
      required ? h("span", { class: "sr-only" }, " (required, always active)") : null),
    h("td", {}, numberField("target_pct", "Target %")),
    h("td", {}, numberField("min_pct", "Minimum %")),
    h("td", {}, numberField("max_pct", "Maximum %")),
    h("td", {}, sliderPriority(id, name, slot)));
  const errorRow = h("tr", { class: "row-error" }, h("td", { colspan: 6 }, h("p", { class: "field-error", "data-loc": `modules.${id}` })));
  return [row, errorRow];
}

function sliderPriority(id, name, slot) {
  const input = h("input", {
    type: "number", min: 0, max: 100, step: 1, value: slot.priority, class: "narrow", "aria-label": `Priority for ${name}`,
    "data-loc": `modules.${id}.priority`, "aria-describedby": `e-${id}-priority`,
    oninput: () => { slotFor(id).priority = input.value === "" ? "" : Number(input.value); changed(); },
  });
  return h("div", {}, input, h("span", { class: "field-error", id: `e-${id}-priority` }));
}

/** After every edit: the composition bar (against the available budget) and the unsaved marker. */
function changed() {
  compositionBar($("composition"), { slots: activeSlots(state), reservePct: Number(state.output_reserve_pct) || 0 });
  const dirty = !base || JSON.stringify(base) !== JSON.stringify(state);
  $("dirty").textContent = dirty ? (base ? "Unsaved changes" : "Not saved yet") : "All changes saved";
}

// --- general fields ------------------------------------------------------------------------------

function bindFields() {
  const text = (id, key) => $(id).addEventListener("input", () => { state[key] = $(id).value; changed(); });
  text("f-id", "id");
  text("f-name", "name");
  text("f-description", "description");
  $("f-default").addEventListener("change", () => { state.is_default = $("f-default").checked; changed(); });
  const reserve = (from) => () => {
    const v = from.value === "" ? "" : Number(from.value);
    setReserve(v);
    state.output_reserve_pct = v;
    changed();
  };
  $("f-reserve").addEventListener("input", reserve($("f-reserve")));
  $("f-reserve-n").addEventListener("input", reserve($("f-reserve-n")));
  const distil = (id, key) => $(id).addEventListener("input", () => {
    state.distillation[key] = $(id).value === "" ? "" : Number($(id).value);
    changed();
  });
  distil("f-max-rows", "max_rows");
  distil("f-max-chars", "max_chars");
}

// --- errors on the fields ------------------------------------------------------------------------

const TAGS = /\.(condition|action)\.[a-z_]+(?=\.|$)/;

/** API locations -> editor locations: drop pydantic's union tags; place type-level errors by what they name. */
function editorLoc(loc, msg) {
  let out = loc.replace(/^type\./, "").replace(TAGS, ".$1");
  if (out === "body" || out === "type") {
    if (msg.includes("condensation_order")) out = "condensation_order";
    else if (msg.includes("dynamic_adjustments")) out = "dynamic_adjustments";
    else if (msg.includes("module")) out = "modules";
  }
  return out;
}

function clearErrors() {
  form.querySelectorAll(".field-error").forEach((el) => { el.textContent = ""; });
  form.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
  $("error-summary").hidden = true;
}

function errorSlot(el) {
  if (el.classList.contains("field-error")) return el;
  const described = el.getAttribute("aria-describedby");
  return (described && $(described.split(" ")[0])) || el.parentElement.querySelector(".field-error");
}

function showErrors(errors, heading = "The type was not saved") {
  clearErrors();
  const targets = [...form.querySelectorAll("[data-loc]")];
  const items = [];
  for (const e of errors) {
    const msg = e.msg.replace(/^Value error, /, "");
    const loc = editorLoc(e.loc, msg);
    const match = targets
      .filter((t) => loc === t.dataset.loc || loc.startsWith(`${t.dataset.loc}.`))
      .sort((a, b) => b.dataset.loc.length - a.dataset.loc.length)[0];
    if (match) {
      if (!match.classList.contains("field-error")) match.setAttribute("aria-invalid", "true");
      const slot = errorSlot(match);
      if (slot) slot.textContent = [slot.textContent, msg].filter(Boolean).join("; ");
    }
    const focusable = match && (match.classList.contains("field-error")
      ? form.querySelector(`[id][data-loc^="${match.dataset.loc}."]`) : match);
    items.push(h("li", {}, focusable && focusable.id ? h("a", { href: `#${focusable.id}` }, loc) : h("strong", {}, loc), `: ${msg}`));
  }
  const summary = $("error-summary");
  summary.querySelector("h2").textContent = heading;
  summary.querySelector("ul").replaceChildren(...items);
  summary.hidden = false;
  summary.focus();
}

// --- saving and conflicts ------------------------------------------------------------------------

async function save(event) {
  event.preventDefault();
  if (!isAdmin()) return;
  clearErrors();
  try {
    if (typeId) {
      const res = await api("PUT", url(), { body: state, headers: { "If-Match": etag } });
      setLoaded(res.data);
      notify(`Saved ${res.data.name} as version ${res.data.version}.`);
    } else {
      const res = await api("POST", "/v1/context-window-types", { body: state });
      typeId = res.data.id;
      history.replaceState(null, "", `/ui/types/${encodeURIComponent(typeId)}`);
      setLoaded(res.data);
      notify(`Created ${res.data.name}.`);
    }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.status === 412) await showConflict(err);
    else if (err.status === 422) showErrors(err.fieldErrors.length ? err.fieldErrors : [{ loc: "body", msg: err.message }]);
    else showErrors([{ loc: err.status === 409 ? "id" : "body", msg: err.message }]);
  }
}

async function showConflict(err) {
  const res = await api("GET", url());
  const theirs = typeBody(res.data);
  const theirChanges = diff(base, theirs);
  const mine = diff(base, state);
  $("conflict-msg").textContent = `${err.message}. They changed ${theirChanges.length} value${theirChanges.length === 1 ? "" : "s"} `
    + `(version ${res.data.version}, saved ${new Date(res.data.updated_at).toLocaleString()}); `
    + `you have ${mine.length} unsaved change${mine.length === 1 ? "" : "s"}.`;
  $("conflict-changes").replaceChildren(...theirChanges.map((c) =>
    h("li", {}, h("code", {}, c.path), `: ${show(c.before)} → ${show(c.after)}`)));
  const box = $("conflict");
  box.hidden = false;
  $("conflict-reapply").focus();
  const close = () => { box.hidden = true; };
  $("conflict-reload").onclick = () => { close(); setLoaded(res.data); notify(`Reloaded version ${res.data.version}.`); };
  $("conflict-reapply").onclick = () => {
    close();
    setLoaded(res.data);
    state = applyChanges(theirs, mine);
    render();
    notify(`Reloaded version ${res.data.version} and reapplied your ${mine.length} change(s); review and save.`);
  };
  $("conflict-dismiss").onclick = close;
}

// --- version history -----------------------------------------------------------------------------

async function loadVersions() {
  if (!typeId) return;
  $("history-section").hidden = false;
  const { versions } = await get(`${url()}/versions`);
  const current = versions.find((v) => v.current) || versions[0];
  $("versions").replaceChildren(...versions.map((v) => h("li", {},
    h("button", { type: "button", class: "link", "aria-controls": "version-diff", onclick: () => showVersion(v, current) },
      `v${v.version}${v.current ? " (current)" : ""}`),
    h("span", { class: "muted small" }, ` ${v.actor} · ${new Date(v.created_at).toLocaleString()}`))));
}

function showVersion(v, current) {
  const changes = diff(v.data, current.data);
  const rollback = h("button", {
    type: "button", class: "admin-only", disabled: v.current,
    onclick: async () => {
      try {
        const res = await api("POST", `${url()}/rollback`, { body: { version: v.version }, headers: { "If-Match": etag } });
        setLoaded(res.data);
        notify(`Rolled back to version ${v.version}; saved as version ${res.data.version}.`);
      } catch (err) {
        if (err.status === 412) await showConflict(err); else reportError(err, "Rollback failed");
      }
    },
  }, `Roll back to v${v.version}`);
  $("version-diff").replaceChildren(
    h("h3", {}, v.current ? `v${v.version} is the current version` : `From v${v.version} to the current v${current.version}`),
    changes.length ? h("ul", { class: "diff" }, changes.map((c) => h("li", {}, h("code", {}, c.path), `: ${show(c.before)} → ${show(c.after)}`)))
      : h("p", { class: "muted" }, "No differences."),
    rollback);
  lockForViewers($("version-diff"));
}

// --- what-if preview -----------------------------------------------------------------------------

async function loadSessions() {
  const { sessions } = await get("/v1/sessions");
  $("preview-session").replaceChildren(...sessions.map((s) => h("option", { value: s.id }, `${s.title || s.id} (${s.profile_id})`)));
}

async function runPreview(event) {
  event.preventDefault();
  const out = $("preview");
  out.replaceChildren(h("p", { class: "muted" }, "Assembling…"));
  try {
    const body = { type: state, session_id: $("preview-session").value, query: $("preview-query").value || "Preview" };
    const { data } = await api("POST", "/v1/context-window-types/preview", { body });
    const snap = data.snapshot;
    out.replaceChildren(h("p", { class: "bar-summary", dataset: { testid: "preview-summary" } }, data.summary),
      moduleTable(snap), eventLists(snap));
  } catch (err) {
    out.replaceChildren(h("p", { class: "field-error" }, `No preview: ${err.message}`));
    if (err.status === 422 && err.fieldErrors.length) showErrors(err.fieldErrors, "The preview needs a valid type");
  }
}

// --- start ---------------------------------------------------------------------------------------

order = initOrder({ list: $("order"), rest: $("order-rest"), live: $("order-live"), getState: () => state, onChange: changed });
rules = initRules({ root: $("rules"), add: $("add-rule"), getState: () => state, moduleIds, onChange: changed });
bindFields();
form.addEventListener("submit", save);
$("preview-form").addEventListener("submit", runPreview);
if (!typeId) $("history-section").hidden = true;
load().catch((err) => reportError(err, "Could not load the type"));
