/** What the timeline area shows before the trace opens: the server's ingest progress while it reads
 * the profile, or why the trace could not be opened, with a retry. */

import { h } from "../../dom.ts";
import { ingestProgress } from "../../shared/progress.ts";

/** "Loading trace…" with the shared ingest progress bar that `progress` updates. */
export function loadingOverlay(): ReturnType<typeof ingestProgress> {
  return ingestProgress("Loading trace…");
}

export function errorOverlay(message: string, retry: () => void): HTMLElement {
  const button = h("button", { type: "button", class: "ps-button" }, "Retry");
  button.addEventListener("click", retry);
  return h("div", { class: "ps-error", role: "alert", "data-testid": "trace-error" }, `Could not open the trace: ${message} `, button);
}
