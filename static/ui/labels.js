// A type's labels (production, staging, any name): the version each is on, moving one (the rollout, or the
// rollback) and removing one. A move says first which profiles it changes.
import { actorName, api, errorText, fieldError, get, h, isAdmin, lockForViewers, notify } from "./lib.js";

const $ = (id) => document.getElementById(id);

/** The profiles that run ``typeId`` by ``label``: whom moving it changes. */
async function boundBy(typeId, label) {
  const { profiles } = await get("/v1/profiles");
  return profiles.filter((p) => p.context_window_type_id === typeId && p.context_window_type_label === label).map((p) => p.name || p.id);
}

function labelItem(typeUrl, label, reload) {
  const remove = h("button", {
    type: "button", class: "link admin-only", "aria-label": `Remove the label ${label.label}`,
    onclick: async () => {
      try {
        await api("DELETE", `${typeUrl}/labels/${encodeURIComponent(label.label)}`);
        notify(`Removed the label ${label.label}.`);
        await reload();
      } catch (err) {
        fieldError($("label-name"), $("label-error"), errorText(err));
      }
    },
  }, "Remove");
  return h("li", { dataset: { label: label.label } },
    h("strong", {}, label.label), ` on v${label.version}`,
    h("span", { class: "muted small" }, ` · ${label.author || actorName(label.actor)}, ${new Date(label.updated_at).toLocaleString()}`),
    label.reason ? h("span", { class: "small" }, ` · “${label.reason}”`) : null,
    label.experiment_id ? h("span", { class: "small" }, " · justified by ",
      h("a", { href: `/ui/experiments/${encodeURIComponent(label.experiment_id)}` }, `experiment ${label.experiment_id}`)) : null,
    " ", remove);
}

/** Show the type's labels and offer its versions to move one to. */
export async function showLabels(typeUrl, versions, reload) {
  const { labels } = await get(`${typeUrl}/labels`);
  $("labels").replaceChildren(...(labels.length ? labels.map((l) => labelItem(typeUrl, l, reload))
    : [h("li", { class: "muted" }, "No labels yet: profiles bound to this type run its current version.")]));
  const keep = $("label-version").value;
  $("label-version").replaceChildren(...versions.map((v) => h("option", { value: v.version }, `v${v.version}${v.current ? " (current)" : ""}`)));
  if (keep) $("label-version").value = keep;
  await offerExperiments();
  lockForViewers($("labels"));
  return labels;
}

/** The project's recent experiments, to link the one that justified a move (read again when one is started). */
export async function offerExperiments() {
  const select = $("label-experiment");
  const keep = select.value;
  const { experiments } = await get("/v1/experiments?limit=50");
  select.replaceChildren(h("option", { value: "" }, "No experiment"),
    ...experiments.map((e) => h("option", { value: e.id },
      `${e.spec.name || e.id}: ${e.spec.candidate.name} against ${e.spec.baseline.name}${e.status === "done" ? "" : ` (${e.status})`}`)));
  select.value = keep;
}

/** Moving a label: checked here, confirmed with the profiles it changes, then sent (audited with its reason). */
export function bindLabelForm(typeId, typeUrl, currentLabels, reload) {
  $("label-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!isAdmin()) return;
    const name = $("label-name").value.trim();
    const version = Number($("label-version").value);
    fieldError($("label-name"), $("label-error"));
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) {
      fieldError($("label-name"), $("label-error"), "Name the label: letters, digits, “.”, “-” and “_”, starting with a letter or digit.");
      return;
    }
    const was = currentLabels().find((l) => l.label === name);
    if (was && was.version === version) {
      notify(`${name} is on v${version} already.`);
      return;
    }
    const bound = await boundBy(typeId, name).catch(() => []);
    const who = bound.length ? `Profiles bound by it run v${version} from their next turn: ${bound.join(", ")}.` : "No profile is bound by it yet.";
    if (!confirm(`${was ? `Move ${name} from v${was.version}` : `Put ${name}`} to v${version}? ${who}`)) return;
    try {
      const experiment = $("label-experiment").value;
      const body = { version, reason: $("label-reason").value.trim(), ...(experiment ? { experiment_id: experiment } : {}) };
      await api("PUT", `${typeUrl}/labels/${encodeURIComponent(name)}`, { body });
      notify(`${name} is on v${version}${was ? ` (was v${was.version})` : ""}.`);
      $("label-reason").value = "";
      await reload();
    } catch (err) {
      fieldError($("label-name"), $("label-error"), errorText(err));
    }
  });
}
