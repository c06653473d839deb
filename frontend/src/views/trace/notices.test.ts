// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { ApiError } from "../../api/client.ts";
import { Notices } from "./notices.ts";

describe("notices", () => {
  it("lists the trace's warnings and skipped records, and keeps one line for failed tiles", () => {
    const meta = makeTrace(1, 1).meta;
    meta.warnings = ["clock skew"];
    meta.hosts[0].skipped = { "bad json": 1200, dup: 3 };
    const n = new Notices();
    n.showTrace(meta);
    expect(n.el.textContent).toContain("clock skew");
    expect(n.el.textContent).toContain("worker0: skipped 1,203 records (bad json: 1,200, dup: 3)");
    n.tileFailed({ level: 2, index: 5 }, new Error("reset"));
    n.tileFailed({ level: 2, index: 6 }, new ApiError("trace/tile: 500", 500, "trace/tile"));
    const errors = n.el.querySelectorAll("[data-tile-error]");
    expect(errors).toHaveLength(1);
    expect(errors[0].textContent).toBe("Some tiles could not be loaded: trace/tile: 500");
  });
});
