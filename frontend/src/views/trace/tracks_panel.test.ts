// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { emptyChoice, type TrackChoice } from "./tracks.ts";
import { TracksPanel } from "./tracks_panel.ts";

const meta = makeTrace(2, 3).meta;

function panel(trace = meta) {
  let choice: TrackChoice = emptyChoice();
  const folded = new Set<number>();
  const p = new TracksPanel({
    meta: () => trace,
    choice: () => choice,
    setChoice: (c) => (choice = c),
    folded: () => folded,
    toggleSection: (id) => (folded.has(id) ? folded.delete(id) : folded.add(id)),
  });
  document.body.append(p.el);
  const q = <T extends HTMLElement>(id: string) => p.el.querySelector(`[data-testid=${id}]`) as T;
  return { p, q, choice: () => choice, folded };
}

describe("TracksPanel", () => {
  it("opens from its button and brings the device first with one more click", () => {
    const { p, q, choice } = panel();
    expect(p.isOpen).toBe(false);
    q("tracks-button").click();
    expect(p.isOpen).toBe(true);
    q("tracks-preset-device-first").click();
    expect(choice().pinned).toEqual([2, 3]);
    expect(q("tracks-pin-2").textContent).toBe("Pinned");
    // No track of Python frames in this trace: that preset says why it is off.
    expect((q("tracks-preset-hide-python") as HTMLButtonElement).disabled).toBe(true);
  });

  it("hides a Kineto thread's Python track with its preset", () => {
    const python = { ...meta.tracks[0], id: 4, name: `${meta.tracks[0].name} · Python` };
    const { q, choice } = panel({ ...meta, tracks: [...meta.tracks, python] });
    q("tracks-button").click();
    const preset = q<HTMLButtonElement>("tracks-preset-hide-python");
    expect(preset.disabled).toBe(false);
    preset.click();
    expect(choice().hiddenKinds).toEqual(new Set(["python"]));
    expect(q<HTMLInputElement>("tracks-show-4").checked).toBe(false);
    expect(q<HTMLInputElement>("tracks-show-0").checked).toBe(true);
    expect(q<HTMLInputElement>("tracks-kind-python").checked).toBe(false);
  });

  it("hides, pins, limits the depth of a track, filters, hides a kind and folds a section", () => {
    const { q, choice, folded } = panel();
    q("tracks-button").click();
    q("tracks-show-1").click();
    expect(choice().hidden.has(1)).toBe(true);
    q("tracks-pin-0").click();
    expect(choice().pinned).toEqual([0]);
    const depth = q<HTMLInputElement>("tracks-depth-0");
    depth.value = "2";
    depth.dispatchEvent(new Event("change"));
    expect(choice().depthLimit.get(0)).toBe(2);
    const filter = q<HTMLInputElement>("tracks-filter");
    filter.value = "stream";
    filter.dispatchEvent(new Event("input"));
    expect(choice().filter).toBe("stream");
    expect(q("tracks-list").querySelectorAll("[data-track]")).toHaveLength(1);
    q("tracks-kind-device").click();
    expect(choice().hiddenKinds.has("device")).toBe(true);
    q("tracks-fold-1").click();
    expect(folded.has(1)).toBe(true);
    expect(q("tracks-fold-1").textContent).toBe("Unfold");
  });
});
