// main.js for Obsidian: one CommonJS bundle, `obsidian` and Node's built-ins left to the app.
import esbuild from "esbuild";
import { builtinModules } from "node:module";

await esbuild.build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "es2020",
  external: ["obsidian", "electron", ...builtinModules],
  minify: true,
  legalComments: "none",
  logLevel: "info",
  outfile: "main.js",
});
