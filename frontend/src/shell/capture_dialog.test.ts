// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import type { Captured, CaptureStatus } from "./capture.ts";
import { CaptureDialog } from "./capture_dialog.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const ON: CaptureStatus = { enabled: true, allowed: ["loopback"], message: "", logdir: "/logs", grpc_installed: true };

function dialog(status: CaptureStatus, answer: () => Response = () => Response.json({ run: "new", session: "s1", hosts: ["localhost"] })) {
  const landed: Captured[] = [];
  const posts: unknown[] = [];
  const d = new CaptureDialog(
    BASE,
    { runs: () => ["old", "exp"], currentRun: () => "exp", landed: (c) => landed.push(c) },
    async (url, init) => {
      if (url.endsWith("capture/status")) return Response.json(status);
      posts.push(JSON.parse(String(init?.body)));
      return answer();
    },
  );
  document.body.append(d.button, d.el);
  const q = <T extends HTMLElement>(id: string) => d.el.querySelector(`[data-testid=${id}]`) as T;
  return { d, landed, posts, q };
}

afterEach(() => {
  document.body.innerHTML = "";
  localStorage.clear();
});

describe("capture dialog", () => {
  it("explains how to turn capturing on when it is off", async () => {
    const { d, q } = dialog({ ...ON, enabled: false, message: "Capturing is off. Start TensorBoard with --profscope_capture" });
    await d.open();
    expect(q("capture-off").hidden).toBe(false);
    expect(q("capture-off").textContent).toContain("tensorboard --logdir /logs --profscope_capture");
    expect(q("capture-form").hidden).toBe(true);
    expect(q("capture-start").hidden).toBe(true);
    // The PyTorch way needs no server: always offered.
    expect(q("capture-snippet").textContent).toContain('tensorboard_trace_handler("/logs/capture")');
  });

  it("captures into an existing run and hands the session over", async () => {
    const { d, q, posts, landed } = dialog(ON);
    await d.open();
    expect(q<HTMLSelectElement>("capture-run-select").value).toBe("exp");
    q<HTMLInputElement>("capture-addresses").value = "localhost:9012, localhost:9013";
    q<HTMLInputElement>("capture-run-existing").checked = true;
    q<HTMLInputElement>("capture-duration").value = "500";
    await d.capture();
    expect(posts).toEqual([
      expect.objectContaining({ addresses: ["localhost:9012", "localhost:9013"], run: "exp", duration_ms: 500 }),
    ]);
    expect(landed).toEqual([{ run: "new", session: "s1", hosts: ["localhost"] }]);
    expect(d.isOpen).toBe(false);
    expect(localStorage.getItem("profscope.capture.addresses")).toBe("localhost:9012, localhost:9013");
  });

  it("shows the server's reason when the capture fails, and checks the form first", async () => {
    const { d, q, posts } = dialog(ON, () => new Response("nothing answers at localhost:9012", { status: 502 }));
    await d.open();
    q<HTMLInputElement>("capture-addresses").value = "no-port";
    await d.capture();
    expect(posts).toEqual([]);
    expect(q("capture-error").textContent).toContain('"no-port" is not host:port');
    q<HTMLInputElement>("capture-addresses").value = "localhost:9012";
    await d.capture();
    expect(q("capture-error").textContent).toBe("Capture failed: nothing answers at localhost:9012");
    expect(q("capture-progress").hidden).toBe(true);
    expect(d.isOpen).toBe(true);
  });
});
