/** What the timeline area shows before the trace opens: the server's ingest progress while it reads
 * the profile, or why the trace could not be opened, with a retry. */

import type { IngestProgress } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { formatBytes } from "../../shared/units.ts";

/** "Reading the profile: 40% (12.5 MiB of 31.2 MiB) · events", or without sizes while they are unknown. */
export function progressText(p: IngestProgress): string {
  const read =
    p.bytes_total > 0
      ? `Reading the profile: ${((p.bytes_done / p.bytes_total) * 100).toFixed(0)}% (${formatBytes(p.bytes_done)} of ${formatBytes(p.bytes_total)})`
      : "Reading the profile…";
  return read + (p.stage ? ` · ${p.stage}` : "");
}

/** "Loading trace…" with a progress bar that `progress` updates. */
export function loadingOverlay(): { el: HTMLElement; progress(p: IngestProgress): void } {
  const box = h("div", { class: "tv-progress", "data-testid": "ingest-progress" });
  const progress = (p: IngestProgress) => {
    clear(box);
    const frac = p.bytes_total > 0 ? p.bytes_done / p.bytes_total : 0;
    const bar = h("div", { class: "tv-progress-bar" });
    bar.style.width = `${(frac * 100).toFixed(1)}%`;
    box.append(h("div", { class: "tv-progress-track" }, bar), h("div", {}, progressText(p)));
  };
  return { el: h("div", { class: "ps-loading" }, "Loading trace…", box), progress };
}

export function errorOverlay(message: string, retry: () => void): HTMLElement {
  const button = h("button", { type: "button", class: "ps-button" }, "Retry");
  button.addEventListener("click", retry);
  return h("div", { class: "ps-error", role: "alert", "data-testid": "trace-error" }, `Could not open the trace: ${message} `, button);
}
