// The condensation order: a list reordered by dragging, by touch (the up and down buttons), or from the keyboard
// (Space picks up and drops, arrow keys move, Escape cancels; Alt+arrow moves in one step).
// Active condensable modules outside it can be added; modules that cannot condense cannot.
import { h, isAdmin, moduleLabel } from "./lib.js";

export function initOrder({ list, rest, live, getState, onChange, condensable = () => true }) {
  let grabbed = null; // {id, from: the order before the move}
  let dragged = null;

  const order = () => getState().condensation_order;
  const say = (text) => { live.textContent = text; };
  const position = (id) => `position ${order().indexOf(id) + 1} of ${order().length}`;

  function move(id, to, focusButton) {
    const items = order().filter((m) => m !== id);
    items.splice(Math.max(0, Math.min(items.length, to)), 0, id);
    getState().condensation_order = items;
    render(id, focusButton);
    onChange();
  }

  function keydown(event, id) {
    if (event.target !== event.currentTarget) return; // keys inside the item's own button
    if (!isAdmin() && event.key !== "ArrowUp" && event.key !== "ArrowDown") return; // viewers only move focus
    const index = order().indexOf(id);
    const step = { ArrowUp: -1, ArrowDown: 1 }[event.key];
    if (event.key === " " || event.key === "Enter") {
      event.preventDefault();
      if (grabbed) {
        grabbed = null;
        render(id);
        say(`${moduleLabel(id)} dropped at ${position(id)}.`);
      } else {
        grabbed = { id, from: [...order()] };
        render(id);
        say(`${moduleLabel(id)} picked up, ${position(id)}. Arrow keys move it, Space drops it, Escape cancels.`);
      }
    } else if (event.key === "Escape" && grabbed) {
      event.preventDefault();
      getState().condensation_order = grabbed.from;
      grabbed = null;
      render(id);
      onChange();
      say(`Move cancelled; ${moduleLabel(id)} is back at ${position(id)}.`);
    } else if (step && isAdmin() && (grabbed || event.altKey)) {
      event.preventDefault();
      move(id, index + step);
      say(`${moduleLabel(id)} moved to ${position(id)}.`);
    } else if (step) {
      event.preventDefault();
      list.children[index + step]?.focus();
    }
  }

  function item(id, index) {
    const li = h("li", {
      tabindex: 0, draggable: isAdmin() ? "true" : "false", class: grabbed?.id === id ? "grabbed" : "",
      // No aria-pressed (a list item cannot be pressed): the picked-up state is in its name and announced.
      "aria-roledescription": "sortable item",
      "aria-label": `${index + 1}. ${moduleLabel(id)}${grabbed?.id === id ? ", picked up" : ""}`, dataset: { module: id },
      onkeydown: (e) => keydown(e, id),
      ondragstart: (e) => { dragged = id; e.dataTransfer.effectAllowed = "move"; e.dataTransfer.setData("text/plain", id); li.classList.add("dragging"); },
      ondragend: () => { dragged = null; li.classList.remove("dragging"); clearMarks(); },
      ondragover: (e) => {
        if (!dragged) return;
        e.preventDefault();
        clearMarks();
        li.classList.add(after(e, li) ? "drop-after" : "drop-before");
      },
      ondrop: (e) => {
        e.preventDefault();
        if (!dragged || dragged === id) return;
        const target = order().filter((m) => m !== dragged).indexOf(id) + (after(e, li) ? 1 : 0);
        const moved = dragged;
        dragged = null;
        move(moved, target);
        say(`${moduleLabel(moved)} moved to ${position(moved)}.`);
      },
    },
    h("span", { class: "grip", "aria-hidden": "true" }, "⋮⋮"),
    h("span", { class: "order-n", "aria-hidden": "true" }, `${index + 1}.`),
    h("span", {}, moduleLabel(id)),
    condensable(id) ? null : h("span", { class: "badge b-failed" }, "cannot condense"),
    h("span", { class: "order-buttons" },
      h("button", {
        type: "button", class: "icon admin-only", "aria-label": `Move ${moduleLabel(id)} up`, disabled: index === 0,
        onclick: () => { move(id, index - 1, `Move ${moduleLabel(id)} up`); say(`${moduleLabel(id)} moved to ${position(id)}.`); },
      }, "↑"),
      h("button", {
        type: "button", class: "icon admin-only", "aria-label": `Move ${moduleLabel(id)} down`, disabled: index === order().length - 1,
        onclick: () => { move(id, index + 1, `Move ${moduleLabel(id)} down`); say(`${moduleLabel(id)} moved to ${position(id)}.`); },
      }, "↓")),
    h("button", {
      type: "button", class: "link small admin-only", "aria-label": `Remove ${moduleLabel(id)} from the condensation order`,
      onclick: () => { getState().condensation_order = order().filter((m) => m !== id); render(); onChange(); },
    }, "Remove"));
    return li;
  }

  const after = (e, li) => { const box = li.getBoundingClientRect(); return e.clientY > box.top + box.height / 2; };
  const clearMarks = () => list.querySelectorAll(".drop-before, .drop-after").forEach((el) => el.classList.remove("drop-before", "drop-after"));

  function render(focusId, focusButton) {
    const state = getState();
    list.replaceChildren(...order().map(item));
    const outside = Object.entries(state.modules).filter(([id, s]) => s.active && !order().includes(id)).map(([id]) => id);
    const fixed = outside.filter((id) => !condensable(id));
    const addable = outside.filter(condensable);
    rest.replaceChildren(...(fixed.length ? [h("p", { class: "hint", dataset: { testid: "not-condensable" } },
      `Never condensed (they cannot condense): ${fixed.map(moduleLabel).join(", ")}.`)] : []),
    ...(addable.length ? [
      h("p", { class: "hint" }, "Active but not condensed yet:"),
      h("ul", { class: "chips" }, addable.map((id) => h("li", {}, moduleLabel(id), " ",
        h("button", {
          type: "button", class: "link small admin-only", "aria-label": `Add ${moduleLabel(id)} to the condensation order`,
          onclick: () => { state.condensation_order = [...order(), id]; render(id); onChange(); },
        }, "Add")))),
    ] : []));
    const focused = focusId && list.querySelector(`[data-module="${focusId}"]`);
    if (focused) (focusButton && focused.querySelector(`button[aria-label="${focusButton}"]:not(:disabled)`) || focused).focus();
  }

  return { render: () => render() };
}
