// One experiment (GET /v1/experiments/<id>): its progress, live over SSE while it runs, with a cancel; then its
// totals, a chart of the change per turn (the bar chart of the metrics per version) and the table of every turn.
import { usd } from "./cost_view.js";
import { api, fmt, get, h, isAdmin, loadModuleNames, lockForViewers, moduleLabel, notify, pct, reportError } from "./lib.js";
import { barChart } from "./version_metrics.js";

const $ = (id) => document.getElementById(id);
const id = document.body.dataset.experimentId;
const url = `/v1/experiments/${encodeURIComponent(id)}`;

const tokens = (x) => fmt(Math.round(x));
/** The measures compared, each: a name, its figure of one side of a turn, and how to show it. */
const MEASURES = {
  tokens: ["Tokens sent", (f) => f.tokens, tokens],
  cost_usd: ["Input cost, nothing cached", (f) => f.cost_usd, usd],
  cached_cost_usd: ["Input cost, stable prefix cached", (f) => f.cached_cost_usd, usd],
  stable_prefix: ["Stable prefix (tokens)", (f) => f.stable_prefix, tokens],
  utilisation: ["Utilisation", (f) => f.utilisation, (x) => pct(x, 1)],
};
const signed = (show) => (x) => (x === null || x === undefined ? "–" : x < 0 ? `−${show(-x)}` : x > 0 ? `+${show(x)}` : show(0));

function describe(e) {
  const s = e.spec.slice;
  const filters = [
    s.profile_id && `profile ${s.profile_id}`, s.type_id && `turns under ${s.type_id}`,
    s.since && `from ${s.since.slice(0, 10)}`, s.until && `before ${s.until.slice(0, 10)}`,
    s.session_ids?.length && `${s.session_ids.length} session${s.session_ids.length === 1 ? "" : "s"}`,
  ].filter(Boolean);
  const which = `${s.sample === "random" ? `${fmt(s.limit)} turns at random` : `the ${fmt(s.limit)} newest turns`}`;
  return `Candidate: ${e.spec.candidate.name}. Baseline: ${e.spec.baseline.name}. Traffic: ${which}${filters.length ? ` (${filters.join(", ")})` : ""}. `
    + `Started by ${e.author} on ${new Date(e.created_at).toLocaleString()}.`;
}

function showProgress(status, done, total, error = "") {
  $("experiment-progress").max = Math.max(total, 1);
  $("experiment-progress").value = done;
  const of = `${fmt(done)} of ${fmt(total)} turns replayed`;
  $("progress-text").textContent = {
    running: `Running: ${of}.`, done: `Done: ${of}.`, cancelled: `Cancelled: ${of}.`, failed: `Failed after ${of}: ${error}`,
  }[status] || of;
  $("experiment-cancel").hidden = status !== "running" || !isAdmin();
  $("experiment-exports").hidden = status === "running";
}

