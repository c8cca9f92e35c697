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

export async function api(method, path, { body, headers = {} } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  if (!["GET", "HEAD"].includes(method)) init.headers["X-CSRF-Token"] = csrf();
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
  if (res.status === 401) {
    location.assign(`/ui/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return { data, etag: res.headers.get("ETag"), status: res.status };
}

export const get = async (path) => (await api("GET", path)).data;

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

export const isAdmin = () => document.body.dataset.role === "admin";

/** Show (or with no message, clear) an error on one input: the text in its error slot, aria-invalid on it. */
export function fieldError(input, slot, message = "") {
  slot.textContent = message;
  if (message) input.setAttribute("aria-invalid", "true");
  else input.removeAttribute("aria-invalid");
}

/** The message to show on a field for an API error: its field messages, else the error's own. */
export const errorText = (err) => (err.fieldErrors || []).map((e) => e.msg.replace(/^Value error, /, "")).join("; ") || err.message;

let toastTimer;
/** A short message in the polite live region; errors stay until the next message. */
export function notify(message, kind = "ok") {
  const toast = document.getElementById("toast");
  if (!toast) return;
  toast.textContent = message;
  toast.dataset.kind = kind;
  toast.classList.add("show");
  clearTimeout(toastTimer);
  if (kind !== "error") toastTimer = setTimeout(() => toast.classList.remove("show"), 4000);
}

export function reportError(err, what) {
  notify(`${what}: ${err.message}`, "error");
}

export const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
export const pct = (x, digits = 0) => `${(x * 100).toFixed(digits)}%`;

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

export function moduleLabel(id) {
  return moduleNames.get(id) || id.replace(/_/g, " ").replace(/^rag\b/, "RAG").replace(/^./, (c) => c.toUpperCase());
}

/** Disable every control of a viewer (the API refuses their writes; the page says so up front). */
export function lockForViewers(root = document) {
  if (isAdmin()) return;
  root.querySelectorAll(".admin-fieldset").forEach((fs) => { fs.disabled = true; });
  root.querySelectorAll(".admin-only").forEach((el) => {
    el.setAttribute("aria-disabled", "true");
    if ("disabled" in el) el.disabled = true;
    el.classList.add("disabled");
    el.title = "Needs an admin token";
    if (el.tagName === "A") el.removeAttribute("href");
  });
}
