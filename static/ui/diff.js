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
  // Rules have no ids: the list is one leaf, so removing one rule is not "every later rule changed".
  if (path === "dynamic_adjustments") return out.set(path, value);
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
  for (const c of diff(before, after)) {
    if (skip.some((s) => c.path === s || c.path.startsWith(`${s}.`))) continue;
    const parts = c.path.split(".");
    if (parts[0] === "modules") out.push(moduleSentence(parts[1], parts.slice(2).join("."), c, label));
    else if (c.path === "condensation_order") {
      const list = (v) => (v && v.length ? v.map(label).join(", ") : "nothing");
      out.push(`Condensation order changed from ${list(c.before)} to ${list(c.after)}.`);
    } else if (c.path === "dynamic_adjustments") {
      out.push(...ruleChanges(c.before || [], c.after || [], label));
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

const WHEN = {
  first_turn: () => "on the first turn", no_documents_attached: () => "with no documents attached",
  documents_attached: () => "with documents attached", long_conversation: (c) => `from turn ${c.threshold}`,
  high_confidence_rag: (c) => `when the best RAG match scores at least ${c.threshold}`,
  small_window: (c) => `when the limit is at most ${Number(c.threshold).toLocaleString("en")} tokens`,
  phase_is: (c) => `in the ${c.phase} phase`,
};

/** A rule in words: "reduce Tool definitions by 30% when the limit is at most 32,000 tokens". */
export function ruleWords(rule, label) {
  if (!rule) return "";
  const c = rule.condition || {};
  const a = rule.action || {};
  const name = label(a.module || "");
  const what = {
    reduce: () => `reduce ${name} by ${a.by_pct}%`,
    transfer: () => `give the share of ${name} to ${label(a.to || "")}`,
    force_full: () => `give ${name} its full maximum`,
    condense: () => `condense ${name}${a.to_pct !== undefined ? ` to ${a.to_pct}%` : ""}${a.strategy ? ` (${a.strategy})` : ""}`,
  }[a.type]?.() || `${String(a.type || "").replace(/_/g, " ")} ${name}`;
  const when = WHEN[c.type]?.(c) || `when ${String(c.type || "").replace(/_/g, " ")}`;
  return `${what} ${when}`;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Rule list changes as sentences: an edit in place is one before/after sentence; removals and additions are
 * found by content, so removing rule 2 of 3 is one "removed" sentence. */
function ruleChanges(before, after, label) {
  if (before.length === after.length) {
    const edits = before.map((was, i) => [was, after[i], i]).filter(([was, now]) => !same(was, now));
    return edits.map(([was, now, i]) => `Rule ${i + 1} changed from “${ruleWords(was, label)}” to “${ruleWords(now, label)}”.`);
  }
  const unmatched = [...after.keys()];
  const out = [];
  before.forEach((was, i) => {
    const at = unmatched.findIndex((j) => same(after[j], was));
    if (at >= 0) unmatched.splice(at, 1);
    else out.push(`Rule ${i + 1} removed: ${ruleWords(was, label)}.`);
  });
  for (const j of unmatched) out.push(`Rule ${j + 1} added: ${ruleWords(after[j], label)}.`);
  return out;
}
