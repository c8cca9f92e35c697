// Metrics per version of a type (GET .../metrics): a chart of one measure by day, a bar per version, and the table
// of every measure per version, so the effect of a change shows after it ships.
import { usd } from "./cost_view.js";
import { fmt, get, h, pct } from "./lib.js";

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#1f4e79", "#2e6b30", "#ad1457", "#7a6000", "#4a1d8c", "#455a64"];
const H = 200;
const PAD = { left: 64, right: 8, top: 12, bottom: 28 };

/** The measures the chart can show: a name, and the figure of a version or a day (null: not known). */
const MEASURES = {
  tokens: ["Tokens in per window", (f) => f.tokens_in / f.windows, (x) => fmt(Math.round(x))],
  cost: ["Cost per turn", (f) => (f.cost_usd === null ? null : f.cost_usd / f.turns), usd],
  cache: ["Cache reuse (share of tokens in read from the cache)", (f) => f.cache_reuse, (x) => pct(x, 1)],
  utilisation: ["Average utilisation", (f) => f.avg_utilisation, (x) => pct(x)],
  condensations: ["Condensations per window", (f) => f.condensations / f.windows, (x) => x.toFixed(2)],
};

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, v);
  el.append(...children.filter(Boolean));
  return el;
}

const colourOf = (versions, v) => COLOURS[versions.indexOf(v) % COLOURS.length];

/** Bars by day, one per version that served traffic that day. */
function chart(days, versions, measure) {
  const [name, value, show] = MEASURES[measure];
  const points = days.map((d) => ({ group: d.day, series: d.version, y: value(d) }));
  const legend = versions.map((v) => ({ series: v, label: `v${v}` }));
  return barChart(points, legend, { name: `${name} by day and version`, show, groupLabel: (day) => day.slice(5), seriesLabel: (v) => `v${v}` });
}

/** A bar chart: ``points`` ({group, series, y}) as bars grouped along x, one colour per series of ``legend``
 * ({series, label}); values may be negative (a zero line then runs across). Shared by the metrics per version and
 * the experiment page's deltas per turn. */
export function barChart(points, legend, { name, show, groupLabel = String, seriesLabel = String }) {
  const series = legend.map((l) => l.series);
  points = points.filter((d) => d.y !== null && Number.isFinite(d.y));
  if (!points.length) return h("p", { class: "muted" }, `${name}: not known here (no priced model call).`);
  const groups = [...new Set(points.map((d) => d.group))];
  const top = Math.max(0, ...points.map((d) => d.y));
  const low = Math.min(0, ...points.map((d) => d.y));
  const span = top - low || 1;
  const W = Math.max(320, PAD.left + PAD.right + groups.length * (series.length * 14 + 16));
  const slot = (W - PAD.left - PAD.right) / groups.length;
  const bar = Math.min(24, (slot - 8) / series.length);
  const y = (v) => PAD.top + (H - PAD.top - PAD.bottom) * ((top - v) / span);
  const summary = points.length <= 60 ? points.map((d) => `${d.group}, ${seriesLabel(d.series)}: ${show(d.y)}`).join("; ")
    : `${points.length} bars, from ${show(Math.min(...points.map((d) => d.y)))} to ${show(Math.max(...points.map((d) => d.y)))}`;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "timeline-svg", role: "img", "aria-label": `${name}: ${summary}` },
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "grid-line" }),
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(top), y2: y(top), class: "grid-line" }),
    low < 0 ? s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(low), y2: y(low), class: "grid-line" }) : null,
    top > 0 ? s("text", { x: PAD.left - 6, y: y(top) + 4, "text-anchor": "end", class: "axis" }, show(top)) : null,
    low < 0 ? s("text", { x: PAD.left - 6, y: y(low) + 4, "text-anchor": "end", class: "axis" }, show(low)) : null,
    s("text", { x: PAD.left - 6, y: y(0) + 4, "text-anchor": "end", class: "axis" }, "0"));
  groups.forEach((group, i) => {
    const x0 = PAD.left + i * slot + (slot - bar * series.length) / 2;
    if (groups.length <= 40 || i % Math.ceil(groups.length / 40) === 0) {
      svg.append(s("text", { x: PAD.left + (i + 0.5) * slot, y: H - 8, "text-anchor": "middle", class: "axis" }, groupLabel(group)));
    }
    for (const d of points.filter((p) => p.group === group)) {
      const x = x0 + series.indexOf(d.series) * bar;
      const [from, to] = [y(Math.max(d.y, 0)), y(Math.min(d.y, 0))];
      svg.append(s("rect", { x, y: from, width: Math.max(bar - 2, 2), height: Math.max(to - from, 1), fill: colourOf(series, d.series), "data-series": d.series },
        s("title", {}, `${seriesLabel(d.series)}, ${d.group}: ${show(d.y)}`)));
    }
  });
  const key = h("ul", { class: "chips legend" }, legend.map((l) => h("li", {},
    h("span", { class: "swatch", style: { background: colourOf(series, l.series) }, "aria-hidden": "true" }), l.label)));
  return h("div", {}, h("div", { class: "timeline-scroll" }, svg), key);
}

function table(versions) {
  const head = ["Version", "Turns", "Windows", "Tokens in", "Tokens out", "Cost", "Cache reuse", "Average utilisation", "Condensations", "Served"];
  return h("table", { class: "grid cards-on-phone", id: "version-metrics-table" },
    h("caption", { class: "sr-only" }, "Metrics per version"),
    h("thead", {}, h("tr", {}, head.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, versions.map((f) => h("tr", { dataset: { version: f.version } },
      h("th", { scope: "row" }, `v${f.version}`),
      h("td", { dataset: { label: "Turns" } }, fmt(f.turns)),
      h("td", { dataset: { label: "Windows" } }, fmt(f.windows)),
      h("td", { dataset: { label: "Tokens in", testid: "tokens-in" } }, fmt(f.tokens_in)),
      h("td", { dataset: { label: "Tokens out" } }, fmt(f.tokens_out)),
      h("td", { dataset: { label: "Cost" } }, usd(f.cost_usd), f.unpriced_calls ? ` (${fmt(f.unpriced_calls)} calls unpriced)` : ""),
      h("td", { dataset: { label: "Cache reuse" } }, f.cache_reuse === null ? "–" : pct(f.cache_reuse, 1)),
      h("td", { dataset: { label: "Average utilisation" } }, pct(f.avg_utilisation)),
      h("td", { dataset: { label: "Condensations" } }, fmt(f.condensations)),
      h("td", { dataset: { label: "Served" } }, `${new Date(f.first_at).toLocaleDateString()} – ${new Date(f.last_at).toLocaleDateString()}`)))));
}

/** Fill ``root`` with the type's metrics; the measure picker redraws the chart. */
export async function showVersionMetrics(root, typeUrl) {
  const { versions, days } = await get(`${typeUrl}/metrics`);
  if (!versions.length) {
    root.replaceChildren(h("p", { class: "muted" }, "No traffic yet: no turn has been assembled under this type."));
    return;
  }
  const order = versions.map((v) => v.version).reverse();
  const picker = h("select", { id: "metric-measure" }, Object.entries(MEASURES).map(([key, [name]]) => h("option", { value: key }, name)));
  const drawn = h("div", { id: "metric-chart", "aria-live": "polite" });
  const draw = () => drawn.replaceChildren(chart(days, order, picker.value));
  picker.addEventListener("change", draw);
  root.replaceChildren(h("div", { class: "field" }, h("label", { for: "metric-measure" }, "Chart"), picker), drawn, table(versions));
  draw();
}
