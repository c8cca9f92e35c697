// Two windows' messages side by side: aligned by content (the longest common run of whole messages), identical
// stretches folded, and where a message changed, the words that differ marked. Used by the compare page and the
// what-if. Messages are chat messages; the trace adds module_id and tokens, which are shown when present.
import { colourFor } from "./bars.js";
import { fmt, h, moduleLabel } from "./lib.js";

const messageKey = (m) => JSON.stringify([m.role, m.name || "", m.content ?? "", m.tool_calls || null, m.tool_call_id || ""]);

/** Lengths of the longest common subsequences of a[i:] and b[j:], as a flat table ((n+1) x (m+1)). */
function lcsTable(a, b, equal) {
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] = equal(a[i], b[j]) ? table[(i + 1) * width + j + 1] + 1
        : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  return { table, width };
}

/** [["same", i, j] | ["a", i] | ["b", j]] in order: the common start and end first (windows share a stable
 * prefix), then a longest common subsequence of the middle; null when the middle's table would exceed maxCells. */
function lcsPath(a, b, equal, maxCells) {
  let start = 0;
  while (start < a.length && start < b.length && equal(a[start], b[start])) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && equal(a[a.length - 1 - end], b[b.length - 1 - end])) end++;
  const midA = a.slice(start, a.length - end);
  const midB = b.slice(start, b.length - end);
  if ((midA.length + 1) * (midB.length + 1) > maxCells) return null;
  const middle = middlePath(midA, midB, equal);
  const shift = ([kind, i, j]) => (kind === "same" ? [kind, i + start, j + start] : [kind, i + start]);
  return [...Array.from({ length: start }, (_, i) => ["same", i, i]), ...middle.map(shift),
    ...Array.from({ length: end }, (_, k) => ["same", a.length - end + k, b.length - end + k])];
}

function middlePath(a, b, equal) {
  const { table, width } = lcsTable(a, b, equal);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && equal(a[i], b[j])) out.push(["same", i++, j++]);
    else if (j >= b.length || (i < a.length && table[(i + 1) * width + j] >= table[i * width + j + 1])) out.push(["a", i++]);
    else out.push(["b", j++]);
  }
  return out;
}

/** Rows of the side-by-side view: {kind: "same" | "changed" | "removed" | "added", a, b}. Between two identical
 * messages, the messages only one side has are paired in order as "changed" (same role) so an edit reads as one. */
export function alignMessages(a, b) {
  const keysA = a.map(messageKey);
  const keysB = b.map(messageKey);
  const rows = [];
  let gapA = [];
  let gapB = [];
  const flush = () => {
    while (gapA.length || gapB.length) {
      const x = gapA[0];
      const y = gapB[0];
      if (x && y && x.role === y.role) rows.push({ kind: "changed", a: gapA.shift(), b: gapB.shift() });
      else if (x && (!y || gapA.length >= gapB.length)) rows.push({ kind: "removed", a: gapA.shift() });
      else rows.push({ kind: "added", b: gapB.shift() });
    }
  };
  const unmatched = () => [...keysA.map((_, i) => ["a", i]), ...keysB.map((_, j) => ["b", j])];
  for (const [kind, at, atB] of lcsPath(keysA, keysB, (x, y) => x === y, 4_000_000) ?? unmatched()) {
    if (kind === "same") {
      flush();
      rows.push({ kind: "same", a: a[at], b: b[atB] });
    } else if (kind === "a") gapA.push(a[at]);
    else gapB.push(b[at]); // a "b" step carries its index in b first
  }
  flush();
  return pairByModule(rows);
}

/** A module's message that changed and moved (another message now sits between) is one "changed" row where the
 * new one is, not a removal and an addition: the trace names each message's module. */
function pairByModule(rows) {
  const owner = (m) => (m && m.module_id && m.module_id !== "query" ? `${m.module_id} ${m.role}` : null);
  const removed = new Map();
  for (const r of rows) if (r.kind === "removed" && owner(r.a) && !removed.has(owner(r.a))) removed.set(owner(r.a), r);
  const out = [];
  const taken = new Set();
  for (const r of rows) {
    const partner = r.kind === "added" ? removed.get(owner(r.b)) : undefined;
    if (partner && !taken.has(partner)) {
      taken.add(partner);
      out.push({ kind: "changed", a: partner.a, b: r.b, moved: true });
    } else out.push(r);
  }
  return out.filter((r) => !taken.has(r));
}

const MAX_WORD_CELLS = 1_000_000;
/** A changed text as spans, the words the other side lacks marked (<del> on the left, <ins> on the right);
 * texts too long to compare word by word are shown whole. */
