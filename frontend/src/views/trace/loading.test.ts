// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { progressText } from "../../shared/progress.ts";
import { errorOverlay, loadingOverlay } from "./loading.ts";

describe("loading overlay", () => {
  it("says how far the server read the profile, sizes in binary units", () => {
    const p = { state: "ingesting" as const, bytes_done: 12.5 * 1024 ** 2, bytes_total: 50 * 1024 ** 2, stage: "events", files: [] };
    expect(progressText(p)).toBe("Reading the profile: 25% (12.5 MiB of 50 MiB) · events");
    expect(progressText({ state: "ingesting", bytes_done: 0, bytes_total: 0, stage: "", files: [] })).toBe("Reading the profile…");
    const overlay = loadingOverlay();
    overlay.progress(p);
    expect(overlay.el.querySelector("[data-testid=ingest-progress]")?.textContent).toContain("12.5 MiB of 50 MiB");
    expect((overlay.el.querySelector(".ps-progress-bar") as HTMLElement).style.width).toBe("25.0%");
  });

  it("offers a retry when the trace cannot be opened", () => {
    let retried = 0;
    const el = errorOverlay("boom", () => retried++);
    expect(el.dataset.testid).toBe("trace-error");
    expect(el.textContent).toContain("Could not open the trace: boom");
    el.querySelector("button")?.click();
    expect(retried).toBe(1);
  });
});
