/** Chart.js with only the parts profscope draws with registered, so esbuild leaves the rest out.
 * Imported only through `loadCharts()` (charts.ts): it and Chart.js become one chunk that the views
 * which chart fetch on first use, and the shell never loads. */

import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  LinearScale,
  LineElement,
  LogarithmicScale,
  PointElement,
  ScatterController,
  Tooltip,
} from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LogarithmicScale, LineElement, PointElement, ScatterController, Tooltip);
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
Chart.defaults.font.size = 11;
// Charts show measurements: they appear at once, and redraw at once on filtering and resizing.
Chart.defaults.animation = false;

export { Chart };
