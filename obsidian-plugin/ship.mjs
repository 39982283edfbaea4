// Copy the built plugin into the Python package (src/vaultlens/obsidian_plugin/), which the wheel
// ships: `vaultlens obsidian install` needs no Node. tests/shipped.test.ts checks the copy is current.
import { copyFileSync } from "node:fs";

export const SHIPPED = ["main.js", "manifest.json", "styles.css"];
export const PACKAGE_DIR = new URL("../src/vaultlens/obsidian_plugin/", import.meta.url);

if (process.argv[1] === new URL(import.meta.url).pathname) {
  for (const name of SHIPPED) copyFileSync(name, new URL(name, PACKAGE_DIR));
  console.log(`copied ${SHIPPED.join(", ")} into ${PACKAGE_DIR.pathname}`);
}
