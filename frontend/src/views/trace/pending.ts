/** Hosts of a merged timeline that are still being ingested (`TraceMeta.pending_hosts`): the view
 * shows the hosts that are ready, lists these with their progress, and asks `trace/meta` again until
 * they arrive. A host that arrives changes host indices, track and event ids, so the viewer then
 * opens the new metadata afresh (`arrived`). */

import type { PendingHost } from "../../api/answers.gen.ts";
import type { MetaAnswer } from "../../api/client.ts";
import type { TraceMeta } from "../../api/types.ts";
import { h, isAbort } from "../../dom.ts";
import { formatBytes } from "../../shared/units.ts";

/** First and longest wait between two looks at `trace/meta` while hosts are pending. */
export const POLL_FIRST_MS = 700;
export const POLL_MAX_MS = 3000;

/** "host07: 40% of 12.5 MiB · reading" (the share only once the size is known). */
export function pendingText(p: PendingHost): string {
  const share = p.bytes_total > 0 ? `${((p.bytes_done / p.bytes_total) * 100).toFixed(0)}% of ${formatBytes(p.bytes_total)}` : "size unknown";
  return `${p.name}: ${share}${p.stage ? ` · ${p.stage}` : ""}`;
}

/** The notice listing the pending hosts, or null when there are none. */
export function pendingNotice(hosts: readonly PendingHost[]): HTMLElement | null {
  if (!hosts.length) return null;
  const title = `${hosts.length} host${hosts.length > 1 ? "s" : ""} still being read, shown when ready:`;
  return h(
    "div",
    { class: "ps-notice", "data-testid": "pending-hosts" },
    h("details", { open: "" }, h("summary", {}, title), h("ul", {}, ...hosts.map((p) => h("li", { "data-host": p.name }, pendingText(p))))),
  );
}

/** Whether `next` puts other hosts on the timeline than `shown` (one arrived, or all did). */
export function hostsChanged(shown: TraceMeta, next: TraceMeta): boolean {
  const a = shown.hosts.map((x) => x.name);
  const b = next.hosts.map((x) => x.name);
  return a.length !== b.length || a.some((name, i) => name !== b[i]);
}

export interface PendingHooks {
  /** Another look at `trace/meta` (202 while no host is ready any more, e.g. after a cache reset). */
  poll(signal: AbortSignal): Promise<MetaAnswer>;
  /** The same hosts are shown; the pending ones got on. */
  progress(pending: PendingHost[]): void;
  /** Other hosts are ready: the metadata to open instead. */
  arrived(meta: TraceMeta): void;
}

/** Polls `trace/meta` while the shown metadata has pending hosts; one watch at a time. */
export class PendingWatch {
  private controller: AbortController | null = null;

  constructor(
    private readonly hooks: PendingHooks,
    private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void> = abortableSleep,
  ) {}

  /** Starts watching `meta` (stopping an earlier watch); nothing to do when no host is pending. */
  watch(meta: TraceMeta): void {
    this.stop();
    if (!meta.pending_hosts?.length) return;
    const controller = new AbortController();
    this.controller = controller;
    void this.loop(meta, controller.signal);
  }

  stop(): void {
    this.controller?.abort(new DOMException("stopped", "AbortError"));
    this.controller = null;
  }

  private async loop(shown: TraceMeta, signal: AbortSignal): Promise<void> {
    let delay = POLL_FIRST_MS;
    try {
      for (;;) {
        await this.sleep(delay, signal);
        delay = Math.min(delay * 1.5, POLL_MAX_MS);
        let answer: MetaAnswer;
        try {
          answer = await this.hooks.poll(signal);
        } catch (e) {
          if (isAbort(e) || signal.aborted) return;
          continue; // a failed look is tried again; the trace on screen stays usable
        }
        if (signal.aborted) return;
        if (answer.state !== "ready") continue;
        if (hostsChanged(shown, answer.meta) || !answer.meta.pending_hosts?.length) {
          this.controller = null;
          this.hooks.arrived(answer.meta);
          return;
        }
        this.hooks.progress(answer.meta.pending_hosts);
      }
    } catch (e) {
      if (!isAbort(e)) throw e;
    }
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
