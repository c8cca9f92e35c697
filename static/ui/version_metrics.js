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
  const dates = [...new Set(days.map((d) => d.day))];
  const points = days.map((d) => ({ ...d, y: value(d) })).filter((d) => d.y !== null && Number.isFinite(d.y));
  if (!points.length) return h("p", { class: "muted" }, `${name}: not known for this traffic (no priced model call).`);
  const top = Math.max(...points.map((d) => d.y)) || 1;
  const W = Math.max(320, PAD.left + PAD.right + dates.length * (versions.length * 14 + 16));
  const slot = (W - PAD.left - PAD.right) / dates.length;
  const bar = Math.min(24, (slot - 8) / versions.length);
  const y = (v) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - v / top);
  const summary = points.map((d) => `${d.day}, v${d.version}: ${show(d.y)}`).join("; ");
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "timeline-svg", role: "img", "aria-label": `${name} by day and version: ${summary}` },
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "grid-line" }),
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(top), y2: y(top), class: "grid-line" }),
    s("text", { x: PAD.left - 6, y: y(top) + 4, "text-anchor": "end", class: "axis" }, show(top)),
    s("text", { x: PAD.left - 6, y: y(0) + 4, "text-anchor": "end", class: "axis" }, "0"));
  dates.forEach((day, i) => {
    const x0 = PAD.left + i * slot + (slot - bar * versions.length) / 2;
    svg.append(s("text", { x: PAD.left + (i + 0.5) * slot, y: H - 8, "text-anchor": "middle", class: "axis" }, day.slice(5)));
    for (const d of points.filter((p) => p.day === day)) {
      const x = x0 + versions.indexOf(d.version) * bar;
      svg.append(s("rect", { x, y: y(d.y), width: Math.max(bar - 2, 2), height: Math.max(y(0) - y(d.y), 1), fill: colourOf(versions, d.version), "data-version": d.version },
        s("title", {}, `v${d.version}, ${d.day}: ${show(d.y)}`)));
    }
  });
  const legend = h("ul", { class: "chips legend" }, versions.map((v) => h("li", {},
    h("span", { class: "swatch", style: { background: colourOf(versions, v) }, "aria-hidden": "true" }), `v${v}`)));
  return h("div", {}, h("div", { class: "timeline-scroll" }, svg), legend);
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
