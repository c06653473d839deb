import { describe, expect, it } from "vitest";
import { type LinkCodec, LinkedOptions, Loads } from "./view_state.ts";

interface Options {
  step: number | null;
}

const codec: LinkCodec<Options> = {
  read: (p) => ({ step: p.has("step") ? Number(p.get("step")) : null }),
  same: (a, b) => a.step === b.step,
  params: (o) => ({ step: o.step === null ? undefined : String(o.step) }),
};

function linked(link: string): { options: LinkedOptions<Options>; written: Record<string, string | undefined>[]; changes: boolean[] } {
  const written: Record<string, string | undefined>[] = [];
  const changes: boolean[] = [];
  const options = new LinkedOptions(codec, { params: new URLSearchParams(link), setParams: (p) => written.push(p) }, (fromLink) => changes.push(fromLink));
  return { options, written, changes };
}

describe("LinkedOptions", () => {
  it("starts from the link, writes what the user changes, ignores what changes nothing", () => {
    const { options, written, changes } = linked("step=3");
    expect(options.value).toEqual({ step: 3 });
    options.set({ step: 3 });
    expect([written, changes]).toEqual([[], []]);
    options.set({ step: null });
    expect(options.value).toEqual({ step: null });
    expect([written, changes]).toEqual([[{ step: undefined }], [false]]);
  });

  it("takes a changed link without writing it back", () => {
    const { options, written, changes } = linked("");
    options.fromLink(new URLSearchParams(""));
    options.fromLink(new URLSearchParams("step=7"));
    expect(options.value).toEqual({ step: 7 });
    expect([written, changes]).toEqual([[], [true]]);
  });
});

describe("Loads", () => {
  it("aborts the load before when the next starts, and the one in flight with the view", () => {
    const view = new AbortController();
    const loads = new Loads(view.signal);
    const first = loads.next();
    const second = loads.next();
    expect([first.signal.aborted, second.signal.aborted]).toEqual([true, false]);
    expect([first.latest(), second.latest()]).toEqual([false, true]);
    view.abort();
    expect(second.signal.aborted).toBe(true);
  });

  it("shows the answer of the latest load only, and fails with any other error than an abort", async () => {
    const loads = new Loads(new AbortController().signal);
    const seen: string[] = [];
    const show = (answer: string) => void seen.push(`show ${answer}`);
    const fail = (e: unknown) => void seen.push(`fail ${(e as Error).message}`);
    let release = () => {};
    const stale = loads.run((signal) => new Promise<string>((resolve) => (release = () => resolve(signal.aborted ? "stale (aborted)" : "stale"))), show, fail);
    await loads.run(async () => "fresh", show, fail);
    release();
    await stale;
    await loads.run(() => Promise.reject(new Error("400 bad step")), show, fail);
    await loads.run(() => Promise.reject(new DOMException("gone", "AbortError")), show, fail);
    await loads.run(
      async () => "drawn",
      () => {
        throw new Error("render failed");
      },
      fail,
    );
    expect(seen).toEqual(["show fresh", "fail 400 bad step", "fail render failed"]);
  });

  it("lets an ended load go from the view's signal", () => {
    const view = new AbortController();
    const loads = new Loads(view.signal);
    const load = loads.next();
    load.end();
    view.abort();
    expect(load.signal.aborted).toBe(false);
    loads.abort();
    expect(load.signal.aborted).toBe(true);
  });
});
