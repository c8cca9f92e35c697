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

export function show(value) {
  if (value === undefined) return "(none)";
  if (Array.isArray(value)) return value.length ? value.join(" → ") : "(empty)";
  return typeof value === "string" ? `“${value}”` : JSON.stringify(value);
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
