// The type editor: module rows, a live composition bar, the condensation order (drag, keyboard or buttons),
// rules, distillation; checks as you type; saving with If-Match (412 -> what changed, reload or reapply);
// versions and rollback; the what-if (what_if.js). Unsaved work is guarded against reloads and links.
import { activeSlots, compositionBar } from "./bars.js";
import { applyChanges, clone, describeChanges, diff, typeBody } from "./diff.js";
import { initOrder } from "./order.js";
import { STRATEGIES, initRules } from "./rules.js";
import { ApiError, actorName, api, fmt, get, guardUnsaved, h, isAdmin, loadModuleNames, lockForViewers, moduleLabel, notify, plain, reportError } from "./lib.js";
import { bindLabelForm, showLabels } from "./labels.js";
import { showVersionMetrics } from "./version_metrics.js";
import { initExperimentForm, offerVersions } from "./experiment_form.js";
import { initWhatIf } from "./what_if.js";

const $ = (id) => document.getElementById(id);
const form = $("editor");
let typeId = document.body.dataset.typeId;
const copyOf = document.body.dataset.copyOf;
const url = () => `/v1/context-window-types/${encodeURIComponent(typeId)}`;

let modules = {}; // installed modules by id (display name, required, condensable)
let base = null; // the saved version being edited (null for a new type)
let etag = null;
let loadedVersion = 0;
let state = null; // the edited type
let order = null;
let rules = null;

const isDirty = () => Boolean(state) && (!base ? isAdmin() && JSON.stringify(state) !== JSON.stringify(pristine) : JSON.stringify(base) !== JSON.stringify(state));
let pristine = null; // a new type as first shown: leaving it untouched loses nothing

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
    pristine = clone(state);
    render();
  }
  form.setAttribute("aria-busy", "false");
}

function setLoaded(data) {
  base = typeBody(data);
  etag = data.etag;
  loadedVersion = data.version;
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
  const range = h("input", { type: "range", id: `range-${id}-${field}`, min, max, step, value, "aria-label": `${label}`, "aria-describedby": `e-${id}` });
  const number = h("input", { type: "number", id: `in-${id}-${field}`, min, max, step: "any", value, "aria-label": `${label} (number)`, "data-loc": loc, "aria-describedby": `e-${id}` });
  const set = (raw, from) => {
    const v = raw === "" ? "" : Number(raw);
    if (from !== range) range.value = v;
    if (from !== number) number.value = v;
    onChange(v);
  };
  range.addEventListener("input", () => set(range.value, range));
  number.addEventListener("input", () => set(number.value, number));
  return h("div", { class: "slider-pair" }, range, number);
}

function moduleRow(id) {
  const info = modules[id];
  const slot = peekSlot(id);
  const required = Boolean(info?.applicability?.required);
  const name = info?.display_name || moduleLabel(id);
  const off = info && !info.active;
  const row = h("tr", { dataset: { module: id }, class: slot.active && !off ? "" : "inactive" });
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
      info ? null : h("span", { class: "badge b-failed", title: "Named by the type but not installed here" }, "not installed"),
      off ? h("span", { class: "badge b-skipped", dataset: { testid: "globally-off" } }, "switched off for all types") : null,
      off ? h("p", { class: "small muted" }, "Deactivated on the Modules page: it takes part in no type until it is activated again.") : null,
      optionFields(id, name, info?.options_schema, slot)),
    h("td", {}, toggle, h("label", { for: `active-${id}`, class: "sr-only" }, `${name} active`),
      required ? h("span", { class: "sr-only" }, " (required, always active)") : null),
    h("td", {}, numberField("target_pct", "Target %"), h("span", { class: "tokens small muted", dataset: { tokensFor: id } })),
    h("td", {}, numberField("min_pct", "Minimum %")),
    h("td", {}, numberField("max_pct", "Maximum %")),
    h("td", {}, sliderPriority(id, name, slot)));
  const errorRow = h("tr", { class: "row-error" }, h("td", { colspan: 6 }, h("p", { class: "field-error", "data-loc": `modules.${id}`, id: `e-${id}` })));
  return [row, errorRow];
}

