// Every signed-in page: the menu on narrow screens, sign out, table cells labelled for the phone layout, and
// controls locked for viewers.
import { lockForViewers, signOut } from "./lib.js";

const toggle = document.getElementById("menu-toggle");
toggle?.addEventListener("click", () => {
  const open = toggle.getAttribute("aria-expanded") !== "true";
  toggle.setAttribute("aria-expanded", String(open));
  document.getElementById("menu").classList.toggle("open", open);
});

/** On a phone each table row is a card: every cell shows its column's heading (from the table's head). */
function labelCells(root = document) {
  for (const table of root.querySelectorAll("table.grid")) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => { if (!cell.dataset.label && heads[i]) cell.dataset.label = heads[i]; });
    }
  }
}
labelCells();
new MutationObserver(() => labelCells()).observe(document.querySelector("main") || document.body, { childList: true, subtree: true });

document.getElementById("sign-out")?.addEventListener("click", signOut);
lockForViewers();
