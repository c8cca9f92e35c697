// Stacked bars: a type's target composition and a snapshot's actual use, on the same scale (the context limit).
import { fmt, h, moduleLabel } from "./lib.js";

const PALETTE = {
  system_prompt: "#1f4e79", tool_definitions: "#a84f00", conversation_history: "#2e6b30",
  rag_context: "#6a1b9a", knowledge_context: "#00707a", plan_hydration: "#ad1457",
  document_context: "#5d4037", component_instructions: "#455a64", workflow_history: "#7a6000",
};
const EXTRA = ["#3949ab", "#c62828", "#00695c", "#8e24aa", "#4e342e", "#37474f"];

export function colourFor(id) {
  if (PALETTE[id]) return PALETTE[id];
  let hash = 0;
  for (const c of id) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return EXTRA[hash % EXTRA.length];
}

const round = (x) => Math.round(x * 10) / 10;

/** segments: [{key, label, width (percent of the bar), colour?, cls?, title}] */
function stack(el, { label, segments, summary, state = "ok", testid }) {
  const bar = h("div", { class: `stack state-${state}`, role: "img", "aria-label": `${label}. ${summary}` },
    segments.filter((s) => s.width > 0).map((s) => h("span", {
      class: `seg ${s.cls || ""}`, title: s.title, dataset: { key: s.key },
      style: { width: `${Math.min(100, s.width)}%`, background: s.colour || "" },
    })));
  const legend = h("ul", { class: "legend", "aria-hidden": "true" },
    segments.filter((s) => s.legend !== false).map((s) => h("li", {},
      h("span", { class: `swatch ${s.cls || ""}`, style: { background: s.colour || "" } }), s.title)));
  el.replaceChildren(bar, h("p", { class: `bar-summary state-${state}`, dataset: { testid } }, summary), legend);
}

/**
 * A type's targets as the backend uses them: each target is a share of the *available* budget, which is the
 * context limit less the output reserve. So the bar is the whole context limit: the reserve on the right, and
 * the targets scaled into the rest. Targets adding up to more than 100% are over budget (the service scales
 * them down); less leaves part of the budget unassigned.
 */
export function compositionBar(el, { slots, reservePct }) {
  const total = round(slots.reduce((sum, s) => sum + s.pct, 0));
  const room = 100 - reservePct;
  const fit = total > 100 ? 100 / total : 1;
  // One base for the whole bar and its legend: shares of the context limit (targets are shares of the budget).
  const ofLimit = (x) => { const v = round(x); return v > 0 && v < 1 ? "<1%" : `${v}%`; };
  const segments = slots.map((s) => ({
    key: s.id, colour: colourFor(s.id), width: (s.pct * fit * room) / 100,
    title: `${moduleLabel(s.id)} ${ofLimit((s.pct * fit * room) / 100)} (target ${round(s.pct)}%)`,
  }));
  if (total < 100) segments.push({ key: "unassigned", cls: "free", width: ((100 - total) * room) / 100, title: `Unassigned ${ofLimit(((100 - total) * room) / 100)}` });
  segments.push({ key: "reserve", cls: "reserve", width: reservePct, title: `Output reserve ${ofLimit(reservePct)}` });
  let state = "ok";
  let summary = `Targets add up to ${total}% of the available budget (the ${round(room)}% of the context limit left after the ${round(reservePct)}% output reserve). `
    + "The bar and its legend show shares of the whole context limit.";
  if (total > 100) {
    state = "over";
    summary = `Over budget: targets add up to ${total}% of the available budget, ${round(total - 100)} points too many. `
      + "Saving is refused until they fit; lower some targets.";
  } else if (total < 100) {
    state = "under";
    summary += ` ${round(100 - total)}% is not assigned to any module.`;
  }
  el.dataset.total = String(total);
  el.dataset.state = state;
  stack(el, { label: "Target composition", segments, summary, state, testid: "composition-summary" });
}

/** A snapshot's use on the same scale: modules' tokens, the query, what is left, and the output reserve. */
export function usageBar(el, snap, { title } = {}) {
  if (!snap) {
    el.replaceChildren(h("p", { class: "muted" }, "No snapshot yet: run a turn to see the actual use."));
    return;
  }
  const limit = snap.effective_limit || 1;
  const w = (tokens) => (tokens * 100) / limit;
  const segments = snap.modules.filter((m) => m.used > 0).map((m) => ({
    key: m.module_id, colour: colourFor(m.module_id), width: w(m.used), title: `${moduleLabel(m.module_id)} ${fmt(m.used)}`,
  }));
  const moduleTokens = snap.modules.reduce((sum, m) => sum + m.used, 0);
  const other = snap.total_used - moduleTokens;
  segments.push({ key: "query", cls: "query", width: w(other), title: `Query and reply priming ${fmt(other)}` });
  segments.push({ key: "free", cls: "free", width: w(snap.available_budget - snap.total_used), title: `Unused ${fmt(snap.available_budget - snap.total_used)}` });
  segments.push({ key: "reserve", cls: "reserve", width: w(snap.output_reserve), title: `Output reserve ${fmt(snap.output_reserve)}` });
  const share = snap.available_budget ? (snap.total_used * 100) / snap.available_budget : 0;
  const summary = `${title || `Turn ${snap.turn}`}: ${fmt(snap.total_used)} of ${fmt(snap.available_budget)} available tokens used (${share > 0 && share < 1 ? "<1" : share.toFixed(0)}%); `
    + `context limit ${fmt(snap.effective_limit)}, output reserve ${fmt(snap.output_reserve)}.`;
  stack(el, { label: "Actual use", segments, summary, state: "ok", testid: "usage-summary" });
}

/** The slots of a type that take part, highest priority first (the order the backend fills them in). */
export function activeSlots(type) {
  return Object.entries(type.modules).filter(([, s]) => s.active)
    .sort(([a, x], [b, y]) => (y.priority - x.priority) || a.localeCompare(b))
    .map(([id, s]) => ({ id, pct: Number(s.target_pct) || 0 }));
}