/** The module's options (its slot's ``config``), a field per property of its options model's JSON schema; an
 * empty field means the default (shown as the placeholder). The server checks them again when the type is saved. */
function optionFields(id, name, schema, slot) {
  const props = Object.entries(schema?.properties || {});
  if (!props.length) return null;
  const field = ([key, declared]) => {
    const variant = declared.anyOf?.find((v) => v.type !== "null"); // "a list or none", "'auto' or a number"
    const spec = variant ? { ...variant, ...declared } : declared;
    const loc = `modules.${id}.config.${key}`;
    const label = `${spec.title || key} for ${name}`;
    const current = slot.config?.[key];
    const common = { id: `opt-${id}-${key}`, "data-loc": loc, "aria-describedby": `e-${id}`, title: spec.description || "" };
    const set = (value) => {
      const config = { ...(slotFor(id).config || {}) };
      if (value === undefined) delete config[key]; else config[key] = value;
      state.modules[id].config = config;
      changed();
    };
    let input;
    if (spec.type === "boolean") {
      input = h("input", { ...common, type: "checkbox", checked: current ?? spec.default ?? false, onchange: () => set(input.checked) });
    } else if (spec.enum) {
      input = h("select", { ...common, onchange: () => set(input.value || undefined) },
        h("option", { value: "" }, `default (${spec.default ?? "none"})`),
        ...spec.enum.map((v) => h("option", { value: v, selected: current === v }, String(v))));
    } else if (spec.type === "array") {
      input = h("textarea", { ...common, rows: 3, placeholder: "one per line", oninput: () => set(input.value.trim() ? input.value.split("\n").filter((l) => l.trim()) : undefined) });
      input.value = (current || []).join("\n");
    } else {
      const numeric = spec.type === "integer" || spec.type === "number";
      input = h("input", {
        ...common, type: numeric ? "number" : "text", min: spec.minimum, max: spec.maximum, step: spec.type === "integer" ? 1 : "any",
        value: current ?? "", placeholder: spec.default === undefined ? "" : String(spec.default),
        oninput: () => set(input.value === "" ? undefined : numeric || /^-?\d+(\.\d+)?$/.test(input.value) ? Number(input.value) : input.value),
      });
    }
    return h("div", { class: "option-field" }, h("label", { for: common.id }, spec.title || key), " ", input,
      spec.description ? h("span", { class: "small muted" }, ` ${spec.description}`) : null);
  };
  return h("details", { class: "module-options", dataset: { testid: `options-${id}` } },
    h("summary", {}, `Options (${props.length})`), ...props.map(field));
}

function sliderPriority(id, name, slot) {
  const input = h("input", {
    type: "number", id: `in-${id}-priority`, min: 0, max: 100, step: 1, value: slot.priority, class: "narrow", "aria-label": `Priority for ${name}`,
    "data-loc": `modules.${id}.priority`, "aria-describedby": `e-${id}`,
    oninput: () => { slotFor(id).priority = input.value === "" ? "" : Number(input.value); changed(); },
  });
  return input;
}

/** A module takes part when the type has it on and it is not switched off for every type. */
const takesPart = (id) => modules[id]?.active !== false;

/** After every edit: the composition bar, tokens per target, checks at the fields, the unsaved marker. */
function changed() {
  const slots = activeSlots(state).filter((s) => takesPart(s.id));
  compositionBar($("composition"), { slots, reservePct: Number(state.output_reserve_pct) || 0 });
  showTokens();
  showFieldErrors(localErrors());
  rules?.refreshNotes();
  const dirty = isDirty();
  $("dirty").textContent = dirty ? (base ? "Unsaved changes" : "Not saved yet") : base ? "All changes saved" : "";
  $("dirty").dataset.dirty = String(dirty);
}