function markedText(text, other, tag) {
  const words = text.split(/(\s+)/);
  const otherWords = other.split(/(\s+)/);
  const path = lcsPath(words, otherWords, (x, y) => x === y, MAX_WORD_CELLS);
  if (!path) return [h("span", { class: "wd-note" }, "(too long to mark word by word)\n"), text];
  const out = [];
  for (const [kind, i] of path) {
    if (kind === "same") out.push(words[i]);
    else if (kind === "a") out.push(/^\s+$/.test(words[i]) ? words[i] : h(tag, {}, words[i]));
  }
  return out;
}

const LABEL = { changed: "Changed", removed: "Only in", added: "Only in", same: "Same" };

function cell(m, { side, other, kind, label }) {
  if (!m) return h("div", { class: "wd-cell wd-empty", "aria-hidden": "true" });
  const text = typeof m.content === "string" ? m.content : m.content == null ? "" : JSON.stringify(m.content);
  const otherText = other && typeof other.content === "string" ? other.content : "";
  const body = kind === "changed" ? markedText(text, otherText, side === "a" ? "del" : "ins") : [text];
  const colour = m.module_id && m.module_id !== "query" ? colourFor(m.module_id) : "#6b7480";
  return h("div", { class: "wd-cell", style: { borderLeftColor: colour } },
    h("div", { class: "message-head" },
      h("span", { class: "wd-side" }, `${label}: `),
      h("strong", {}, `${m.role}${m.name ? ` (${m.name})` : ""}`),
      m.module_id !== undefined ? h("span", { class: "muted small" }, ` from ${m.module_id === "query" ? "Query" : m.module_id ? moduleLabel(m.module_id) : "Unattributed"}`) : null,
      m.tokens !== undefined ? h("span", { class: "tokens-badge" }, `${fmt(m.tokens)} tokens`) : null),
    text ? h("pre", { class: "message-text", tabindex: "0", "aria-label": `${label}: ${m.role} message text` }, body)
      : h("p", { class: "muted small" }, m.tool_calls ? `calls ${m.tool_calls.map((c) => c.function?.name).join(", ")}` : "(no text)"));
}

function row(r, labels) {
  const status = r.kind === "same" ? "Same" : r.kind === "changed" ? (r.moved ? "Changed and moved" : "Changed") : `${LABEL[r.kind]} ${r.kind === "removed" ? labels.a : labels.b}`;
  return h("li", { class: `wd-row wd-${r.kind}`, dataset: { kind: r.kind } },
    h("span", { class: `wd-status badge wd-badge-${r.kind}` }, status),
    h("div", { class: "wd-cells" },
      cell(r.a, { side: "a", other: r.b, kind: r.kind, label: labels.a }),
      cell(r.b, { side: "b", other: r.a, kind: r.kind, label: labels.b })));
}

const FOLD_AT = 3;

/** The side-by-side view of two message lists; runs of FOLD_AT or more identical messages are folded. */
export function windowDiff(a, b, labels) {
  const rows = alignMessages(a, b);
  const counts = { same: 0, changed: 0, removed: 0, added: 0 };
  for (const r of rows) counts[r.kind] += 1;
  const items = [];
  for (let i = 0; i < rows.length;) {
    let end = i;
    while (end < rows.length && rows[end].kind === "same") end++;
    if (end - i >= FOLD_AT) {
      const run = rows.slice(i, end);
      const tokens = run.reduce((n, r) => n + (r.a.tokens || 0), 0);
      items.push(h("li", { class: "wd-fold" }, h("details", {},
        h("summary", {}, `${run.length} identical messages${tokens ? ` (${fmt(tokens)} tokens)` : ""}`),
        h("ol", { class: "wd-list" }, run.map((r) => row(r, labels))))));
      i = end;
    } else if (end > i) {
      items.push(...rows.slice(i, end).map((r) => row(r, labels)));
      i = end;
    } else {
      items.push(row(rows[i], labels));
      i += 1;
    }
  }
  const summary = counts.changed + counts.removed + counts.added
    ? `${counts.changed} changed, ${counts.removed} only in ${labels.a}, ${counts.added} only in ${labels.b}, ${counts.same} the same.`
    : `All ${counts.same} messages are the same.`;
  return h("div", { class: "window-diff", dataset: { testid: "window-diff" } },
    h("p", { class: "bar-summary", dataset: { testid: "window-diff-summary" } }, summary),
    h("div", { class: "wd-heads", "aria-hidden": "true" }, h("strong", {}, labels.a), h("strong", {}, labels.b)),
    h("ol", { class: "wd-list" }, items));
}
