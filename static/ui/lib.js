// Shared helpers: calling the API with the session cookie and CSRF header, building DOM, messages.

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
  get fieldErrors() { return this.body.errors || []; }
}

const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content || "";

// Once the user signs out, a poll answered 401 must not send them to sign-in?next=<this page> instead.
let signingOut = false;

/** Ends the session and goes to the sign-in page (even if the server could not be reached). */
export async function signOut() {
  signingOut = true;
  try { await api("DELETE", "/v1/auth/session"); } finally { location.assign("/ui/sign-in"); }
}

export async function api(method, path, { body, headers = {} } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  if (!["GET", "HEAD"].includes(method)) init.headers["X-CSRF-Token"] = csrf();
  const res = await reach(path, init);
  const data = await bodyOf(res);
  if (res.status === 401 && !signingOut) {
    location.assign(`/ui/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  if (!["GET", "HEAD"].includes(method)) clearErrorToast(); // a later success makes an old error moot
  return { data, etag: res.headers.get("ETag"), status: res.status };
}

export const get = async (path) => (await api("GET", path)).data;

export const UNREACHABLE = "Could not reach the tda server: it may be down or restarting, or the network is out. "
  + "Nothing was changed; try again in a moment.";

/** fetch, with a failure to reach the server at all (down, restarting, offline) as an ApiError that says so. */
export async function reach(path, init) {
  try {
    return await fetch(path, init);
  } catch {
    throw new ApiError(0, { message: UNREACHABLE });
  }
}

/** A response's JSON; a body that is not tda's JSON (a proxy's HTML error page) is described, never shown raw. */
export async function bodyOf(res) {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    const status = `${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
    return { message: res.ok ? `The server's answer (${status}) was not tda's JSON: reload the page.`
      : `The server answered ${status} with a page that is not tda's (a proxy in front of it, most likely): tda may be `
        + "down or restarting. Nothing was changed; try again in a moment." };
  }
}

/** h("button", {class: "x", onclick: fn}, "text", child) -> element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style" && typeof value === "object") Object.assign(el.style, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const isAdmin = () => ["admin", "operator"].includes(document.body.dataset.role);

/** Show (or with no message, clear) an error on one input: the text in its error slot, aria-invalid on it. */
export function fieldError(input, slot, message = "") {
  slot.textContent = message;
  if (message) input.setAttribute("aria-invalid", "true");
  else input.removeAttribute("aria-invalid");
}

/** The message to show on a field for an API error: its field messages, else the error's own. */
export const errorText = (err) => (err.fieldErrors || []).map((e) => plain(e.msg)).join("; ") || plain(err.message);

let toastTimer;
/** A short message in the polite live region; errors stay longer, and go at the next successful change. */
export function notify(message, kind = "ok") {
  const toast = document.getElementById("toast");
  if (!toast) return;
  toast.textContent = message;
  toast.dataset.kind = kind;
  toast.classList.add("show");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => toast.classList.remove("show"), kind === "error" ? 12000 : 4000);
}

export function clearErrorToast() {
  const toast = document.getElementById("toast");
  if (toast && toast.dataset.kind === "error") {
    toast.classList.remove("show");
    toast.textContent = "";
    delete toast.dataset.kind;
  }
}

export function reportError(err, what) {
  notify(`${what}: ${plain(err.message)}`, "error");
}

/**
 * Warn before unsaved work is lost: on reload or closing (beforeunload) and on links inside the app (a confirm).
 * ``isDirty`` says whether there is anything to lose.
 */
export function guardUnsaved(isDirty, message = "You have unsaved changes. Leave this page and lose them?") {
  let leaving = false;
  window.addEventListener("beforeunload", (event) => {
    if (leaving || !isDirty()) return;
    event.preventDefault();
    event.returnValue = "";
  });
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[href]");
    if (!link || event.defaultPrevented || link.target || link.getAttribute("href").startsWith("#") || !isDirty()) return;
    if (confirm(message)) leaving = true;
    else event.preventDefault();
  }, true);
}

/**
 * Where a paged list is (the API's ``offset`` and ``next_offset``) and buttons to the pages either side: a list
 * never stops silently at its page size. ``go(offset)`` shows another page.
 */
export function pageNav(nav, { offset, shown, nextOffset, size, noun, go }) {
  const more = nextOffset !== null && nextOffset !== undefined;
  nav.hidden = !offset && !more;
  nav.replaceChildren(
    h("p", { class: "small", dataset: { testid: "page-hint" } }, shown
      ? `Showing ${noun} ${fmt(offset + 1)}–${fmt(offset + shown)}, newest first${more ? `; there are more: “Older” shows the next ${fmt(size)}` : ""}.`
      : `No ${noun} on this page.`),
    offset > 0 ? h("button", { type: "button", onclick: () => go(Math.max(0, offset - size)) }, `← Newer ${noun}`) : null,
    more ? h("button", { type: "button", onclick: () => go(nextOffset) }, `Older ${noun} →`) : null);
}

export const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
/** A fraction as a percentage; a small but non-zero share reads "<1%", never "0%". */
export function pct(x, digits = 0) {
  const floor = 10 ** -digits;
  if (x > 0 && x * 100 < floor) return `<${floor}%`;
  return `${(x * 100).toFixed(digits)}%`;
}

