/** The server's ingest progress while it reads a profile into its cache (the 202 answer of any route
 * that needs the trace), shown the same way by every view that waits for one. */

import type { IngestProgress } from "../api/types.ts";
import { clear, h } from "../dom.ts";
import css from "./progress.css";
import { ensureStyle } from "./style.ts";
import { formatBytes } from "./units.ts";

/** "Reading the profile: 40% (12.5 MiB of 31.2 MiB) · events", or without sizes while they are unknown. */
export function progressText(p: IngestProgress): string {
  const read =
    p.bytes_total > 0
      ? `Reading the profile: ${((p.bytes_done / p.bytes_total) * 100).toFixed(0)}% (${formatBytes(p.bytes_done)} of ${formatBytes(p.bytes_total)})`
      : "Reading the profile…";
  return read + (p.stage ? ` · ${p.stage}` : "");
}

/** `title` ("Loading trace…") with a progress bar and text that `progress` updates. */
export function ingestProgress(title: string): { el: HTMLElement; progress(p: IngestProgress): void } {
  ensureStyle("ps-progress-style", css);
  const box = h("div", { class: "ps-progress", "data-testid": "ingest-progress" });
  const progress = (p: IngestProgress) => {
    clear(box);
    const fraction = p.bytes_total > 0 ? p.bytes_done / p.bytes_total : 0;
    const bar = h("div", { class: "ps-progress-bar" });
    bar.style.width = `${(fraction * 100).toFixed(1)}%`;
    box.append(h("div", { class: "ps-progress-track" }, bar), h("div", {}, progressText(p)));
  };
  return { el: h("div", { class: "ps-loading" }, title, box), progress };
}
