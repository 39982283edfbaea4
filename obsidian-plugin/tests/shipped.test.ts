// The Python package ships the built plugin: its copy must be what the sources build to now.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PACKAGE_DIR, SHIPPED } from "../ship.mjs";

describe("the plugin the Python package ships", () => {
  it.each(SHIPPED)("%s is the current build (run `npm run ship` after changing the plugin)", (name) => {
    const built = readFileSync(new URL(`../${name}`, import.meta.url));
    expect(readFileSync(new URL(name, PACKAGE_DIR)).equals(built)).toBe(true);
  });

  it("manifest.json and package.json carry one version", () => {
    const manifest = JSON.parse(readFileSync(new URL("../manifest.json", import.meta.url), "utf8"));
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    expect(manifest).toMatchObject({ id: "vaultlens", isDesktopOnly: true, version: pkg.version });
    expect(manifest.minAppVersion).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
