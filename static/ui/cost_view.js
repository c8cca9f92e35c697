// Money: what model calls cost (litellm's prices), a turn's split by module in proportion to the tokens each sent.
// A model without a known price reads "price unknown", never $0.
import { fmt, h, moduleLabel } from "./lib.js";

/** Dollars, readable at a turn's scale (fractions of a cent) and a profile's; null: the price is unknown. */
export function usd(x) {
  if (x === null || x === undefined) return "price unknown";
  if (x === 0) return "$0";
  if (Math.abs(x) < 0.01) return `$${Number(x.toPrecision(2))}`;
  return `$${x.toFixed(Math.abs(x) < 1 ? 4 : 2)}`;
}

const label = (id) => (id === "query" ? "Query and tool loop" : moduleLabel(id));

/** One line for a turn's call (a snapshot's ``model_call``, or analytics' brief of it): dollars and tokens. */
export function callLine(call) {
  if (!call) return "no model call recorded";
  const tokens = `${fmt(call.prompt_tokens)} in${call.cache_read_tokens ? ` (${fmt(call.cache_read_tokens)} from cache)` : ""}, ${fmt(call.completion_tokens)} out`;
  const total = "cost_usd" in call ? call.cost_usd : call.cost ? call.cost.total_usd : null;
  return total === null ? `price unknown for ${call.model}: ${tokens}` : `${usd(total)}: ${tokens}`;
}

/** A turn's model call: tokens and dollars per module (input, of it cached), the answer's output, the total. */
export function costSection(call) {
  const section = h("section", { class: "cost", dataset: { testid: "turn-cost" } }, h("h3", {}, "Cost of the model call"));
  if (!call) {
    section.append(h("p", { class: "muted" }, "No model call was recorded for this window."));
    return section;
  }
  section.append(h("p", {}, callLine(call)));
  const cost = call.cost;
  const split = cost?.by_module || {};
  const rows = Object.entries(split).sort(([, a], [, b]) => b.tokens - a.tokens);
  const cell = (v) => h("td", { class: "num" }, v);
  section.append(h("table", { class: "grid" },
    h("caption", { class: "sr-only" }, "Tokens and dollars of the model call by module"),
    h("thead", {}, h("tr", {}, ["Part", "Tokens", "Input", "of it cached"].map((t, i) => h("th", { scope: "col", class: i ? "num" : null }, t)))),
    h("tbody", {},
      rows.map(([id, m]) => h("tr", { dataset: { module: id } }, h("th", { scope: "row" }, label(id)), cell(fmt(m.tokens)),
        cell(usd(m.input_usd)), cell(usd(m.cached_input_usd)))),
      h("tr", { dataset: { module: "output" } }, h("th", { scope: "row" }, "Answer (output)"), cell(fmt(call.completion_tokens)),
        cell(cost ? `${usd(cost.output_usd)} output` : usd(null)), cell("")),
      call.auxiliary ? h("tr", { dataset: { module: "auxiliary" } }, h("th", { scope: "row" }, `Modules' own model calls (${call.auxiliary.calls})`),
        cell(fmt(call.auxiliary.tokens_in + call.auxiliary.tokens_out)), cell(usd(call.auxiliary.usd)), cell("")) : null,
      h("tr", { class: "total" }, h("th", { scope: "row" }, "Total of the answer's call"), cell(fmt(call.prompt_tokens + call.completion_tokens)),
        cell(usd(cost ? cost.total_usd : null)), cell(cost ? usd(cost.cached_input_usd) : "")))));
  if (cost) {
    const per = cost.prices_per_million;
    section.append(h("p", { class: "small muted" }, `Prices per million tokens: input $${per.input}, cached input $${per.cached_input}, output $${per.output}. `
      + "The input is shared by module in proportion to the tokens each sent (a provider reports how much it cached, not which tokens)."
      + (cost.saved_by_cache_usd ? ` The prompt cache saved ${usd(cost.saved_by_cache_usd)}.` : "")));
  } else {
    section.append(h("p", { class: "small muted" }, `litellm's cost map has no price for ${call.model}: the tokens are real, the dollars unknown.`));
  }
  return section;
}

/** Totals over model calls (analytics' ``cost``): spent, saved, tokens, and the calls without a price. */
export function totalsFacts(cost) {
  const unknown = cost.unpriced_calls ? `${fmt(cost.unpriced_calls)} call${cost.unpriced_calls > 1 ? "s" : ""} at unknown prices (${cost.unpriced_models.join(", ")})` : null;
  const spent = cost.priced_calls ? usd(cost.total_usd) + (unknown ? ` + ${unknown}` : "") : "price unknown";
  return [["Spent", spent], ["Saved by prompt cache", cost.priced_calls ? usd(cost.saved_by_cache_usd) : "–"],
    ["Tokens in", `${fmt(cost.prompt_tokens)} (${fmt(cost.cache_read_tokens)} from cache)`], ["Tokens out", fmt(cost.completion_tokens)],
    ...(cost.auxiliary_calls ? [["Modules' own model calls", `${usd(cost.auxiliary_usd)} (${fmt(cost.auxiliary_calls)}: summaries, query rewrites)`]] : [])];
}

/** Input dollars by module over many calls, most expensive first. */
export function byModuleTable(cost) {
  const rows = Object.entries(cost.input_by_module_usd || {}).sort(([, a], [, b]) => b - a);
  return h("table", { class: "grid", dataset: { testid: "cost-by-module" } },
    h("caption", { class: "sr-only" }, "Input dollars by module"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Module"), h("th", { scope: "col", class: "num" }, "Input cost"))),
    h("tbody", {}, rows.map(([id, v]) => h("tr", {}, h("th", { scope: "row" }, label(id)), h("td", { class: "num" }, usd(v)))),
      h("tr", {}, h("th", { scope: "row" }, "Answers (output)"), h("td", { class: "num" }, usd(cost.output_usd)))));
}
