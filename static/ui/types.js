// The types page: one card per context window type, with its composition, bindings and actions.
import { activeSlots, compositionBar } from "./bars.js";
import { api, get, h, isAdmin, loadModuleNames, lockForViewers, moduleLabel, notify, reportError } from "./lib.js";

const root = document.getElementById("type-cards");

function deleteBlocker(type, bound) {
  if (type.is_default) return "The default type cannot be deleted: make another type the default first.";
  if (bound.length) return `Bound to ${bound.join(", ")}: bind ${bound.length > 1 ? "them" : "it"} to another type on the Profiles page before deleting.`;
  return "";
}

async function remove(type) {
  if (!confirm(`Delete the type “${type.name}”? Its version history is deleted with it (the audit log keeps a copy).`)) return;
  try {
    await api("DELETE", `/v1/context-window-types/${encodeURIComponent(type.id)}`, { headers: { "If-Match": type.etag } });
    notify(`Deleted ${type.name}.`);
    await load();
  } catch (err) {
    reportError(err, `${type.name} was not deleted`);
    await load();
  }
}

function card(type, bound, off) {
  const total = Object.keys(type.modules).length;
  const slots = activeSlots(type);
  const taking = slots.filter((s) => !off.has(s.id));
  const switchedOff = slots.filter((s) => off.has(s.id)).map((s) => moduleLabel(s.id));
  const blocker = deleteBlocker(type, bound);
  const bar = h("div", { class: "composition" });
  compositionBar(bar, { slots: taking, reservePct: type.output_reserve_pct });
  const why = blocker ? h("p", { class: "hint", id: `why-${type.id}` }, blocker) : null;
  return h("article", { class: "card", dataset: { typeId: type.id }, "aria-labelledby": `t-${type.id}` },
    h("header", {},
      h("h2", { id: `t-${type.id}` }, h("a", { href: `/ui/types/${encodeURIComponent(type.id)}` }, type.name)),
      type.is_default ? h("span", { class: "badge default" }, "Default") : null),
    h("p", { class: "muted" }, `${type.id} · v${type.version}`),
    type.description ? h("p", {}, type.description) : null,
    h("dl", { class: "facts compact" },
      h("div", {}, h("dt", {}, "Modules"), h("dd", {}, `${taking.length} active of ${total}`)),
      h("div", {}, h("dt", {}, "Output reserve"), h("dd", {}, `${type.output_reserve_pct}%`)),
      h("div", {}, h("dt", {}, "Rules"), h("dd", {}, String(type.dynamic_adjustments.length))),
      h("div", {}, h("dt", {}, "Profiles"), h("dd", {}, bound.length ? bound.join(", ") : "none"))),
    switchedOff.length ? h("p", { class: "warning small" }, `Switched off for all types on the Modules page: ${switchedOff.join(", ")}. `
      + "The bar leaves them out.") : null,
    bar,
    h("div", { class: "actions" },
      h("a", { class: "button", href: `/ui/types/${encodeURIComponent(type.id)}` }, isAdmin() ? "Edit" : "View"),
      h("a", { class: "button admin-only", href: `/ui/types/new?from=${encodeURIComponent(type.id)}` }, "Duplicate"),
      h("button", {
        type: "button", class: "danger admin-only", disabled: Boolean(blocker),
        "aria-describedby": blocker ? `why-${type.id}` : null, onclick: () => remove(type),
      }, "Delete")),
    why);
}

async function load() {
  try {
    const [{ types }, { profiles }, modules] = await Promise.all([get("/v1/context-window-types"), get("/v1/profiles"), loadModuleNames()]);
    const bound = (id) => profiles.filter((p) => p.context_window_type_id === id).map((p) => p.id);
    const off = new Set(modules.filter((m) => !m.active).map((m) => m.module_id));
    root.replaceChildren(...(types.length ? types.map((t) => card(t, bound(t.id), off)) : [h("p", { class: "muted" }, "No types yet.")]));
    root.setAttribute("aria-busy", "false");
    lockForViewers(root);
  } catch (err) {
    reportError(err, "Could not load the types");
  }
}

load();
