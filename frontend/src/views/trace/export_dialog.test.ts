// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { ExportPreview } from "../../api/answers.gen.ts";
import { ProfscopeClient } from "../../api/client.ts";
import { h } from "../../dom.ts";
import { ExportDialog, exportParams, previewLines, replacementGroups } from "./export_dialog.ts";
import { Toolbar } from "./toolbar.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const subject = { run: "bert", session: "pytorch", hosts: ["h0", "h1"] };

function preview(over: Partial<ExportPreview> = {}): ExportPreview {
  return {
    events: 2298,
    flows: 62,
    counter_samples: 0,
    start_ns: 0,
    end_ns: 5e6,
    redact: true,
    redact_shapes: false,
    redact_args: false,
    redactions: [
      { kind: "email", values: 1, occurrences: 6, capped: false },
      { kind: "path", values: 1200, occurrences: 5000, capped: true },
    ],
    replacements: [
      { kind: "email", original: "al…om", replacement: "<email-1>" },
      { kind: "path", original: "/h…e/", replacement: "<path-1>" },
    ],
    filename: "redacted.trace.json.gz",
    ...over,
  };
}

/** A client whose server answers every preview with `answer`, remembering the URLs asked. */
function fakeClient(answer: (url: URL) => ExportPreview, asked: URL[]): ProfscopeClient {
  return new ProfscopeClient(BASE, async (input) => {
    const url = new URL(input);
    asked.push(url);
    return new Response(JSON.stringify(answer(url)), { status: 200, headers: { "Content-Type": "application/json" } });
  });
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("export dialog", () => {
  it("turns its options into the export's query parameters", () => {
    const base = { range: "whole" as const, start: 10, end: 20, redact: true, shapes: false, args: false };
    expect(exportParams(base)).toEqual({ redact: 1 });
    expect(exportParams({ ...base, range: "visible", shapes: true, args: true })).toEqual({
      start: 10,
      end: 20,
      redact: 1,
      redact_shapes: 1,
      redact_args: 1,
    });
    expect(exportParams({ ...base, redact: false, shapes: true })).toEqual({});
  });

  it("writes the preview's counts, one line per redacted kind", () => {
    expect(previewLines(preview())).toEqual([
      "2,298 events, 62 flows, 0 counter samples",
      "e-mail addresses: 1 distinct, 6 places",
      "file paths (file names kept): 1,200+ distinct, 5,000 places",
    ]);
    expect(previewLines(preview({ redactions: [] }))[1]).toBe("Redaction found nothing to take out.");
    expect(previewLines(preview({ redact: false, redactions: [] }))[1]).toMatch(/^Not redacted/);
    expect(previewLines(preview({ redactions: [{ kind: "args", values: 0, occurrences: 9, capped: false }] }))[1]).toBe(
      "argument values: 9 places",
    );
    expect(previewLines(preview({ redactions: [{ kind: "host", values: 1, occurrences: 1, capped: false }] }))[1]).toBe(
      "host names: 1 distinct, 1 place",
    );
  });

  it("lists each replaced value by kind, and how many more the preview leaves out", () => {
    expect(replacementGroups(preview())).toEqual([
      { label: "e-mail addresses", values: [{ kind: "email", original: "al…om", replacement: "<email-1>" }], more: 0 },
      { label: "file paths (file names kept)", values: [{ kind: "path", original: "/h…e/", replacement: "<path-1>" }], more: 1199 },
    ]);
    const args = { kind: "args", values: 0, occurrences: 9, capped: false };
    expect(replacementGroups(preview({ redactions: [args], replacements: [] }))).toEqual([]);
    expect(replacementGroups(preview({ redact: false }))).toEqual([]);
  });

  it("counts before it offers the download, redacted by default, and follows the options", async () => {
    const asked: URL[] = [];
    const client = fakeClient((url) => preview({ redact: url.searchParams.get("redact") === "1" }), asked);
    const dialog = new ExportDialog({ client, subject, visibleRange: () => ({ start: 1000, end: 3_000_000 }) });
    const q = (id: string) => dialog.el.querySelector(`[data-testid=${id}]`) as HTMLInputElement;
    const link = q("export-download") as unknown as HTMLAnchorElement;
    expect(dialog.isOpen).toBe(false);
    dialog.open();
    expect(dialog.isOpen).toBe(true);
    expect(link.hidden).toBe(true);
    expect(q("export-preview").textContent).toMatch(/Counting/);
    await settle();
    expect(asked[0].pathname).toBe("/data/plugin/profscope/export/preview");
    expect(Object.fromEntries(asked[0].searchParams)).toEqual({ run: "bert", session: "pytorch", host: "h0,h1", redact: "1" });
    expect(q("export-preview").textContent).toContain("2,298 events");
    const values = [...dialog.el.querySelectorAll("[data-testid=export-value]")].map((e) => e.textContent);
    expect(values).toEqual(["al…om → <email-1>", "/h…e/ → <path-1>"]);
    expect(q("export-values").textContent).toContain("… and 1,199 more");
    expect(link.hidden).toBe(false);
    expect(link.getAttribute("download")).toBe("redacted.trace.json.gz");
    expect(new URL(link.href).pathname).toBe("/data/plugin/profscope/export");
    expect(new URL(link.href).searchParams.get("redact")).toBe("1");
    expect(dialog.el.textContent).toContain("Visible window (3 ms)");

    q("export-visible").click();
    q("export-visible").dispatchEvent(new Event("change"));
    await settle();
    const visible = new URL(link.href).searchParams;
    expect([visible.get("start"), visible.get("end"), visible.get("redact")]).toEqual(["1000", "3000000", "1"]);

    q("export-redact").checked = false;
    q("export-redact").dispatchEvent(new Event("change"));
    expect(q("export-redact-shapes").disabled).toBe(true);
    await settle();
    expect(new URL(link.href).searchParams.has("redact")).toBe(false);
    expect(q("export-preview").textContent).toMatch(/Not redacted/);
    expect(dialog.el.querySelector("[data-testid=export-values]")).toBeNull();

    dialog.el.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(dialog.isOpen).toBe(false);
  });

  it("says why when the preview fails, and offers no link", async () => {
    const client = new ProfscopeClient(BASE, async () => new Response("no trace file", { status: 404 }));
    const dialog = new ExportDialog({ client, subject, visibleRange: () => null });
    dialog.open();
    await settle();
    await settle();
    const q = (id: string) => dialog.el.querySelector(`[data-testid=${id}]`) as HTMLInputElement;
    expect(q("export-preview").textContent).toMatch(/^Cannot export: export\/preview: no trace file \(HTTP 404\)/);
    expect(q("export-download").hidden).toBe(true);
    expect(q("export-visible").disabled).toBe(true);
  });

  it("is opened by the toolbar's Export… button", () => {
    const opened: string[] = [];
    const actions = { setTool: () => {}, flowsChanged: () => {}, wholeTrace: () => {}, toggleHelp: () => {} };
    const bar = new Toolbar({ ...actions, exportTrace: () => opened.push("export") }, h("div"));
    (bar.el.querySelector("[data-testid=export-button]") as HTMLButtonElement).click();
    expect(opened).toEqual(["export"]);
    expect(new Toolbar(actions, h("div")).el.querySelector("[data-testid=export-button]")).toBeNull();
  });
});
