// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { buildFragment, encodeParams, parseFragment } from "./link.ts";

describe("deep-link fragment", () => {
  it("keeps TensorBoard's plugin name first and our keys after it", () => {
    const p = new URLSearchParams({ start: "1.5", run: "a b", tool: "trace", host: "w0,w1", session: "s" });
    expect(buildFragment("profscope", p)).toBe("#profscope&run=a%20b&session=s&host=w0%2Cw1&tool=trace&start=1.5");
    expect(buildFragment("", p)).toBe("#run=a%20b&session=s&host=w0%2Cw1&tool=trace&start=1.5");
  });

  it("round-trips names with &, = and non-ASCII characters", () => {
    const p = new URLSearchParams({ run: "exp&1=ü/δ", sel: "4294967301" });
    const back = parseFragment(buildFragment("profscope", p), "profscope");
    expect(back.get("run")).toBe("exp&1=ü/δ");
    expect(back.get("sel")).toBe("4294967301");
  });

  it("ignores fragments of other plugins", () => {
    expect([...parseFragment("#scalars&run=x", "profscope")]).toEqual([]);
    expect([...parseFragment("#profscope", "profscope")]).toEqual([]);
    expect(parseFragment("#profscope&run=x", "profscope").get("run")).toBe("x");
  });

  it("orders keys stably", () => {
    expect(encodeParams(new URLSearchParams("b=1&a=2&run=r"))).toBe("run=r&a=2&b=1");
  });
});

describe("fragment store history", () => {
  it("pushes an entry only when asked, else replaces the current one", async () => {
    const { fragmentStore } = await import("./link.ts");
    const store = fragmentStore(window);
    const before = window.history.length;
    store.write(new URLSearchParams("tool=trace&start=1"));
    store.write(new URLSearchParams("tool=trace&start=2"));
    expect(window.history.length).toBe(before);
    store.write(new URLSearchParams("tool=roofline"), true);
    expect(window.history.length).toBe(before + 1);
    expect(store.read().get("tool")).toBe("roofline");
  });
});
