// The layout of the current step in presenter mode, measured from the DOM (tests/e2e/test_presenter.py).
(limits) => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const boxOf = (el) => { const r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const overlap = (a, b, slack) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > slack && Math.min(a.b, b.b) - Math.max(a.t, b.t) > slack;
  const inside = (a, b, slack) => a.l >= b.l - slack && a.r <= b.r + slack && a.t >= b.t - slack && a.b <= b.b + slack;
  const shown = (el) => {
    for (let e = el; e && e !== main; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return false;
    }
    const r = el.getBoundingClientRect();
    return r.width >= 2 && r.height >= 2;
  };
  const out = {charts: [], small: [], overlaps: [], missing: [], outside: []};
  // Text: the smallest computed font size of every visible text node.
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || !shown(el)) continue;
    if (el.closest('.katex-mathml, .modebar, .hoverlayer, [data-testid="stIconMaterial"]')) continue;
    const matrix = el instanceof SVGGraphicsElement ? el.getCTM() : null;  // plotly shrinks a bar's value with a scale
    const size = parseFloat(getComputedStyle(el).fontSize) * (matrix ? Math.hypot(matrix.a, matrix.b) : 1);
    const code = !!el.closest('pre, code, [data-testid="stCode"]');
    if (size < (code ? limits.code : limits.text) - 0.05) out.small.push(`${size.toFixed(1)}px "${text.slice(0, 30)}"`);
  }
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const title = (plot.layout && plot.layout.title && plot.layout.title.text) || '(untitled)';
    const frame = boxOf(plot);
    out.charts.push({title, bottom: frame.b});
    const areas = [...plot.querySelectorAll('.draglayer .nsewdrag')].map(boxOf);
    const ticks = [...plot.querySelectorAll('.xtick text, .ytick text')].filter(shown);
    const titles = [...plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-gtitle text')].filter(shown);
    const boxes = ticks.map((t) => ({text: t.textContent, box: boxOf(t)}));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (overlap(boxes[i].box, boxes[j].box, 1)) out.overlaps.push(`${title}: ticks "${boxes[i].text}" / "${boxes[j].text}"`);
      }
      for (const t of titles) {
        if (overlap(boxes[i].box, boxOf(t), 1)) out.overlaps.push(`${title}: tick "${boxes[i].text}" / title "${t.textContent}"`);
      }
      for (const area of areas) {
        if (overlap(boxes[i].box, area, 2)) out.overlaps.push(`${title}: tick "${boxes[i].text}" on a plot area`);
      }
      if (!inside(boxes[i].box, frame, 1)) out.outside.push(`${title}: tick "${boxes[i].text}"`);
    }
    // Value labels printed in cells or on bars.
    const values = [...plot.querySelectorAll('.barlayer text, .textpoint text, .heatmaplayer text, .scatterlayer text')]
      .filter(shown).filter((t) => t.textContent.trim()).map((t) => ({text: t.textContent, box: boxOf(t)}));
    if (values.length <= 400) {
      for (let i = 0; i < values.length; i++) {
        for (let j = i + 1; j < values.length; j++) {
          if (overlap(values[i].box, values[j].box, 1)) out.overlaps.push(`${title}: values "${values[i].text}" / "${values[j].text}"`);
        }
      }
    }
    for (const v of values) if (!inside(v.box, frame, 1)) out.outside.push(`${title}: value "${v.text}"`);
    // A highlighted row keeps its label.
    for (const shape of (plot.layout.shapes || [])) {
      if (!shape.line || shape.line.color !== limits.highlight || shape.type !== 'rect') continue;
      const row = (shape.y0 + shape.y1) / 2;
      const axis = plot.layout.yaxis || {};
      if (!(axis.tickvals || []).includes(row)) out.missing.push(`${title}: row ${row}`);
    }
  }
  return out;
}
