// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import type { PendingHost } from "../../api/answers.gen.ts";
import type { MetaAnswer } from "../../api/client.ts";
import type { TraceMeta } from "../../api/types.ts";
import { Notices } from "./notices.ts";
import { hostsChanged, pendingText, PendingWatch } from "./pending.ts";

function pending(name: string, done: number, stage = "reading"): PendingHost {
  return { name, path: `s/${name}.xplane.pb`, bytes_done: done, bytes_total: 1024 ** 2, stage };
}

function metaWith(hosts: string[], waiting: PendingHost[]): TraceMeta {
  const meta = makeTrace(1, 1).meta;
  meta.hosts = hosts.map((name) => ({ ...meta.hosts[0], name }));
  meta.pending_hosts = waiting;
  return meta;
}

/** A watch whose sleeps return at once and whose polls answer from `answers`, in order. */
function watchOver(answers: MetaAnswer[]) {
  const seen: { progress: PendingHost[][]; arrived: TraceMeta[] } = { progress: [], arrived: [] };
  let polls = 0;
  let finished: () => void = () => {};
  const done = new Promise<void>((resolve) => (finished = resolve));
  const watch = new PendingWatch(
    {
      poll: async () => {
        const answer = answers[polls++];
        if (!answer) throw new Error("no more answers");
        return answer;
      },
      progress: (hosts) => seen.progress.push(hosts),
      arrived: (meta) => {
        seen.arrived.push(meta);
        finished();
      },
    },
    async () => {},
  );
  return { watch, seen, done, polls: () => polls };
}

describe("pending hosts", () => {
  it("says how far each pending host is read, and lists them above the timeline", () => {
    expect(pendingText(pending("h1", 512 * 1024))).toBe("h1: 50% of 1 MiB · reading");
    expect(pendingText({ ...pending("h2", 0, "queued on the cluster"), bytes_total: 0 })).toBe("h2: size unknown · queued on the cluster");
    const notices = new Notices();
    notices.showTrace(metaWith(["h0"], [pending("h1", 0), pending("h2", 0)]));
    const list = notices.el.querySelector("[data-testid=pending-hosts]");
    expect(list?.textContent).toContain("2 hosts still being read, shown when ready:");
    expect([...(list?.querySelectorAll("li") ?? [])].map((li) => li.dataset.host)).toEqual(["h1", "h2"]);
    notices.showPending([pending("h2", 256 * 1024)]);
    expect(notices.el.querySelectorAll("[data-testid=pending-hosts]")).toHaveLength(1);
    expect(notices.el.textContent).toContain("h2: 25% of 1 MiB");
    notices.showPending([]);
    expect(notices.el.querySelector("[data-testid=pending-hosts]")).toBeNull();
  });

  it("tells apart metadata that shows other hosts", () => {
    const shown = metaWith(["h0"], [pending("h1", 0)]);
    expect(hostsChanged(shown, metaWith(["h0"], [pending("h1", 9)]))).toBe(false);
    expect(hostsChanged(shown, metaWith(["h0", "h1"], []))).toBe(true);
    expect(hostsChanged(shown, metaWith(["h1"], [pending("h0", 0)]))).toBe(true);
  });

  it("polls while hosts are pending, reports their progress, and hands over the metadata once one arrives", async () => {
    const shown = metaWith(["h0"], [pending("h1", 0), pending("h2", 0)]);
    const later = metaWith(["h0", "h2"], [pending("h1", 10)]);
    const { watch, seen, done, polls } = watchOver([
      { state: "ready", meta: metaWith(["h0"], [pending("h1", 5), pending("h2", 7)]) },
      { state: "ingesting", bytes_done: 0, bytes_total: 0, stage: "", files: [] },
      { state: "ready", meta: later },
    ]);
    watch.watch(shown);
    await done;
    expect(seen.progress).toEqual([[pending("h1", 5), pending("h2", 7)]]);
    expect(seen.arrived).toEqual([later]);
    expect(polls()).toBe(3);
  });

  it("does not poll a complete timeline, and stops when asked", async () => {
    const complete = watchOver([]);
    complete.watch.watch(metaWith(["h0", "h1"], []));
    await new Promise((r) => setTimeout(r, 0));
    expect(complete.polls()).toBe(0);

    let polls = 0;
    const stopped = new PendingWatch(
      {
        poll: async () => {
          polls++;
          return { state: "ready", meta: metaWith(["h0"], [pending("h1", 0)]) };
        },
        progress: () => {},
        arrived: () => {},
      },
      (_ms, signal) => new Promise((resolve, reject) => (signal.aborted ? reject(signal.reason) : setTimeout(resolve, 1))),
    );
    stopped.watch(metaWith(["h0"], [pending("h1", 0)]));
    await new Promise((r) => setTimeout(r, 20));
    stopped.stop();
    const after = polls;
    await new Promise((r) => setTimeout(r, 20));
    expect(after).toBeGreaterThan(0);
    expect(polls).toBeLessThanOrEqual(after + 1);
  });
});
