import { defineConfig } from "vitest/config";
import * as path from "path";

export default defineConfig({
  resolve: { alias: { obsidian: path.resolve(import.meta.dirname, "tests/obsidian.ts") } },
  test: {
    environment: "node",
    globalSetup: ["tests/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
