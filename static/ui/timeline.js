// The session's timeline: tokens per module across turns as a stacked area, with markers for condensations,
// rules fired and type versions; each turn's column links to its trace. And comparing two snapshots.
import { colourFor } from "./bars.js";
import { usd } from "./cost_view.js";
import { fmt, h, moduleLabel, ruleText } from "./lib.js";

const SVG = "http://www.w3.org/2000/svg";
const H = 240;
const PAD = { left: 56, right: 12, top: 34, bottom: 26 };

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, v);
  el.append(...children.filter(Boolean));
  return el;
}

/** A round axis top a little above ``peak``, with steps fine enough that the peak always fills over 60% of the chart
 * (1, 2, 5 alone left a 22% peak under a 50% top, the chart half empty). */
function niceTop(peak) {
  const p = Math.max(peak * 1.1, 1e-9);
  const unit = 10 ** Math.floor(Math.log10(p));
  return [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((m) => m * unit).find((v) => v >= p);
}

let scale = "usage";
let drawn = null; // the last drawing's arguments: redrawn at the new width when the window is resized
let resizeTimer;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => { if (drawn) timeline(...drawn); }, 150);
}); // "usage": tokens, axis fitted to what was used; "share": % of each turn's available budget

/** points: [{turn, href, snap, typeVersion}] oldest first. */
export function timeline(root, points, opts) {
  if (!points.length) {
    root.replaceChildren(h("p", { class: "muted" }, "No snapshots yet: run a turn to start the timeline."));
    return;
  }
  drawn = [root, points, opts];
  const { traceHref } = opts;
  // The drawing is as wide as its box, so axis text is 11 real pixels on a phone too (not a scaled-down 960).
  const W = Math.max(320, Math.round(root.clientWidth || 960));
  const ids = [...new Set(points.flatMap((p) => p.snap.modules.filter((m) => m.used > 0).map((m) => m.module_id)))];
  const share = scale === "share";
  const value = (p, tokens) => (share ? (100 * tokens) / Math.max(p.snap.available_budget, 1) : tokens);
  const peak = Math.max(...points.map((p) => value(p, p.snap.total_used)), share ? 1 : 10);
  const top = share ? Math.min(100, niceTop(peak)) : niceTop(peak);
  const x = (i) => PAD.left + (points.length === 1 ? (W - PAD.left - PAD.right) / 2 : (i * (W - PAD.left - PAD.right)) / (points.length - 1));
  const y = (v) => H - PAD.bottom - (Math.min(v, top) * (H - PAD.top - PAD.bottom)) / top;
  const used = (p, id) => value(p, p.snap.modules.find((m) => m.module_id === id)?.used || 0);
  const tick = (v) => (share ? `${Math.round(v * 10) / 10}%` : fmt(Math.round(v)));

  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "timeline-svg", role: "group",
    "aria-label": share ? "Share of the available budget used per module across turns" : "Tokens per module across turns",
    "data-scale": scale, "data-top": top });
  for (const t of [0, top / 2, top]) {
    svg.append(s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(t), y2: y(t), class: "grid-line" }),
      s("text", { x: PAD.left - 6, y: y(t) + 4, "text-anchor": "end", class: "axis" }, tick(t)));
  }
  // stacked areas, highest priority at the bottom (the order the window fills in)
  const base = points.map(() => 0);
  for (const id of ids) {
    const lower = [...base];
    points.forEach((p, i) => { base[i] += used(p, id); });
    const path = points.length === 1
      ? `M${x(0) - 8},${y(lower[0])} L${x(0) - 8},${y(base[0])} L${x(0) + 8},${y(base[0])} L${x(0) + 8},${y(lower[0])} Z`
      : `M${points.map((_, i) => `${x(i)},${y(base[i])}`).join(" L")} L${[...points.keys()].reverse().map((i) => `${x(i)},${y(lower[i])}`).join(" L")} Z`;
    svg.append(s("path", { d: path, fill: colourFor(id), class: "area", "data-module": id }, s("title", {}, moduleLabel(id))));
  }
  // the available budget: it holds for a whole turn and changes between turns, so it is drawn as steps
  if (!share) {
    const half = points.length > 1 ? (x(1) - x(0)) / 2 : 8;
    const steps = points.flatMap((p, i) => [[x(i) - (i ? half : 0), y(p.snap.available_budget)], [x(i) + (i < points.length - 1 ? half : 0), y(p.snap.available_budget)]]);
    svg.append(s("polyline", { points: steps.map(([a, b]) => `${a},${b}`).join(" "), class: "budget-line" },
      s("title", {}, `Available budget${top < Math.max(...points.map((p) => p.snap.available_budget)) ? " (above the top of the chart where flat on it)" : ""}`)));
  }
  // markers and clickable columns
  const step = points.length > 1 ? x(1) - x(0) : 40;
  points.forEach((p, i) => {
    const notes = [];
    if (p.snap.condensations?.length) {
      svg.append(s("path", { d: `M${x(i) - 5},${PAD.top - 20} l10,0 l-5,8 Z`, class: "mark-condensed" }));
      notes.push(`${p.snap.condensations.length} condensation${p.snap.condensations.length > 1 ? "s" : ""}`);
    }
    if (p.snap.adjustments_fired?.length) {
      svg.append(s("rect", { x: x(i) - 4, y: PAD.top - 10, width: 8, height: 8, transform: `rotate(45 ${x(i)} ${PAD.top - 6})`, class: "mark-rule" }));
      notes.push(`rules: ${p.snap.adjustments_fired.map(ruleText).join(" ")}`);
    }
    if (i > 0 && (p.typeVersion !== points[i - 1].typeVersion || p.snap.window_type_id !== points[i - 1].snap.window_type_id)) {
      svg.append(s("line", { x1: x(i) - step / 2, x2: x(i) - step / 2, y1: PAD.top - 24, y2: H - PAD.bottom, class: "mark-version" }),
        s("text", { x: x(i) - step / 2 + 3, y: PAD.top - 26, class: "axis" }, `${p.snap.window_type_id} v${p.typeVersion}`));
      notes.push(`type ${p.snap.window_type_name} version ${p.typeVersion} from here`);
    }
    const cost = callsOf(p).length ? `, ${usd(dollars(callsOf(p)))}` : "";
    const label = `Turn ${p.turn}: ${fmt(p.snap.total_used)} of ${fmt(p.snap.available_budget)} tokens${cost}${notes.length ? `; ${notes.join("; ")}` : ""}. Open its trace.`;
    const link = s("a", { href: traceHref(p.turn), "aria-label": label, class: "turn-column", "data-turn": p.turn },
      s("rect", { x: x(i) - Math.max(step, 8) / 2, y: PAD.top - 30, width: Math.max(step, 8), height: H - PAD.bottom - PAD.top + 30, class: "hit" }),
      s("title", {}, label));
    svg.append(link);
    if (points.length <= 24 || i % Math.ceil(points.length / 24) === 0) {
      svg.append(s("text", { x: x(i), y: H - 8, "text-anchor": "middle", class: "axis" }, String(p.turn)));
    }
  });
  const toggle = h("div", { class: "scale-toggle", role: "group", "aria-label": "Timeline scale" },
    ...[["usage", "Tokens used"], ["share", "Share of budget"]].map(([key, text]) => h("button", {
      type: "button", class: "link", "aria-pressed": String(scale === key), dataset: { scale: key },
      onclick: () => { scale = key; timeline(root, points, opts); },
    }, text)));
  const legend = h("ul", { class: "legend" },
    ids.map((id) => h("li", {}, h("span", { class: "swatch", style: { background: colourFor(id) } }), moduleLabel(id))),
    share ? null : h("li", {}, h("span", { class: "key-line" }), "Available budget"),
    h("li", {}, h("span", { class: "key key-condensed" }, "▼"), "Condensation"),
    h("li", {}, h("span", { class: "key key-rule" }, "◆"), "Rule fired"),
    h("li", {}, h("span", { class: "key key-version" }, "┆"), "New type or version"));
  root.replaceChildren(toggle, h("div", { class: "timeline-scroll", tabindex: "0", role: "region", "aria-label": "Timeline chart" }, svg), legend,
    h("p", { class: "small muted" }, "Turns run left to right; click a turn (or focus it and press Enter) to open its trace."), costLine(points));
}

