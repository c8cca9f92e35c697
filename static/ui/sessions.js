// The sessions page: links to each session's context panel.
import { fmt, get, h } from "./lib.js";

const { sessions } = await get("/v1/sessions");
document.querySelector("#session-table tbody").replaceChildren(...sessions.map((s) => h("tr", {},
  h("th", { scope: "row" }, h("a", { href: `/ui/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id), " ", h("code", { class: "small muted" }, s.id)),
  h("td", {}, s.profile_id),
  h("td", {}, s.user_id),
  h("td", {}, s.context_limit ? fmt(s.context_limit) : "model default"),
  h("td", {}, new Date(s.updated_at).toLocaleString()))));
