// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { MeasureReadout } from "./measure.ts";

describe("measure readout", () => {
  it("shows the latest measurement in words, and hides without one", () => {
    const m = new MeasureReadout();
    m.show({ start: 3e6, end: 4.2e6, stepNs: 1 });
    expect(m.el.hidden).toBe(false);
    expect(m.el.querySelector("[data-testid=measure-duration]")?.textContent).toBe("1.2 ms");
    expect(m.el.querySelector("[data-testid=measure-from]")?.textContent).toBe("3.000000 ms");
    expect(m.el.querySelector("[data-testid=measure-to]")?.textContent).toBe("4.200000 ms");
    m.show(null);
    expect(m.el.hidden).toBe(true);
  });
});
