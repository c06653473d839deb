import { existsSync, readdirSync } from "node:fs";
import { defineConfig } from "vitest/config";

const views = readdirSync("src/views", { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(`src/views/${d.name}/index.ts`))
  .map((d) => d.name)
  .sort();

export default defineConfig({
  define: { __PROFSCOPE_VIEWS__: JSON.stringify(views) },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
