// explore()'s heatmap: plotly's FigureWidget, whose 5 MB module (plotly.js inside) is not this module but the
// `source` of one shared PlotlyCode widget (widget.py). A saved notebook stores it once, and the page imports it
// once, however many heatmaps there are.
//
// anywidget imports this small module once per heatmap, so what the heatmaps share lives on globalThis: the
// import of plotly's module, one per plotly version.

const REFERENCE = "IPY_MODEL_";

function plotlyModule(model) {
  const imports = (globalThis.attentionExplorerPlotly ??= new Map());
  const version = model.get("_plotly_version");
  if (!imports.has(version)) {
    const loading = (async () => {
      const code = await model.widget_manager.get_model(model.get("_plotly_code").slice(REFERENCE.length));
      const url = URL.createObjectURL(new Blob([code.get("source")], { type: "text/javascript" }));
      try {
        return await import(/* webpackIgnore: true */ url);
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
    loading.catch(() => imports.delete(version)); // a failed import is tried again by the next heatmap
    imports.set(version, loading);
  }
  return imports.get(version);
}

export default () => {
  let figure; // plotly's own widget for this model: its initialize and render
  let ready;
  return {
    // Not awaited: anywidget holds a model's messages until its initialize ends, and drops all of them for good if
    // that takes over 2 s (an import of 5 MB can). A heatmap arrives with its whole figure in its state; its first
    // message comes from a click, after it is drawn.
    initialize({ model, experimental }) {
      ready = plotlyModule(model).then((plotly) => {
        figure = plotly.default();
        return figure.initialize({ model, experimental });
      });
      ready.catch((error) => console.error("[attention explore] plotly's widget did not load", error));
    },
    async render(view) {
      await ready;
      return figure.render(view);
    },
  };
};
