// The screenshot page's script: scripts/screenshots/page.ts (the plugin's src/ on the tests' stand-in
// of `obsidian`) bundled for the browser, Node's built-ins mapped to node-in-browser.ts.
// Usage: node scripts/screenshots/build.mjs OUT.js (scripts/screenshots.py runs it).
import esbuild from "esbuild";
import * as path from "node:path";

const here = import.meta.dirname;
const shim = path.join(here, "node-in-browser.ts");
await esbuild.build({
  entryPoints: [path.join(here, "page.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  alias: {
    obsidian: path.resolve(here, "../../tests/obsidian.ts"),
    http: shim,
    fs: shim,
    path: shim,
    "happy-dom": shim,
  },
  external: ["child_process"], // the start button's spawn: never pressed on the page
  logLevel: "warning",
  outfile: process.argv[2],
});
