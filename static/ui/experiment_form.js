// The editor's "Run an experiment": the type as edited (unsaved) or a saved version, against a baseline, over a
// slice of recorded turns (POST /v1/experiments); the experiment runs in the background, its page follows it.
import { offerExperiments } from "./labels.js";
import { api, errorText, fieldError, get, h } from "./lib.js";

const $ = (id) => document.getElementById(id);

/** Offer the type's saved versions as candidate and baseline (called whenever the versions are read). */
export function offerVersions(typeId, versions) {
  for (const [select, first] of [["experiment-candidate", "This type as edited"], ["experiment-baseline", "What each turn's profile runs now"]]) {
    const keep = $(select).value;
    $(select).replaceChildren(h("option", { value: "" }, first),
      ...versions.map((v) => h("option", { value: v.version }, `${typeId} v${v.version}${v.current ? " (current)" : ""}`)));
    $(select).value = keep;
  }
}

function body(getState, typeId) {
  const candidate = $("experiment-candidate").value;
  const baseline = $("experiment-baseline").value;
  const slice = { limit: Number($("experiment-limit").value) || 100, sample: $("experiment-sample").value };
  if ($("experiment-profile").value) slice.profile_id = $("experiment-profile").value;
  if ($("experiment-own").checked && typeId) slice.type_id = typeId;
  if ($("experiment-since").value) slice.since = $("experiment-since").value;
  if ($("experiment-until").value) slice.until = $("experiment-until").value;
  const sessions = $("experiment-sessions").value.split(",").map((s) => s.trim()).filter(Boolean);
  if (sessions.length) slice.session_ids = sessions;
  return {
    name: $("experiment-name").value.trim(),
    candidate: candidate ? { type_id: typeId, version: Number(candidate) } : { type: getState() },
    ...(baseline ? { baseline: { type_id: typeId, version: Number(baseline) } } : {}),
    slice,
  };
}

async function run(event, { getState, getTypeId, check, showTypeErrors, isDirty }) {
  event.preventDefault();
  const error = $("experiment-error");
  fieldError($("experiment-limit"), error);
  const typeId = getTypeId();
  if (!$("experiment-candidate").value && !check()) {
    error.textContent = "The type as edited has mistakes, marked at their fields: fix them, or pick a saved version.";
    return;
  }
  $("experiment-run").disabled = true;
  try {
    const { data } = await api("POST", "/v1/experiments", { body: body(getState, typeId) });
    const page = `/ui/experiments/${encodeURIComponent(data.id)}`;
    if (!isDirty()) {
      location.assign(page);
      return;
    }
    if (typeId) await offerExperiments(); // the label form may link it
    $("experiment-started").replaceChildren(`Started: ${data.total} turns. `,
      h("a", { href: page, target: "_blank", rel: "noopener" }, "Follow the experiment (opens in a new tab, your edits stay here)"));
  } catch (err) {
    const typeErrors = (err.fieldErrors || []).filter((e) => /^candidate\.type(\.|$)/.test(String(e.loc)));
    if (typeErrors.length) { // placed at the editor's fields, as a save's would be
      showTypeErrors(typeErrors.map((e) => ({ ...e, loc: String(e.loc).slice("candidate.".length) })));
      error.textContent = "The type as edited is not valid: see the errors above.";
    } else {
      fieldError($("experiment-limit"), error, errorText(err));
    }
  } finally {
    $("experiment-run").disabled = false;
  }
}

export async function initExperimentForm(options) {
  $("experiment-form").addEventListener("submit", (event) => run(event, options));
  if (!options.getTypeId()) $("experiment-own").checked = false;
  const { profiles } = await get("/v1/profiles");
  $("experiment-profile").append(...profiles.map((p) => h("option", { value: p.id }, p.name || p.id)));
}
