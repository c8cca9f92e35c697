// The project's experiments, newest first: what each compared, over how many turns, and how it ended.
import { fmt, get, h, reportError } from "./lib.js";

async function load() {
  const { experiments } = await get("/v1/experiments?limit=200");
  const body = document.querySelector("#experiments-table tbody");
  if (!experiments.length) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No experiments yet: run one from a type's editor.")));
    return;
  }
  body.replaceChildren(...experiments.map((e) => h("tr", { dataset: { experiment: e.id } },
    h("th", { scope: "row" }, h("a", { href: `/ui/experiments/${encodeURIComponent(e.id)}` }, e.spec.name || e.id)),
    h("td", { dataset: { label: "Candidate" } }, e.spec.candidate.name),
    h("td", { dataset: { label: "Baseline" } }, e.spec.baseline.name),
    h("td", { class: "num", dataset: { label: "Turns" } }, `${fmt(e.done)} of ${fmt(e.total)}`),
    h("td", { dataset: { label: "Status" } }, e.status),
    h("td", { dataset: { label: "Started" } }, `${new Date(e.created_at).toLocaleString()} by ${e.author}`))));
}

load().catch((err) => reportError(err, "Could not load the experiments"));