/** Each target in tokens for the chosen reference limit (after the output reserve). */
function showTokens() {
  const limit = Number($("ref-limit").value) || 0;
  const room = limit * (1 - (Number(state.output_reserve_pct) || 0) / 100);
  for (const el of form.querySelectorAll("[data-tokens-for]")) {
    const slot = peekSlot(el.dataset.tokensFor);
    el.textContent = `≈ ${fmt(Math.floor((room * (Number(slot.target_pct) || 0)) / 100))} tokens`;
  }
}

// --- checks as you type --------------------------------------------------------------------------

const ID_RULE = /^[a-z0-9][a-z0-9_-]*$/;
const bad = (v, lo, hi) => v === "" || v === null || Number.isNaN(Number(v)) || Number(v) < lo || Number(v) > hi;

/** What is wrong with the edited type, each at its field: [{slot, input, msg}] (element ids). */
function localErrors() {
  const out = [];
  const add = (slot, input, msg) => out.push({ slot, input, msg });
  if (!typeId && state.id.length > 64) add("f-id-error", "f-id", `The id is at most 64 characters; this one has ${state.id.length}.`);
  else if (!typeId && !ID_RULE.test(state.id)) add("f-id-error", "f-id", state.id ? "Use lowercase letters, digits, “-” and “_” only, starting with a letter or digit." : "Give the type an id.");
  if (!String(state.name).trim()) add("f-name-error", "f-name", "Give the type a name.");
  if (bad(state.output_reserve_pct, 0, 50)) add("f-reserve-error", "f-reserve-n", "The output reserve is a whole percentage from 0 to 50.");
  for (const [id, s] of Object.entries(state.modules)) {
    const name = moduleLabel(id);
    for (const [field, word] of [["target_pct", "Target"], ["min_pct", "Minimum"], ["max_pct", "Maximum"]]) {
      if (bad(s[field], 0, 100)) add(`e-${id}`, `in-${id}-${field}`, `${name}: ${word} must be from 0 to 100%.`);
    }
    if (bad(s.priority, 0, 100)) add(`e-${id}`, `in-${id}-priority`, `${name}: priority must be from 0 to 100.`);
    if (Number(s.min_pct) > Number(s.target_pct)) add(`e-${id}`, `in-${id}-min_pct`, `${name}: the minimum (${s.min_pct}%) is above the target (${s.target_pct}%).`);
    if (Number(s.target_pct) > Number(s.max_pct)) add(`e-${id}`, `in-${id}-max_pct`, `${name}: the target (${s.target_pct}%) is above the maximum (${s.max_pct}%).`);
  }
  sharesOverBudget(add);
  (state.dynamic_adjustments || []).forEach((r, i) => {
    if (r.action?.type === "condense" && !STRATEGIES[r.action.strategy ?? "summarize"]) {
      add(`r${i}-action-strategy-error`, `r${i}-action-strategy`, `Rule ${i + 1}: “${r.action.strategy}” is not a strategy; choose ${Object.values(STRATEGIES).map((t) => `“${t}”`).join(" or ")}.`);
    }
  });
  if (bad(state.distillation.max_rows, 1, Infinity)) add("f-max-rows-error", "f-max-rows", "At least 1 row.");
  if (bad(state.distillation.max_chars, 100, Infinity)) add("f-max-chars-error", "f-max-chars", "At least 100 characters.");
  return out;
}

/** The active modules share one budget: the service refuses targets (or minimums) adding up to over 100%. */
function sharesOverBudget(add) {
  const active = Object.entries(state.modules).filter(([, s]) => s.active);
  if (!active.length) return;
  for (const [field, word] of [["target_pct", "targets"], ["min_pct", "minimums"]]) {
    const total = active.reduce((sum, [, s]) => sum + (Number(s[field]) || 0), 0);
    if (total > 100 + 1e-9) {
      add("modules-error", `in-${active[0][0]}-${field}`, `The active modules' ${word} add up to ${Math.round(total)}%; they share one budget, so lower them to 100% in total or less.`);
    }
  }
}

