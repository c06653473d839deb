/** The notices above the timeline: the trace's warnings, what each host's reader skipped, the hosts
 * of a merged timeline still being read (`pending.ts`), and tiles that could not be loaded (one line,
 * replaced by the latest failure). */

import { ApiError } from "../../api/client.ts";
import type { PendingHost } from "../../api/answers.gen.ts";
import type { TraceMeta } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import { pendingNotice } from "./pending.ts";
import type { TileId } from "./tilecache.ts";

export class Notices {
  readonly el = h("div", { class: "tv-notices" });

  showTrace(meta: TraceMeta): void {
    clear(this.el);
    for (const w of meta.warnings ?? []) this.el.append(h("div", { class: "ps-notice" }, w));
    for (const host of meta.hosts) {
      const skipped = Object.entries(host.skipped ?? {});
      const nSkipped = skipped.reduce((a, [, n]) => a + n, 0);
      if (!host.warnings?.length && !nSkipped) continue;
      const parts: string[] = [];
      if (nSkipped) parts.push(`skipped ${formatCount(nSkipped)} records (${skipped.map(([r, n]) => `${r}: ${formatCount(n)}`).join(", ")})`);
      if (host.warnings?.length) parts.push(`${host.warnings.length} warning${host.warnings.length > 1 ? "s" : ""}`);
      const more = h("details", {}, h("summary", {}, `${host.name}: ${parts.join("; ")}`), h("ul", {}, ...(host.warnings ?? []).map((w) => h("li", {}, w))));
      this.el.append(h("div", { class: "ps-notice" }, more));
    }
    this.showPending(meta.pending_hosts ?? []);
  }

  /** Lists the hosts still being read with their progress (replacing the earlier list). */
  showPending(hosts: readonly PendingHost[]): void {
    const note = pendingNotice(hosts);
    const existing = this.el.querySelector("[data-testid=pending-hosts]");
    if (existing && note) existing.replaceWith(note);
    else if (existing) existing.remove();
    else if (note) this.el.append(note);
  }

  tileFailed(id: TileId, error: Error): void {
    const msg = error instanceof ApiError ? error.message : `trace/tile level ${id.level} index ${id.index}: ${error.message}`;
    const existing = this.el.querySelector("[data-tile-error]");
    const note = h("div", { class: "ps-error", role: "alert", "data-tile-error": "1" }, `Some tiles could not be loaded: ${msg}`);
    if (existing) existing.replaceWith(note);
    else this.el.append(note);
  }
}
