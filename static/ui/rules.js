// Dynamic adjustment rules: condition (with its threshold or phase) and action (with its parameters).
// Every rule is kept whole in the state, so nothing a rule holds is lost on save.
import { h, moduleLabel } from "./lib.js";

const CONDITIONS = {
  first_turn: { label: "First turn of the session" },
  no_documents_attached: { label: "No documents attached" },
  documents_attached: { label: "Documents attached" },
  long_conversation: { label: "Long conversation", threshold: { label: "From this many turns", min: 1, step: 1, value: 10 } },
  high_confidence_rag: { label: "High-confidence RAG match", threshold: { label: "Best score at least (0–1)", min: 0, max: 1, step: 0.01, value: 0.85 } },
  small_window: { label: "Small context window", threshold: { label: "Limit at most (tokens)", min: 1, step: 1, value: 16000 } },
  phase_is: { label: "Session phase is" },
};
export const STRATEGIES = { summarize: "Summarise what is dropped", truncate: "Keep the newest, drop the rest" };
const PHASES = ["ideate", "focus", "operate", "complete"];
const ACTIONS = {
  reduce: { label: "Reduce its share", defaults: { by_pct: 50 } },
  transfer: { label: "Transfer its share to", defaults: { to: "conversation_history" } },
  force_full: { label: "Give it its full maximum", defaults: {} },
  condense: { label: "Condense it", defaults: { strategy: "summarize", to_pct: 50 } },
};

export function initRules({ root, add, getState, moduleIds, onChange, whyIdle = () => "" }) {
  const rules = () => getState().dynamic_adjustments;

  function select(options, value, attrs) {
    return h("select", attrs, Object.entries(options).map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
  }

  function field(i, path, label, control) {
    const id = `r${i}-${path.replace(/\./g, "-")}`;
    control.id = id;
    control.dataset.loc = `dynamic_adjustments.${i}.${path}`;
    control.setAttribute("aria-describedby", `${id}-error`);
    return h("div", { class: "field" }, h("label", { for: id }, label), control, h("p", { class: "field-error", id: `${id}-error` }));
  }

  function numberInput(value, opts, onInput) {
    const input = h("input", { type: "number", value, min: opts.min, max: opts.max, step: opts.step ?? "any" });
    input.addEventListener("input", () => onInput(input.value === "" ? "" : Number(input.value)));
    return input;
  }

  function moduleSelect(value, onPick) {
    const ids = moduleIds();
    const options = Object.fromEntries((ids.includes(value) ? ids : [value, ...ids]).map((id) => [id, moduleLabel(id)]));
    const el = select(options, value, {});
    el.addEventListener("change", () => onPick(el.value));
    return el;
  }

  function conditionFields(rule, i) {
    const c = rule.condition;
    const type = select(Object.fromEntries(Object.entries(CONDITIONS).map(([k, v]) => [k, v.label])), c.type, {});
    type.addEventListener("change", () => {
      const spec = CONDITIONS[type.value];
      rule.condition = { type: type.value };
      if (spec.threshold) rule.condition.threshold = spec.threshold.value;
      if (type.value === "phase_is") rule.condition.phase = "focus";
      render(i);
      onChange();
    });
    const out = [field(i, "condition.type", "When", type)];
    const spec = CONDITIONS[c.type]?.threshold;
    if (spec) out.push(field(i, "condition.threshold", spec.label, numberInput(c.threshold, spec, (v) => { c.threshold = v; onChange(); })));
    if (c.type === "phase_is") {
      const phase = select(Object.fromEntries(PHASES.map((p) => [p, p])), c.phase, {});
      phase.addEventListener("change", () => { c.phase = phase.value; onChange(); });
      out.push(field(i, "condition.phase", "Phase", phase));
    }
    return out;
  }

  function actionFields(rule, i) {
    const a = rule.action;
    const type = select(Object.fromEntries(Object.entries(ACTIONS).map(([k, v]) => [k, v.label])), a.type, {});
    type.addEventListener("change", () => {
      rule.action = { type: type.value, module: a.module, ...ACTIONS[type.value].defaults };
      render(i);
      onChange();
    });
    const out = [
      field(i, "action.type", "Then", type),
      field(i, "action.module", "Module", moduleSelect(a.module, (m) => { a.module = m; onChange(); })),
    ];
    if (a.type === "reduce") out.push(field(i, "action.by_pct", "By (%)", numberInput(a.by_pct, { min: 0, max: 100 }, (v) => { a.by_pct = v; onChange(); })));
    if (a.type === "transfer") out.push(field(i, "action.to", "To module", moduleSelect(a.to, (m) => { a.to = m; onChange(); })));
    if (a.type === "condense") {
      // A choice, not free text: a made-up strategy would silently mean "keep the newest".
      const current = a.strategy ?? "summarize";
      const options = { ...STRATEGIES, ...(STRATEGIES[current] ? {} : { [current]: `“${current}” (not a known strategy)` }) };
      const strategy = select(options, current, {});
      strategy.addEventListener("change", () => { a.strategy = strategy.value; onChange(); });
      out.push(field(i, "action.strategy", "Strategy", strategy),
        field(i, "action.to_pct", "To (% of its allocation)", numberInput(a.to_pct, { min: 1, max: 100 }, (v) => { a.to_pct = v; onChange(); })));
    }
    return out;
  }

  /** A rule aimed at a module that takes no part does nothing: say so on the rule. */
  function idleNote(rule) {
    const targets = [rule.action.module, rule.action.type === "transfer" ? rule.action.to : null].filter(Boolean);
    const notes = targets.map((id) => [id, whyIdle(id)]).filter(([, why]) => why);
    return h("p", { class: "warning small", dataset: { testid: "rule-idle" }, hidden: !notes.length },
      notes.map(([id, why]) => `${moduleLabel(id)} ${why}, so this rule has no effect on it. `));
  }

  function ruleBox(rule, i) {
    return h("fieldset", { class: "rule", dataset: { rule: i } },
      h("legend", {}, `Rule ${i + 1}`),
      idleNote(rule),
      h("div", { class: "fields" }, conditionFields(rule, i), actionFields(rule, i)),
      h("button", {
        type: "button", class: "link small admin-only", "aria-label": `Remove rule ${i + 1}`,
        onclick: () => { rules().splice(i, 1); render(); onChange(); add.focus(); },
      }, "Remove rule"));
  }

  function render(focusRule) {
    root.replaceChildren(...(rules().length ? rules().map(ruleBox) : [h("p", { class: "muted" }, "No rules.")]));
    if (focusRule !== undefined) root.querySelector(`[data-rule="${focusRule}"] select`)?.focus();
  }

  add.addEventListener("click", () => {
    rules().push({ condition: { type: "long_conversation", threshold: 10 }, action: { type: "condense", module: "conversation_history", strategy: "summarize", to_pct: 50 } });
    render(rules().length - 1);
    onChange();
  });

  /** Refresh the "no effect" notes after edits elsewhere (a module switched off in the type). */
  function refreshNotes() {
    root.querySelectorAll("[data-rule]").forEach((box) => {
      const rule = rules()[Number(box.dataset.rule)];
      if (rule) box.querySelector("[data-testid=rule-idle]").replaceWith(idleNote(rule));
    });
  }

  return { render: () => render(), refreshNotes };
}
