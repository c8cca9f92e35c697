// Path-level differences between two versions of a type: what changed, and reapplying changes on top of another.

const META = new Set(["version", "updated_at", "etag"]);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

export const clone = (v) => JSON.parse(JSON.stringify(v));

/** A type without the bookkeeping the server adds (version, updated_at, etag). */
export function typeBody(data) {
  return Object.fromEntries(Object.entries(data).filter(([k]) => !META.has(k)));
}

/** Leaves by dotted path; lists of plain values (like the condensation order) are one leaf. */
function flatten(value, path = "", out = new Map()) {
  const plainList = Array.isArray(value) && value.every((v) => !isObject(v) && !Array.isArray(v));
  if (isObject(value) || (Array.isArray(value) && !plainList)) {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    if (!entries.length) out.set(path, value);
    for (const [k, v] of entries) flatten(v, path ? `${path}.${k}` : k, out);
  } else {
    out.set(path, value);
  }
  return out;
}

/** [{path, before, after}] for every leaf that differs; undefined means absent. */
export function diff(before, after) {
  const a = flatten(before);
  const b = flatten(after);
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  return paths
    .filter((p) => JSON.stringify(a.get(p)) !== JSON.stringify(b.get(p)))
    .map((p) => ({ path: p, before: a.get(p), after: b.get(p) }));
}

/** Set each change's ``after`` at its path in ``target`` (a copy); used to reapply my edits on their version. */
export function applyChanges(target, changes) {
  const out = clone(target);
  for (const { path, after } of changes) {
    const keys = path.split(".");
    let node = out;
    for (const [i, key] of keys.slice(0, -1).entries()) {
      if (!isObject(node[key]) && !Array.isArray(node[key])) node[key] = /^\d+$/.test(keys[i + 1]) ? [] : {};
      node = node[key];
    }
    const last = keys[keys.length - 1];
    if (after === undefined) {
      if (Array.isArray(node)) node.splice(Number(last), 1); else delete node[last];
    } else {
      node[last] = clone(after);
    }
  }
  if (Array.isArray(out.dynamic_adjustments)) out.dynamic_adjustments = out.dynamic_adjustments.filter(Boolean);
  return out;
}

// --- differences in sentences ----------------------------------------------------------------------

const FIELD = { target_pct: "target", min_pct: "minimum", max_pct: "maximum", priority: "priority" };
const TOP = {
  id: "Id", name: "Name", description: "Description", output_reserve_pct: "Output reserve",
  "distillation.max_rows": "Distillation: largest result kept whole (rows)", "distillation.max_chars": "Distillation: largest result kept whole (characters)",
};
const RULE_FIELD = {
  "condition.type": "condition", "condition.threshold": "threshold", "condition.phase": "phase",
  "action.type": "action", "action.module": "module", "action.by_pct": "reduction", "action.to": "receiving module",
  "action.strategy": "strategy", "action.to_pct": "condensed size",
};

const quoted = (v) => (v === undefined || v === null || v === "" ? "empty" : typeof v === "string" ? `“${v}”` : String(v));

/** The changes from ``before`` to ``after`` as sentences, naming modules by ``label(id)``. */
export function describeChanges(before, after, label, { skip = [] } = {}) {
  const out = [];
  const rulesSeen = new Set();
  for (const c of diff(before, after)) {
    if (skip.some((s) => c.path === s || c.path.startsWith(`${s}.`))) continue;
    const parts = c.path.split(".");
    if (parts[0] === "modules") out.push(moduleSentence(parts[1], parts.slice(2).join("."), c, label));
    else if (c.path === "condensation_order") {
      const list = (v) => (v && v.length ? v.map(label).join(", ") : "nothing");
      out.push(`Condensation order changed from ${list(c.before)} to ${list(c.after)}.`);
    } else if (parts[0] === "dynamic_adjustments") {
      const i = Number(parts[1]);
      const was = before.dynamic_adjustments?.[i];
      const now = after.dynamic_adjustments?.[i];
      if (!was || !now) {
        if (!rulesSeen.has(i)) out.push(`Rule ${i + 1} ${was ? "removed" : "added"}: ${ruleWords(was || now, label)}.`);
        rulesSeen.add(i);
        continue;
      }
      const field = RULE_FIELD[parts.slice(2).join(".")] || parts.slice(2).join(" ").replace(/_/g, " ");
      const show = (v) => (parts.at(-1) === "module" || parts.at(-1) === "to" ? label(v) : quoted(v));
      out.push(`Rule ${i + 1}: ${field} changed from ${show(c.before)} to ${show(c.after)}.`);
    } else if (c.path === "is_default") {
      out.push(c.after ? "Made the default type." : "No longer the default type.");
    } else if (c.path === "output_reserve_pct") {
      out.push(`Output reserve changed from ${c.before}% to ${c.after}% of the context limit.`);
    } else {
      out.push(`${TOP[c.path] || c.path.replace(/[._]/g, " ")} changed from ${quoted(c.before)} to ${quoted(c.after)}.`);
    }
  }
  return out;
}

function moduleSentence(id, field, c, label) {
  const name = label(id);
  if (field === "active") {
    if (c.before === undefined) return `${name} added to the type${c.after ? " and switched on" : ", switched off"}.`;
    if (c.after === undefined) return `${name} removed from the type.`;
    return `${name} switched ${c.after ? "on" : "off"}.`;
  }
  const word = FIELD[field] || field.replace(/^config\./, "setting ").replace(/_/g, " ");
  const value = (v) => (field.endsWith("_pct") ? `${v}%` : quoted(v));
  if (c.before === undefined) return `${name}: ${word} set to ${value(c.after)}.`;
  if (c.after === undefined) return `${name}: ${word} ${value(c.before)} dropped.`;
  return `${name}: ${word} changed from ${value(c.before)} to ${value(c.after)}.`;
}

function ruleWords(rule, label) {
  if (!rule) return "";
  const c = rule.condition || {};
  const a = rule.action || {};
  const when = c.type === "phase_is" ? `phase is ${c.phase}` : `${(c.type || "").replace(/_/g, " ")}${c.threshold !== undefined ? ` (${c.threshold})` : ""}`;
  return `when ${when}, ${(a.type || "").replace(/_/g, " ")} ${label(a.module || "")}`;
}