let shownLocal = [];
function showFieldErrors(errors) {
  for (const { slot, input } of shownLocal) {
    if ($(slot)) $(slot).textContent = "";
    $(input)?.removeAttribute("aria-invalid");
  }
  for (const { slot, input, msg } of errors) {
    const el = $(slot);
    if (el) el.textContent = [el.textContent, msg].filter(Boolean).join(" ");
    $(input)?.setAttribute("aria-invalid", "true");
  }
  shownLocal = errors;
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

/** A field's name as the page shows it (its label), never the API's dotted path. */
function describeLoc(el, loc) {
  const mod = /^modules\.([^.]+)/.exec(loc);
  if (mod) return moduleLabel(mod[1]);
  const rule = /^dynamic_adjustments\.(\d+)/.exec(loc);
  if (rule) return `Rule ${Number(rule[1]) + 1}`;
  if (loc === "condensation_order") return "Condensation order";
  if (el && !el.classList.contains("field-error")) {
    const text = el.labels?.[0]?.textContent || el.getAttribute("aria-label");
    if (text) return text.trim();
  }
  return "The type";
}

/** A module option's error in the page's words: the module's name and the option's label, as the fields show them,
 * where the API names its ids (`document_context option 'per_file_chars'`, as a client sends them). */
function optionWords(loc, msg) {
  const option = /^modules\.([^.]+)\.config\.([^.]+)/.exec(loc);
  if (!option) return msg;
  const [, id, key] = option;
  const label = document.querySelector(`label[for="opt-${CSS.escape(id)}-${CSS.escape(key)}"]`)?.textContent.trim();
  return msg.replace(`${id} option '${key}'`, `${moduleLabel(id)}, option “${label || key.replace(/_/g, " ")}”`)
    .replace(`${id} has no option`, `${moduleLabel(id)} has no option`);
}

function showErrors(errors, heading = "The type was not saved") {
  clearErrors();
  const targets = [...form.querySelectorAll("[data-loc]")];
  const items = [];
  for (const e of errors) {
    const loc = editorLoc(e.loc, plain(e.msg));
    const msg = optionWords(loc, plain(e.msg));
    const match = targets
      .filter((t) => loc === t.dataset.loc || loc.startsWith(`${t.dataset.loc}.`))
      .sort((a, b) => b.dataset.loc.length - a.dataset.loc.length)[0];
    if (match) {
      match.closest("details")?.setAttribute("open", ""); // an option in a closed group: show it
      if (!match.classList.contains("field-error")) match.setAttribute("aria-invalid", "true");
      const slot = errorSlot(match);
      if (slot) slot.textContent = [slot.textContent, msg].filter(Boolean).join("; ");
    }
    const focusable = match && (match.classList.contains("field-error")
      ? form.querySelector(`[id][data-loc^="${match.dataset.loc}."]`) : match);
    const what = describeLoc(match, loc);
    items.push(h("li", {}, focusable && focusable.id ? h("a", { href: `#${focusable.id}` }, what) : h("strong", {}, what), `: ${msg}`));
  }
  const summary = $("error-summary");
  summary.querySelector("h2").textContent = heading;
  summary.querySelector("ul").replaceChildren(...items);
  summary.hidden = false;
  summary.focus();
}

// --- saving and conflicts ------------------------------------------------------------------------

function showLocalSummary(errors, heading = "The type was not saved: fix these first") {
  const summary = $("error-summary");
  summary.querySelector("h2").textContent = heading;
  summary.querySelector("ul").replaceChildren(...errors.map((e) => h("li", {}, h("a", { href: `#${e.input}` }, e.msg))));
  summary.hidden = false;
  summary.focus();
}

let saving = false; // one request at a time: a double-click or a held Ctrl+S saves once

async function save(event) {
  event?.preventDefault();
  if (!isAdmin() || saving) return;
  clearErrors();
  const local = localErrors();
  if (local.length) {
    showFieldErrors(local);
    showLocalSummary(local);
    return;
  }
  if (base && !isDirty()) {
    notify("Nothing to save: the type is as saved.");
    return;
  }
  saving = true;
  $("save").setAttribute("aria-disabled", "true");
  try {
    await send();
  } finally {
    saving = false;
    $("save").removeAttribute("aria-disabled");
  }
}

async function send() {
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
  const mine = diff(base, state);
  const sentences = describeChanges(base, theirs, moduleLabel);
  $("conflict-msg").textContent = `Someone saved version ${res.data.version} (${new Date(res.data.updated_at).toLocaleString()}) `
    + `after you opened version ${loadedVersion}. They made ${sentences.length} change${sentences.length === 1 ? "" : "s"}; `
    + `you have ${mine.length} unsaved change${mine.length === 1 ? "" : "s"}.`;
  $("conflict-changes").replaceChildren(...sentences.map((text) => h("li", {}, text)));
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

let versionList = [];
let shownVersion = null; // the version #version-diff compares with the current one: shown again when the list reloads
let labels = [];
let labelsBound = false;

/** What a version changed from the one before it, in a few words. */
function summary(v, i) {
  if (v.rollback_of) return `rollback of v${v.rollback_of}`;
  const previous = versionList[i + 1];
  if (!previous) return "first version";
  const lines = describeChanges(previous.data, v.data, moduleLabel);
  if (!lines.length) return "no change";
  return lines.length === 1 ? lines[0] : `${lines[0]} (+${lines.length - 1} more)`;
}

async function loadVersions() {
  if (!typeId) return;
  $("history-section").hidden = false;
  if (!labelsBound) {
    bindLabelForm(typeId, url(), () => labels, loadVersions);
    labelsBound = true;
    $("metrics-section").hidden = false;
    showVersionMetrics($("version-metrics"), url()).catch((err) => reportError(err, "Could not load the metrics"));
  }
  ({ versions: versionList } = await get(`${url()}/versions`));
  const current = versionList.find((v) => v.current) || versionList[0];
  $("versions").replaceChildren(...versionList.map((v, i) => h("li", { dataset: { version: v.version } },
    h("button", { type: "button", class: "link", "aria-controls": "version-diff", onclick: () => showVersion(v, current) },
      `v${v.version}${v.current ? " (current)" : ""}`),
    (v.labels || []).map((label) => [" ", h("span", { class: "badge default label-badge" }, label)]),
    h("span", { class: "muted small" }, ` ${v.author || actorName(v.actor)} · ${new Date(v.created_at).toLocaleString()}`),
    h("span", { class: "small version-summary" }, ` · ${summary(v, i)}`))));
  labels = await showLabels(url(), versionList, loadVersions);
  offerVersions(typeId, versionList);
  const options = () => versionList.map((v) => h("option", { value: v.version }, `v${v.version}${v.current ? " (current)" : ""}`));
  $("compare-from").replaceChildren(...options());
  $("compare-to").replaceChildren(...options());
  $("compare-from").value = String(versionList[Math.min(1, versionList.length - 1)].version);
  $("compare-to").value = String(current.version);
  // A version picked while the list was reloading was compared with the old current one: compare it again.
  const shown = versionList.find((v) => v.version === shownVersion);
  if (shown) showVersion(shown, current);
}

function compareVersions(event) {
  event.preventDefault();
  const pick = (id) => versionList.find((v) => String(v.version) === $(id).value);
  const from = pick("compare-from");
  const to = pick("compare-to");
  if (!from || !to) return;
  const changes = describeChanges(from.data, to.data, moduleLabel, { skip: ["is_default"] });
  shownVersion = null;
  $("version-diff").replaceChildren(h("h3", {}, `From v${from.version} to v${to.version}`),
    changes.length ? h("ul", { class: "diff" }, changes.map((text) => h("li", {}, text))) : h("p", { class: "muted" }, "No differences."));
}

function showVersion(v, current) {
  // Rollback keeps which type is the default, so that is not shown as a difference.
  const changes = describeChanges(v.data, current.data, moduleLabel, { skip: ["is_default"] });
  shownVersion = v.version;
  const rollback = h("button", {
    type: "button", class: "admin-only", disabled: v.current,
    onclick: async () => {
      const lose = isDirty() ? " Your unsaved changes in the editor will be discarded." : "";
      if (!confirm(`Roll back to version ${v.version}? The type becomes as it was then, saved as a new version.${lose}`)) return;
      try {
        const res = await api("POST", `${url()}/rollback`, { body: { version: v.version }, headers: { "If-Match": etag } });
        setLoaded(res.data);
        shownVersion = null;
        $("version-diff").replaceChildren(h("p", { class: "muted" }, `Rolled back to version ${v.version}. Pick a version to compare it with the current one.`));
        notify(`Rolled back to version ${v.version}; saved as version ${res.data.version}.`);
      } catch (err) {
        if (err.status === 412) await showConflict(err); else reportError(err, "Rollback failed");
      }
    },
  }, `Roll back to v${v.version}`);
  $("version-diff").replaceChildren(
    h("h3", {}, v.current ? `v${v.version} is the current version` : `From v${v.version} to the current v${current.version}`),
    changes.length ? h("ul", { class: "diff" }, changes.map((text) => h("li", {}, text)))
      : h("p", { class: "muted" }, "No differences."),
    rollback);
  lockForViewers($("version-diff"));
}

// --- start ---------------------------------------------------------------------------------------

const condensable = (id) => modules[id]?.capabilities?.condensable !== false;
/** Why a rule aimed at this module would do nothing, or "" when it takes part. */
const whyIdle = (id) => {
  if (!modules[id]) return "is not installed";
  if (!takesPart(id)) return "is switched off for all types on the Modules page";
  if (!state.modules[id]?.active) return "is not active in this type";
  return "";
};
order = initOrder({ list: $("order"), rest: $("order-rest"), live: $("order-live"), getState: () => state, onChange: changed, condensable });
rules = initRules({ root: $("rules"), add: $("add-rule"), getState: () => state, moduleIds, onChange: changed, whyIdle });
bindFields();
form.addEventListener("submit", save);
// Enter in a field never saves (it used to create a version from the description box); Ctrl/Cmd+S does.
form.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.target.tagName === "INPUT") event.preventDefault();
});
document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
    event.preventDefault();
    save();
  }
});
guardUnsaved(isDirty);
$("compare-form").addEventListener("submit", compareVersions);
$("ref-limit").addEventListener("change", showTokens);
initWhatIf({
  getState: () => state,
  getTypeId: () => typeId,
  check: () => {
    const local = localErrors();
    if (local.length) showLocalSummary(local, "The preview needs these fixed first");
    return local.length === 0;
  },
  showTypeErrors: (errors) => showErrors(errors, "The preview needs a valid type"),
});
initExperimentForm({
  getState: () => state,
  getTypeId: () => typeId,
  isDirty,
  check: () => {
    const local = localErrors();
    if (local.length) showLocalSummary(local, "The experiment needs these fixed first");
    return local.length === 0;
  },
  showTypeErrors: (errors) => showErrors(errors, "The experiment needs a valid type"),
}).catch((err) => reportError(err, "Could not load the profiles"));
if (!typeId) $("history-section").hidden = true;
load().catch((err) => reportError(err, "Could not load the type"));
