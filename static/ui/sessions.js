// The sessions page: find sessions and turns (filters kept in the address), create a session, open its panel.
import { api, errorText, fmt, get, h, lockForViewers, pageNav } from "./lib.js";

const $ = (id) => document.getElementById(id);
const FILTERS = ["profile_id", "find", "type_id", "model", "outcome", "since", "until", "q"];
const TURN_FILTERS = FILTERS.filter((name) => !["profile_id", "find"].includes(name));
const PAGE = 200;

function cell(label, ...content) {
  return h("td", { dataset: { label } }, ...content);
}

/** The filters in the address, known names with a value only (what the API is asked and the form shows). */
function filtersInAddress() {
  const given = new URLSearchParams(location.search);
  return new URLSearchParams(FILTERS.filter((name) => given.get(name)?.trim()).map((name) => [name, given.get(name).trim()]));
}

function showFilters(filters) {
  const form = $("filters");
  for (const name of FILTERS) form.elements[name].value = filters.get(name) || "";
}

function matchingTurns(session, filters) {
  if (!session.matching_turns) return null;
  const base = `/ui/sessions/${encodeURIComponent(session.id)}/turns/`;
  const shown = session.matching_turns.slice(0, 12);
  return h("p", { class: "small matching-turns", dataset: { testid: "matching-turns" } },
    `${session.matching_turns.length} matching turn${session.matching_turns.length === 1 ? "" : "s"}: `,
    shown.flatMap((n, i) => [i ? ", " : "", h("a", { href: base + n, "aria-label": `Turn ${n} of ${session.title || session.id}${filters.get("q") ? `, containing “${filters.get("q")}”` : ""}` }, `turn ${n}`)]),
    session.matching_turns.length > shown.length ? ` and ${session.matching_turns.length - shown.length} more` : "");
}

function sessionRow(s, names, filters) {
  return h("tr", { dataset: { session: s.id } },
    h("th", { scope: "row" }, h("a", { href: `/ui/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id), " ", h("code", { class: "small muted" }, s.id),
      matchingTurns(s, filters)),
    cell("Profile", names[s.profile_id] || s.profile_id),
    cell("User", s.user_id),
    cell("Phase", s.phase || "none"),
    cell("Context limit", s.context_limit ? `${fmt(s.context_limit)} tokens` : "model default"),
    cell("Updated", new Date(s.updated_at).toLocaleString()));
}

let names = {};

async function loadChoices() {
  const [{ profiles }, { types }] = await Promise.all([get("/v1/profiles"), get("/v1/context-window-types")]);
  $("s-profile").replaceChildren(...profiles.map((p) => h("option", { value: p.id }, `${p.name || p.id} (${p.type.replace(/_/g, " ")})`)));
  $("f-profile").replaceChildren(h("option", { value: "" }, "Any profile"), ...profiles.map((p) => h("option", { value: p.id }, p.name || p.id)));
  $("f-type").replaceChildren(h("option", { value: "" }, "Any type"), ...types.map((t) => h("option", { value: t.id }, t.name || t.id)));
  const models = new Set([...$("f-models").options].map((o) => o.value).concat(profiles.map((p) => p.model)).filter(Boolean));
  $("f-models").replaceChildren(...[...models].map((m) => h("option", { value: m })));
  names = Object.fromEntries(profiles.map((p) => [p.id, p.name || p.id]));
}

/** The page of the list the address names (``offset``), 0 for the first. */
const offsetInAddress = () => Math.max(0, Number.parseInt(new URLSearchParams(location.search).get("offset"), 10) || 0);

function goTo(offset) {
  const params = filtersInAddress();
  if (offset) params.set("offset", offset);
  history.pushState(null, "", `${location.pathname}${[...params.keys()].length ? `?${params}` : ""}`);
  loadSessions().then(() => $("session-table").scrollIntoView());
}

async function loadSessions() {
  const filters = filtersInAddress();
  const offset = offsetInAddress();
  showFilters(filters);
  $("filter-error").textContent = "";
  const body = $("session-table").querySelector("tbody");
  let sessions, nextOffset;
  try {
    ({ sessions, next_offset: nextOffset } = await get(`/v1/sessions?${filters}&limit=${PAGE}&offset=${offset}`));
  } catch (err) {
    const fields = (err.fieldErrors || []).map((e) => `${[].concat(e.loc || []).join(".")}: ${e.msg}`).join("; ");
    $("filter-error").textContent = `Not filtered: ${fields || errorText(err)}`;
    body.replaceChildren(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "Change the filters above to list sessions.")));
    $("session-pages").hidden = true;
    return;
  }
  pageNav($("session-pages"), { offset, shown: sessions.length, nextOffset, size: PAGE, noun: "sessions", go: goTo });
  const filtered = [...filters.keys()].length > 0;
  const turns = sessions.reduce((n, s) => n + (s.matching_turns?.length || 0), 0);
  const paged = offset > 0 || nextOffset !== null;
  $("filter-summary").textContent = !filtered ? "" : paged ? "More sessions match than one page holds: see the pages below the list."
    : TURN_FILTERS.some((name) => filters.has(name))
    ? `${sessions.length} session${sessions.length === 1 ? "" : "s"} with ${turns} matching turn${turns === 1 ? "" : "s"}.`
    : `${sessions.length} session${sessions.length === 1 ? "" : "s"} match.`;
  body.replaceChildren(...(sessions.length ? sessions.map((s) => sessionRow(s, names, filters))
    : [h("tr", {}, h("td", { colspan: 6, class: "muted" }, filtered ? "No session matches these filters." : "No sessions yet: create one above, or with POST /v1/sessions."))]));
  lockForViewers();
}

$("filters").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData($("filters"));
  const filters = new URLSearchParams(FILTERS.filter((name) => String(form.get(name) || "").trim()).map((name) => [name, String(form.get(name)).trim()]));
  history.pushState(null, "", `${location.pathname}${[...filters.keys()].length ? `?${filters}` : ""}`);
  loadSessions();
});

$("f-clear").addEventListener("click", () => {
  history.pushState(null, "", location.pathname);
  loadSessions();
});

window.addEventListener("popstate", loadSessions);

$("new-session").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("s-error").textContent = "";
  const body = { profile_id: $("s-profile").value, title: $("s-title").value.trim(), user_id: $("s-user").value.trim() || "anonymous" };
  if ($("s-id").value.trim()) body.id = $("s-id").value.trim();
  if ($("s-limit").value) body.context_limit = Number($("s-limit").value);
  try {
    const { data } = await api("POST", "/v1/sessions", { body });
    location.assign(`/ui/sessions/${encodeURIComponent(data.id)}`);
  } catch (err) {
    $("s-error").textContent = `Not created: ${errorText(err)}`;
  }
});

loadChoices().then(loadSessions);
