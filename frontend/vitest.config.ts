import { defineConfig } from "vitest/config";
import { toolsDefine } from "./scripts/views.mjs";

export default defineConfig({
  // The same discovered tools as the bundle (build.mjs), so the registry under test is the shipped one.
  define: toolsDefine(),
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    environment: "node",
  },
});