function totalsTable(t) {
  const row = (name, pick, show) => {
    const [b, c] = [pick(t.baseline), pick(t.candidate)];
    const change = b === null || c === null || b === undefined || c === undefined ? null : c - b;
    return h("tr", {}, h("th", { scope: "row" }, name), h("td", { class: "num", dataset: { label: "Baseline" } }, b === null ? "–" : show(b)),
      h("td", { class: "num", dataset: { label: "Candidate" } }, c === null ? "–" : show(c)),
      h("td", { class: "num", dataset: { label: "Change" } }, signed(show)(change)));
  };
  return h("table", { class: "grid cards-on-phone", id: "totals-table" },
    h("caption", { class: "sr-only" }, "Totals, baseline and candidate"),
    h("thead", {}, h("tr", {}, ["Measure", "Baseline", "Candidate", "Change"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {},
      row("Turns that fit", (s) => s.fits, fmt),
      row("Tokens sent", (s) => s.tokens, tokens),
      row("Input cost, nothing cached", (s) => s.cost_usd, usd),
      row("Input cost, stable prefix cached", (s) => s.cached_cost_usd, usd),
      row("Average utilisation", (s) => s.avg_utilisation, (x) => pct(x, 1)),
      row("Average stable prefix (tokens)", (s) => s.avg_stable_prefix, tokens),
      t.evidence_turns ? row(`Turns keeping their expected evidence (of ${fmt(t.evidence_turns)} labelled)`, (s) => s.evidence_kept, fmt) : null));
}

function modulesTable(modules) {
  const names = Object.keys(modules);
  if (!names.length) return null;
  return h("table", { class: "grid cards-on-phone", id: "modules-table" },
    h("caption", {}, "What each module sent, over the turns both sides fit (turns short: it left content out, or sent nothing)"),
    h("thead", {}, h("tr", {}, ["Module", "Baseline tokens", "Candidate tokens", "Change", "Turns short, baseline", "Turns short, candidate"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, names.map((m) => {
      const f = modules[m];
      return h("tr", { dataset: { module: m } }, h("th", { scope: "row" }, moduleLabel(m)),
        h("td", { class: "num", dataset: { label: "Baseline tokens" } }, tokens(f.baseline_used)),
        h("td", { class: "num", dataset: { label: "Candidate tokens" } }, tokens(f.candidate_used)),
        h("td", { class: "num", dataset: { label: "Change" } }, signed(tokens)(f.candidate_used - f.baseline_used)),
        h("td", { class: "num", dataset: { label: "Turns short, baseline" } }, fmt(f.baseline_dropped)),
        h("td", { class: "num", dataset: { label: "Turns short, candidate" } }, fmt(f.candidate_dropped)));
    })));
}

function showTotals(e) {
  const t = e.totals;
  if (!t || !t.turns) {
    $("experiment-totals").replaceChildren(h("p", { class: "muted" }, e.status === "running" ? "The totals show once the experiment has ended." : "No turn was replayed."));
    return;
  }
  const lines = [
    h("li", { dataset: { testid: "no-longer-fit" } }, t.no_longer_fit
      ? h("strong", { class: "danger-text" }, `${fmt(t.no_longer_fit)} turn${t.no_longer_fit === 1 ? "" : "s"} would no longer fit under the candidate.`)
      : "Every turn that fits now would still fit."),
    t.now_fit ? h("li", {}, `${fmt(t.now_fit)} turn${t.now_fit === 1 ? "" : "s"} that do not fit now would fit.`) : null,
    t.rated_turns ? h("li", {}, `Rated turns: ${fmt(t.rating_kept)} of ${fmt(t.rated_turns)} still send every message of the rated window.`) : null,
  ];
  $("experiment-totals").replaceChildren(h("ul", { class: "plain-list" }, lines), totalsTable(t), modulesTable(t.modules));
}

function showChart(turns) {
  const picker = $("delta-measure");
  if (!picker.options.length) {
    picker.append(...Object.entries(MEASURES).map(([key, [name]]) => h("option", { value: key }, name)));
    picker.addEventListener("change", () => showChart(latest.turns || []));
  }
  const compared = turns.filter((t) => t.delta).slice().reverse(); // oldest first
  if (!compared.length) {
    $("delta-chart").replaceChildren(h("p", { class: "muted" }, "No turn compared yet."));
    return;
  }
  const [name, , show] = MEASURES[picker.value];
  if (compared.every((t) => !t.delta[picker.value])) {
    $("delta-chart").replaceChildren(h("p", { dataset: { testid: "no-change" } }, `${name}: no change in any of the ${fmt(compared.length)} turns compared.`));
    return;
  }
  const points = compared.map((t) => ({ group: `${t.session_id} turn ${t.turn}`, series: "delta", y: t.delta[picker.value] }));
  $("delta-chart").replaceChildren(barChart(points, [{ series: "delta", label: "Candidate less baseline" }], {
    name: `${name}, candidate less baseline, per turn`, show: signed(show), groupLabel: (g) => g.split(" turn ")[1],
  }));
}

function dropped(t) {
  const base = t.baseline.modules || {};
  return Object.entries(t.candidate.modules || {})
    .filter(([m, f]) => (f.status !== "ok" || f.left_out) && base[m] && base[m].status === "ok" && !base[m].left_out)
    .map(([m]) => moduleLabel(m));
}

function side(f, pick, show) {
  return f.fits ? show(pick(f)) : "does not fit";
}

function turnsTable(turns) {
  if (!turns.length) return h("p", { class: "muted" }, "No turn replayed yet.");
  return h("table", { class: "grid cards-on-phone", id: "turns-table" },
    h("caption", { class: "sr-only" }, "Every turn, baseline and candidate"),
    h("thead", {}, h("tr", {}, ["Turn", "Query", "Tokens sent", "Input cost", "Utilisation", "Labels", "Left out by the candidate"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, turns.map((t) => {
      const arrow = (pick, show) => `${side(t.baseline, pick, show)} → ${side(t.candidate, pick, show)}`;
      const labels = [];
      if (t.candidate.evidence_kept !== null && t.candidate.evidence_kept !== undefined) labels.push(t.candidate.evidence_kept ? "evidence kept" : "evidence lost");
      if (t.rating_kept !== null) labels.push(t.rating_kept ? "rated window kept" : "rated window changed");
      const lost = dropped(t);
      return h("tr", { dataset: { session: t.session_id, turn: t.turn } },
        h("th", { scope: "row" }, h("a", { href: `/ui/sessions/${encodeURIComponent(t.session_id)}/turns/${t.turn}` }, `${t.session_id} · turn ${t.turn}`)),
        h("td", { class: "clip", dataset: { label: "Query" }, title: t.query }, t.query),
        h("td", { dataset: { label: "Tokens sent" } }, arrow((f) => f.tokens, tokens), t.delta ? ` (${signed(tokens)(t.delta.tokens)})` : ""),
        h("td", { dataset: { label: "Input cost" } }, arrow((f) => f.cost_usd, usd)),
        h("td", { dataset: { label: "Utilisation" } }, arrow((f) => f.utilisation, (x) => pct(x, 1))),
        h("td", { dataset: { label: "Labels" } }, labels.join(", ") || "–"),
        h("td", { dataset: { label: "Left out by the candidate" } }, t.candidate.fits ? lost.join(", ") || "–" : t.candidate.reason || "does not fit"));
    })));
}

let latest = {};

function render(e) {
  latest = e;
  $("experiment-title").textContent = e.spec.name ? `Experiment: ${e.spec.name}` : `Experiment ${e.id}`;
  $("experiment-spec").textContent = describe(e);
  showProgress(e.status, e.done, e.total, e.error);
  $("export-csv").href = `${url}/export?format=csv`;
  $("export-json").href = `${url}/export?format=json`;
  showTotals(e);
  showChart(e.turns || []);
  $("experiment-turns").replaceChildren(turnsTable(e.turns || []));
  lockForViewers();
}

function follow() {
  const source = new EventSource(`${url}/events`);
  source.addEventListener("progress", (event) => {
    const p = JSON.parse(event.data);
    showProgress("running", p.done, p.total);
  });
  source.addEventListener("end", async () => {
    source.close();
    render(await get(url));
  });
  source.onerror = () => { // the server went away; the stored row says where it got to
    source.close();
    setTimeout(() => get(url).then((e) => (render(e), e.status === "running" && follow())).catch(() => {}), 2000);
  };
}

$("experiment-cancel").addEventListener("click", async () => {
  if (!confirm("Cancel the experiment? What it has replayed so far is kept.")) return;
  try {
    await api("POST", `${url}/cancel`);
    notify("Cancelled: what was replayed so far is kept.");
  } catch (err) {
    reportError(err, "Could not cancel");
  }
});

async function load() {
  await loadModuleNames();
  const e = await get(url);
  render(e);
  if (e.status === "running") follow();
}

load().catch((err) => reportError(err, "Could not load the experiment"));
