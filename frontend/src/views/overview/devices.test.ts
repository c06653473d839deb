// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { devicesSection } from "./devices.ts";
import { gpuAnswer } from "./test_answers.ts";

function gpuHost() {
  return gpuAnswer().per_host[0];
}

describe("devices section", () => {
  it("says the window the device figures use and the graph launches above them", () => {
    const host = gpuHost();
    host.devices.scope = "device active region";
    host.devices.window_note = "analysed 12.9 s of device activity out of a 43.4 s capture";
    host.devices.graph_note = "6 device events ran through 2 graph launches (cudaGraphLaunch)";
    const { el } = devicesSection(host);
    expect(el.querySelector("h3")?.textContent).toBe("Device (device active region)");
    expect(el.querySelector("[data-testid=ov-device-window]")?.textContent).toBe(host.devices.window_note);
    expect(el.querySelector("[data-testid=ov-device-graphs]")?.textContent).toBe(host.devices.graph_note);
  });

  it("lists the launches left out of the delay distribution, rule by rule", () => {
    const host = gpuHost();
    host.devices.launch_excluded = [
      { kind: "synchronous", count: 10, rule: "the call waited", text: "10 launches excluded: synchronous calls (the call waited for the device)" },
      { kind: "negative", count: 77, rule: "clocks", text: "77 launches excluded: negative", max_ns: 9_000 },
    ];
    const { el } = devicesSection(host);
    const items = [...el.querySelectorAll("[data-testid=ov-launch-excluded] li")];
    expect(items.map((li) => li.getAttribute("data-kind"))).toEqual(["synchronous", "negative"]);
    expect(items[0].textContent).toBe("10 launches excluded: synchronous calls (the call waited for the device)");
    expect(items[1].getAttribute("title")).toBe("clocks");
  });

  it("shows no notes where the answer has none", () => {
    const { el } = devicesSection(gpuHost());
    expect(el.querySelector("[data-testid=ov-device-window], [data-testid=ov-device-graphs], [data-testid=ov-launch-excluded]")).toBeNull();
  });
});
