// The layout of the current step in presenter mode, measured from the DOM (tests/e2e/test_presenter.py).
(limits) => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const boxOf = (el) => { const r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const overlap = (a, b, slack) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > slack && Math.min(a.b, b.b) - Math.max(a.t, b.t) > slack;
  // Side by side, two labels closer than GAP read as one: touching is a fault too. A text's box is as tall as a line
  // (the glyphs leave room above and below), so labels stacked one above the other may share 1 px of it.
  const GAP = 0.5;
  const touch = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > -GAP && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1;
  // The box a text is clipped to on screen (a subplot's plot area), from its nearest clip-path, or null.
  const clipBox = (el, plot) => {
    for (let e = el; e && e !== plot; e = e.parentElement) {
      const url = e.getAttribute && e.getAttribute('clip-path');
      const id = url && (url.match(/#([^)'"]+)/) || [])[1];
      const rect = id && document.getElementById(id) && document.getElementById(id).querySelector('rect');
      if (!rect) continue;
      const ctm = e.getScreenCTM();
      const [x, y, w, h] = ['x', 'y', 'width', 'height'].map((k) => parseFloat(rect.getAttribute(k)) || 0);
      const corner = (px, py) => new DOMPoint(px, py).matrixTransform(ctm);
      const a = corner(x, y), b = corner(x + w, y + h);
      return {l: Math.min(a.x, b.x), t: Math.min(a.y, b.y), r: Math.max(a.x, b.x), b: Math.max(a.y, b.y)};
    }
    return null;
  };
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
  // A table drawn on a canvas (st.dataframe) has no text to measure: Streamlit draws it at 14 px.
  if (limits.canvas === false) {
    const owners = new Set([...main.querySelectorAll('canvas')].filter((c) => !c.closest('.js-plotly-plot') && shown(c))
      .map((c) => c.closest('[data-testid="stDataFrame"]') || c));
    for (const owner of owners) out.small.push(`drawn on a canvas (${owner.dataset.testid || 'canvas'}), at 14 px`);
  }
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const title = (plot.layout && plot.layout.title && plot.layout.title.text) || '(untitled)';
    const frame = boxOf(plot);
    out.charts.push({title, bottom: frame.b});
    const areas = [...plot.querySelectorAll('.draglayer .nsewdrag')].map(boxOf);
    // Every axis's tick labels: each subplot's (x2, y3 ...) and the colour bar's.
    const ticks = [...plot.querySelectorAll('g[class$="tick"] > text')].filter(shown).filter((t) => t.textContent.trim());
    const titles = [...plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-gtitle text')].filter(shown);
    const boxes = ticks.map((t) => ({text: t.textContent, box: boxOf(t)}));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (touch(boxes[i].box, boxes[j].box)) out.overlaps.push(`${title}: ticks "${boxes[i].text}" / "${boxes[j].text}"`);
      }
      for (const t of titles) {
        if (touch(boxes[i].box, boxOf(t))) out.overlaps.push(`${title}: tick "${boxes[i].text}" / title "${t.textContent}"`);
      }
      for (const area of areas) {
        if (overlap(boxes[i].box, area, 2)) out.overlaps.push(`${title}: tick "${boxes[i].text}" on a plot area`);
      }
      if (!inside(boxes[i].box, frame, 1)) out.outside.push(`${title}: tick "${boxes[i].text}"`);
    }
    // Value labels printed in cells or on bars.
    const values = [...plot.querySelectorAll('.barlayer text, .textpoint text, .heatmaplayer text, .scatterlayer text')]
      .filter(shown).filter((t) => t.textContent.trim()).map((t) => ({text: t.textContent, box: boxOf(t), clip: clipBox(t, plot)}));
    values.sort((a, b) => a.box.l - b.box.l);  // a sweep from left to right: only boxes that meet across are compared
    for (let i = 0; i < values.length; i++) {
      for (let j = i + 1; j < values.length && values[j].box.l < values[i].box.r + GAP; j++) {
        if (touch(values[i].box, values[j].box)) out.overlaps.push(`${title}: values "${values[i].text}" / "${values[j].text}"`);
      }
    }
    for (const v of values) {
      if (!inside(v.box, frame, 1)) out.outside.push(`${title}: value "${v.text}"`);
      else if (v.clip && !inside(v.box, v.clip, 1)) out.outside.push(`${title}: value "${v.text}" cut off by its plot area`);
    }
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
