import { describe, expect, it } from "vitest";
import {
  ADDRESSES_KEY,
  CaptureApi,
  CaptureFailed,
  captureBody,
  DEFAULT_FORM,
  formProblems,
  parseAddresses,
  progressText,
  pytorchSnippet,
  recallAddresses,
  rememberAddresses,
} from "./capture.ts";

const BASE = "http://tb.local/data/plugin/profscope/";

describe("capture form", () => {
  it("reads addresses separated by commas, spaces or lines", () => {
    expect(parseAddresses(" localhost:9012,worker-1:9012\n[::1]:7 ")).toEqual(["localhost:9012", "worker-1:9012", "[::1]:7"]);
  });

  it("says what is wrong before sending", () => {
    expect(formProblems(DEFAULT_FORM)).toEqual([]);
    expect(formProblems({ ...DEFAULT_FORM, addresses: "" })).toEqual(["Give at least one profiler server address (host:port)."]);
    expect(formProblems({ ...DEFAULT_FORM, addresses: "localhost" })[0]).toContain('"localhost" is not host:port');
    expect(formProblems({ ...DEFAULT_FORM, durationMs: 0 })).toEqual(["Duration is 1 to 600000 ms."]);
    expect(formProblems({ ...DEFAULT_FORM, run: "../up" })).toHaveLength(1);
    expect(formProblems({ ...DEFAULT_FORM, run: "exp/plugins" })).toHaveLength(1);
    expect(formProblems({ ...DEFAULT_FORM, run: "exp/lr_0.1" })).toEqual([]);
  });

  it("sends the route's body", () => {
    expect(captureBody({ ...DEFAULT_FORM, addresses: "a:1, b:2", delayMs: 500 })).toEqual({
      addresses: ["a:1", "b:2"],
      duration_ms: 2000,
      delay_ms: 500,
      host_tracer_level: 2,
      python_tracer_level: 0,
      device_tracer_level: 1,
      run: "capture",
    });
  });

  it("words the progress: waiting, recording, writing", () => {
    const form = { ...DEFAULT_FORM, addresses: "a:1, b:2", delayMs: 1000, durationMs: 2000 };
    expect(progressText(form, 250)).toBe("Waiting 0.8 s before recording on 2 servers…");
    expect(progressText(form, 1500)).toBe("Recording on 2 servers: 0.5 s of 2.0 s…");
    expect(progressText({ ...form, addresses: "a:1" }, 3500)).toBe("Recorded; a:1 writing the profile into the logdir…");
  });

  it("remembers the addresses", () => {
    const kept = new Map<string, string>();
    const storage = { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => void kept.set(k, v) };
    expect(recallAddresses(storage)).toBe(DEFAULT_FORM.addresses);
    rememberAddresses(storage, "a:1\nb:2");
    expect(kept.get(ADDRESSES_KEY)).toBe("a:1, b:2");
    expect(recallAddresses(storage)).toBe("a:1, b:2");
    const refusing = {
      getItem: () => {
        throw new Error("denied");
      },
    };
    expect(recallAddresses(refusing)).toBe(DEFAULT_FORM.addresses);
  });

  it("writes the PyTorch trace handler into the run's folder", () => {
    const snippet = pytorchSnippet("/data/logs/", "bert");
    expect(snippet).toContain('tensorboard_trace_handler("/data/logs/bert")');
    expect(snippet).toContain("prof.step()");
    expect(pytorchSnippet("gs://b/logs", ".")).toContain('tensorboard_trace_handler("gs://b/logs")');
  });
});

describe("capture api", () => {
  it("posts JSON with TensorBoard's XSRF header and returns the session", async () => {
    const seen: { url: string; init?: RequestInit }[] = [];
    const api = new CaptureApi(BASE, async (url, init) => {
      seen.push({ url, init });
      return new Response(JSON.stringify({ run: "capture", session: "2026_01_02_03_04_05", hosts: ["localhost"] }), {
        headers: { "Content-Type": "application/json" },
      });
    });
    const landed = await api.capture(DEFAULT_FORM);
    expect(landed.session).toBe("2026_01_02_03_04_05");
    expect(seen[0].url).toBe(`${BASE}capture`);
    expect(seen[0].init?.method).toBe("POST");
    expect(seen[0].init?.headers).toEqual({ "Content-Type": "application/json", "X-XSRF-Protected": "1" });
    expect(JSON.parse(String(seen[0].init?.body)).addresses).toEqual(["localhost:9012"]);
  });

  it("carries the server's reason and kind when a capture fails", async () => {
    const api = new CaptureApi(BASE, async () =>
      new Response("nothing answers at localhost:9012", { status: 502, headers: { "X-Profscope-Capture-Error": "unreachable" } }),
    );
    const failure = await api.capture(DEFAULT_FORM).catch((e) => e);
    expect(failure).toBeInstanceOf(CaptureFailed);
    expect(failure.message).toBe("nothing answers at localhost:9012");
    expect([failure.status, failure.kind]).toEqual([502, "unreachable"]);
  });
});
