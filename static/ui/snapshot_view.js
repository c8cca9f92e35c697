// How a snapshot's modules are shown: allocation against use, utilisation coloured at 50% and 80%, and badges.
import { fmt, h, isModule, limitSource, moduleLabel, pct, plain, ruleText, utilisationClass } from "./lib.js";

/** The rules that fired for this module this turn (as the service reports them). */
const rulesFor = (m, snap) => (snap.adjustments_fired || []).filter((r) => new RegExp(`\\b${m.module_id}\\b`).test(r));

/** Why a module used what it did: the module's own reason, the rules that changed its share, condensing, surplus. */
export function whyText(m, snap) {
  const out = [];
  const reason = m.metadata?.reason || m.reason;
  if (reason) out.push(`${plain(String(reason)).replace(/^./, (c) => c.toUpperCase()).replace(/\.?$/, ".")}`);
  else if (m.status === "ok" && !m.used) out.push(m.allocated ? "It had nothing to add this turn." : "It was given no tokens this turn.");
  for (const r of rulesFor(m, snap)) out.push(`Rule: ${ruleText(r)}`);
  if (m.condensed) out.push(`Condensed to fit its ${fmt(m.allocated)}-token share${m.strategy ? ` (${m.strategy.replace(/[_+]/g, " ")})` : ""}.`);
  if (m.surplus_received) out.push(`Received ${fmt(m.surplus_received)} unused tokens from other modules.`);
  return out.join(" ");
}

export function badges(m, snap) {
  const fired = rulesFor(m, snap).length > 0;
  const out = [];
  if (m.status === "failed" || m.status === "timeout") out.push(["failed", m.status === "timeout" ? "Timed out" : "Failed"]);
  if (m.status === "skipped") out.push(["skipped", "Skipped"]);
  if (m.condensed) out.push(["condensed", `Condensed${m.strategy ? ` (${m.strategy})` : ""}`]);
  if (fired) out.push(["rule", "Rule fired"]);
  if (m.surplus_received) out.push(["received", `Surplus +${fmt(m.surplus_received)}`]);
  if (m.surplus_donated) out.push(["donated", `Donated −${fmt(m.surplus_donated)}`]);
  return h("span", { class: "badges" }, out.map(([cls, text]) => h("span", { class: `badge b-${cls}` }, text)));
}

function meter(m) {
  const u = m.utilisation ?? (m.allocated ? m.used / m.allocated : 0);
  return h("span", { class: `meter ${utilisationClass(u)}` },
    h("span", { class: "meter-track", "aria-hidden": "true" },
      h("span", { class: "meter-fill", style: { width: `${Math.min(100, u * 100)}%` } })),
    h("span", { class: "meter-text" }, m.allocated ? `${pct(u)} used` : "no allocation"));
}

export function moduleCard(m, snap) {
  return h("article", { class: `card module-card status-${m.status}`, dataset: { module: m.module_id } },
    h("h3", {}, moduleLabel(m.module_id)),
    h("dl", { class: "facts compact" },
      h("div", {}, h("dt", {}, "Allocated"), h("dd", {}, fmt(m.allocated))),
      h("div", {}, h("dt", {}, "Used"), h("dd", { class: "used" }, fmt(m.used))),
      h("div", {}, h("dt", {}, "Target"), h("dd", {}, `${Number(m.target_pct).toFixed(1)}%`))),
    meter(m),
    badges(m, snap),
    whyText(m, snap) ? h("p", { class: "small why", dataset: { testid: "why" } }, whyText(m, snap)) : null);
}

export function moduleTable(snap) {
  return h("table", { class: "grid" },
    h("caption", { class: "sr-only" }, "Allocation and use per module"),
    h("thead", {}, h("tr", {}, ["Module", "Target", "Allocated", "Used", "Utilisation", "Notes"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, snap.modules.map((m) => h("tr", { dataset: { module: m.module_id } },
      h("th", { scope: "row" }, moduleLabel(m.module_id)),
      h("td", {}, `${Number(m.target_pct).toFixed(1)}%`),
      h("td", { class: "num" }, fmt(m.allocated)),
      h("td", { class: "num" }, fmt(m.used)),
      h("td", {}, meter(m)),
      h("td", {}, badges(m, snap), whyText(m, snap) ? h("span", { class: "small why" }, ` ${whyText(m, snap)}`) : null)))));
}

const STEP = { "pass 1": "Taking part", "pass 2": "Rules", "pass 3": "Allocation", "pass 3b": "Surplus", signals: "Signals" };

/** A decision-log line in words: the step named, a rule as a sentence, modules by name, arrows as arrows. */
export function decisionText(line) {
  let text = plain(line);
  let head = "";
  const step = /^(pass \w+|signals): (.*)$/.exec(text);
  if (step) [head, text] = [`${STEP[step[1]] || step[1]}: `, step[2]];
  const rule = /^(\w+(?:\([^)]*\))? -> \w+ \w+(?: by [\d.]+%| -> \w+)?)( fired, but .*)?$/.exec(text);
  if (rule) text = `${ruleText(rule[1]).replace(/\.$/, "")}${rule[2] ? `: it${rule[2]}` : ""}.`;
  text = text.replace(/\((litellm|fallback_table|default|session_override|profile_override)\)/g, (_, src) => `(${limitSource(src)})`);
  text = text.replace(/ -> /g, " → ").replace(/\b[a-z]+(?:_[a-z]+)+\b/g, (id) => (isModule(id) ? moduleLabel(id) : id));
  return head + text;
}

const FEATURE_BY = { upstream: "sent on to the provider", tda: "done by tda", litellm: "not sent by litellm" };

export function eventLists(snap) {
  const list = (title, items, render) => h("div", {}, h("h3", {}, title),
    items.length ? h("ul", { class: "log" }, items.map((i) => h("li", {}, render(i)))) : h("p", { class: "muted" }, "None."));
  const features = snap.provider_features || []; // what the client asked of its provider's context management
  return h("div", { class: "two-col" },
    list("Condensations", snap.condensations || [], (c) =>
      `${moduleLabel(c.module_id)}: ${fmt(c.before)} → ${fmt(c.after)} tokens (${c.strategy.replace(/[_+]/g, " ")}, ${c.reason})`),
    list("Rules fired", snap.adjustments_fired || [], ruleText),
    ...(features.length ? [list("Provider context features", features, (f) => `${f.field} (${FEATURE_BY[f.by] || f.by}): ${f.note}`)] : []));
}