/** What the drawn turns' model calls cost together (a turn's own dollars are in its column's label). */
function costLine(points) {
  const calls = points.flatMap(callsOf);
  if (!calls.length) return null;
  const unknown = calls.filter((c) => !c.cost).length;
  const known = unknown < calls.length;
  return h("p", { class: "small", dataset: { testid: "timeline-cost" } }, `Model calls of these turns: ${known ? usd(dollars(calls.filter((c) => c.cost))) : "price unknown"}`
    + (known && unknown ? `, besides ${unknown} at unknown prices` : "") + ".");
}

/** A turn's model calls (points may carry them all: a tool loop makes one per step), else its snapshot's. */
const callsOf = (p) => p.calls || (p.snap.model_call ? [p.snap.model_call] : []);
/** Their dollars; null (price unknown) when any is unpriced, never a partial sum read as the whole. */
const dollars = (calls) => (calls.every((c) => c.cost) ? calls.reduce((sum, c) => sum + c.cost.total_usd, 0) : null);

/** Two snapshots side by side: tokens per module and the difference. */
export function comparison(a, b, { labelA, labelB }) {
  const ids = [...new Set([...a.modules, ...b.modules].map((m) => m.module_id))];
  const used = (snap, id) => snap.modules.find((m) => m.module_id === id)?.used || 0;
  const signed = (n) => (n > 0 ? `+${fmt(n)}` : n < 0 ? `−${fmt(-n)}` : "0");
  const row = (name, va, vb) => h("tr", {}, h("th", { scope: "row" }, name), h("td", { class: "num" }, fmt(va)), h("td", { class: "num" }, fmt(vb)),
    h("td", { class: `num ${vb > va ? "up" : vb < va ? "down" : ""}` }, signed(vb - va)));
  return h("table", { class: "grid compare", dataset: { testid: "comparison" } },
    h("caption", {}, `${labelA} compared with ${labelB} (tokens)`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Module"), h("th", { scope: "col", class: "num" }, labelA),
      h("th", { scope: "col", class: "num" }, labelB), h("th", { scope: "col", class: "num" }, "Difference"))),
    h("tbody", {}, ids.filter((id) => used(a, id) || used(b, id)).map((id) => row(moduleLabel(id), used(a, id), used(b, id))),
      row("Total used", a.total_used, b.total_used), row("Available budget", a.available_budget, b.available_budget)));
}