/** Server messages in plain words: no patterns, no protocol jargon. */
export function plain(message) {
  return String(message || "")
    .replace(/^Value error, /, "")
    .replace(/String should match pattern '[^']*'/, "Use lowercase letters, digits, “-” and “_” only, starting with a letter or digit")
    .replace(/;? ?(re-?read it and )?send the new ETag[^.;]*/i, "; reload it and apply your change again")
    .replace(/\bIf-Match\b/g, "version check")
    .replace(/\((session|profile)_override\)/g, "($1 limit)")
    .replace(/\(model_metadata\)/g, "(the model's own limit)")
    .replace(/\(fallback\)/g, "(assumed limit)");
}

/** Where a context limit came from, in words. */
export function limitSource(source) {
  return {
    litellm: "the model's published limit", fallback_table: "a known limit for this model family", default: "assumed: the model is unknown",
    session_override: "this session's limit", profile_override: "the profile's limit",
  }[source] || String(source || "").replace(/_/g, " ");
}

/** Where a snapshot's effective limit came from: a session or profile override, else the model. */
export function snapshotLimitSource(snap) {
  if (snap.session_override && snap.effective_limit === snap.session_override) return limitSource("session_override");
  if (snap.profile_override && snap.effective_limit === snap.profile_override) return limitSource("profile_override");
  return limitSource(snap.model_limit_source);
}

/** One line about a snapshot: tokens used of the budget, the limit and where it came from, condensations. */
export function snapshotSummary(snap) {
  const condensed = snap.modules.filter((m) => m.condensed).length;
  const failed = snap.modules.filter((m) => m.status === "failed" || m.status === "timeout").map((m) => moduleLabel(m.module_id));
  const share = snap.available_budget ? snap.total_used / snap.available_budget : 0;
  return `${fmt(snap.total_used)} of ${fmt(snap.available_budget)} available tokens used (${pct(share)}) in a `
    + `${fmt(snap.effective_limit)}-token limit (${snapshotLimitSource(snap)}), ${fmt(snap.output_reserve)} kept for the reply; `
    + `${snap.modules.filter((m) => m.status === "ok").length} modules took part, ${condensed} condensed`
    + (failed.length ? `; failed: ${failed.join(", ")}` : "")
    + (snap.adjustments_fired?.length ? `; ${snap.adjustments_fired.length} rule${snap.adjustments_fired.length > 1 ? "s" : ""} fired` : "") + ".";
}

/** A rule as the service reports it (`small_window(32000) -> reduce tool_definitions by 30%`), in words. */
export function ruleText(raw) {
  const m = /^(\w+)(?:\(([^)]*)\))?\s*->\s*(\w+)\s+(\w+)(.*)$/.exec(raw);
  if (!m) return raw;
  const [, cond, arg, action, module, rest] = m;
  const when = {
    first_turn: "on the first turn", no_documents_attached: "with no documents attached", documents_attached: "with documents attached",
    long_conversation: `from turn ${arg}`, high_confidence_rag: `when the best RAG match scores at least ${arg}`,
    small_window: `when the limit is at most ${fmt(Number(arg))} tokens`, phase_is: `in the ${arg} phase`,
  }[cond] || `when ${cond.replace(/_/g, " ")}${arg ? ` (${arg})` : ""}`;
  const by = /by ([\d.]+%)/.exec(rest)?.[1];
  const to = /-> (\w+)/.exec(rest)?.[1];
  const what = {
    reduce: `reduce ${moduleLabel(module)}${by ? ` by ${by}` : ""}`,
    transfer: `give the share of ${moduleLabel(module)} to ${to ? moduleLabel(to) : "another module"}`,
    force_full: `give ${moduleLabel(module)} its full maximum`,
    condense: `condense ${moduleLabel(module)}`,
  }[action] || `${action.replace(/_/g, " ")} ${moduleLabel(module)}`;
  return `${what[0].toUpperCase()}${what.slice(1)} ${when}.`;
}

/** Utilisation class: under 50% is low, 50-80% is good, over 80% is tight. */
export function utilisationClass(u) {
  if (u > 0.8) return "util-high";
  if (u >= 0.5) return "util-mid";
  return "util-low";
}

const moduleNames = new Map();

/** Installed modules' display names, for moduleLabel; pages that show modules load them first. */
export async function loadModuleNames() {
  const { modules } = await get("/v1/context-window/modules");
  for (const m of modules) moduleNames.set(m.module_id, m.display_name);
  return modules;
}

export const isModule = (id) => moduleNames.has(id);

export function moduleLabel(id) {
  if (!id) return "no module";
  return moduleNames.get(id) || String(id).replace(/_/g, " ").replace(/^rag\b/, "RAG").replace(/^./, (c) => c.toUpperCase());
}

/** Disable every control of a viewer (the API refuses their writes; the page says so up front). */
export function lockForViewers(root = document) {
  if (isAdmin()) return;
  root.querySelectorAll(".admin-fieldset").forEach((fs) => { fs.disabled = true; });
  // A write form a viewer cannot use is not shown at all (its submit would only meet a 403).
  root.querySelectorAll("form.admin-only").forEach((f) => { f.hidden = true; f.querySelectorAll("input, select, textarea, button").forEach((c) => { c.disabled = true; }); });
  root.querySelectorAll(".admin-only").forEach((el) => {
    el.setAttribute("aria-disabled", "true");
    if ("disabled" in el) el.disabled = true;
    el.classList.add("disabled");
    el.title = "Needs an admin token";
    if (el.tagName === "A") el.removeAttribute("href");
  });
}

/** Who made a change, by name: `token:demo-admin#1` is the token named demo-admin. */
export const actorName = (actor) => /^token:(.+)#\d+$/.exec(actor || "")?.[1] || actor || "unknown";
