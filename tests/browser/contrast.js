// WCAG 2.1 contrast of every visible text against its effective background; returns the failures.
// AA: 4.5:1 for normal text, 3:1 for large text (24px, or 18.66px bold). Disabled controls are exempt.
() => {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number); return { r, g, b, a }; };
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ({ r, g, b }) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  function background(el) {
    for (let node = el; node; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.backgroundImage !== "none") return null; // patterned: not measurable this way
      const bg = parse(style.backgroundColor);
      if (bg && bg.a > 0.99) return bg;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  }
  const failures = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let text = walker.nextNode(); text; text = walker.nextNode()) {
    const el = text.parentElement;
    if (!text.textContent.trim() || !el || el.closest(".sr-only, [hidden], .toast, :disabled, .disabled, [aria-disabled='true']")) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (!box.width || !box.height || style.visibility === "hidden" || style.display === "none") continue;
    const fg = parse(style.color);
    const bg = background(el);
    if (!fg || !bg) continue;
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const r = ratio(fg, bg);
    if (r < (large ? 3 : 4.5)) failures.push(`${r.toFixed(2)} ${style.color} on ${JSON.stringify(bg)}: “${text.textContent.trim().slice(0, 40)}”`);
  }
  return failures;
}
