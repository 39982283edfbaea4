// The Obsidian plugin rules (eslint-plugin-obsidianmd's recommended set, with typescript-eslint's
// type-checked rules) on the plugin's sources; the tests, the app stand-in and the screenshot page
// (scripts/: a docs tool, not shipped) are not linted.
import { defineConfig } from "eslint/config";
import obsidianmd from "eslint-plugin-obsidianmd";

export default defineConfig([
  { ignores: ["main.js", "node_modules/", "tests/", "scripts/", "*.config.*", "ship.mjs"] },
  ...obsidianmd.configs.recommended,
  {
    files: ["src/**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    // the declarative settings API needs Obsidian 1.13; minAppVersion (1.7.2) is older
    rules: { "obsidianmd/settings-tab/prefer-setting-definitions": "off" },
  },
]);
