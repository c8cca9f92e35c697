// The sessions page: create a session, and links to each session's context panel.
import { api, errorText, fmt, get, h, lockForViewers } from "./lib.js";

const $ = (id) => document.getElementById(id);

function cell(label, ...content) {
  return h("td", { dataset: { label } }, ...content);
}

async function load() {
  const [{ sessions }, { profiles }] = await Promise.all([get("/v1/sessions"), get("/v1/profiles")]);
  $("s-profile").replaceChildren(...profiles.map((p) => h("option", { value: p.id }, `${p.name || p.id} (${p.type.replace(/_/g, " ")})`)));
  const names = Object.fromEntries(profiles.map((p) => [p.id, p.name || p.id]));
  $("session-table").querySelector("tbody").replaceChildren(...(sessions.length ? sessions.map((s) => h("tr", { dataset: { session: s.id } },
    h("th", { scope: "row" }, h("a", { href: `/ui/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id), " ", h("code", { class: "small muted" }, s.id)),
    cell("Profile", names[s.profile_id] || s.profile_id),
    cell("User", s.user_id),
    cell("Phase", s.phase || "none"),
    cell("Context limit", s.context_limit ? `${fmt(s.context_limit)} tokens` : "model default"),
    cell("Updated", new Date(s.updated_at).toLocaleString())))
    : [h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No sessions yet: create one above, or with POST /v1/sessions."))]));
  lockForViewers();
}

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

load();
