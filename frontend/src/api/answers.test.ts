import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateAnswerTypes, SCHEMA_PATH, TYPES_PATH } from "../../scripts/gen-answer-types.mjs";

const REGENERATE =
  ".venv/bin/python -m profscope.answer_schema frontend/src/api/answers.schema.json && npm --prefix frontend run gen-types";

describe("answer types", () => {
  it("are what the committed schema generates", async () => {
    const generated = await generateAnswerTypes(readFileSync(SCHEMA_PATH, "utf8"));
    expect(readFileSync(TYPES_PATH, "utf8"), `answers.gen.ts is stale; regenerate with: ${REGENERATE}`).toBe(generated);
  });

  it("read msgspec's schema as the server means it", async () => {
    // The shapes msgspec writes for a Struct with an UNSET field, a tuple, a free-form dict and a tag.
    const schema = {
      anyOf: [{ $ref: "#/$defs/Probe" }],
      $defs: {
        Probe: {
          title: "Probe",
          type: "object",
          properties: {
            state: { enum: ["probing"] },
            span: { type: "array", minItems: 2, maxItems: 2, prefixItems: [{ type: "number" }, { type: "string" }], items: false },
            args: { type: "object" },
            counts: { type: "object", additionalProperties: { type: "integer" } },
            origin: { anyOf: [{ type: "integer" }, { type: "null" }] },
            note: { type: "string" },
          },
          required: ["state", "span", "args", "counts", "origin"],
          additionalProperties: false,
        },
      },
    };
    const ts = (await generateAnswerTypes(JSON.stringify(schema))).replace(/\s+/g, " ");
    expect(ts).toContain("export interface Probe {");
    expect(ts).toContain('state: "probing";');
    expect(ts).toContain("span: [number, string];");
    expect(ts).toContain("args: { [k: string]: unknown; };");
    expect(ts).toContain("counts: { [k: string]: number; };");
    expect(ts).toContain("origin: number | null;");
    expect(ts).toContain("note?: string;");
    // A Struct is closed: no index signature of its own.
    expect(ts).not.toMatch(/note\?: string; \[k: string\]/);
  });
});
