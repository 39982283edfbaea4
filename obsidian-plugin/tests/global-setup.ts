// One real `vaultlens serve` for the whole run: tests/harness.py (Python from $VAULTLENS_PYTHON,
// default ../.venv/bin/python) writes a vault, starts the scripted model and the server.
import { spawn, spawnSync } from "child_process";
import * as path from "path";
import * as readline from "readline";
import type { TestProject } from "vitest/node";

export interface Ready { url: string; vault: string; home: string; python: string; model: string; repo: string }

declare module "vitest" {
  export interface ProvidedContext { server: Ready }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const python = process.env.VAULTLENS_PYTHON ?? path.resolve(here, "../../.venv/bin/python");
  checkPython(python);
  const child = spawn(python, [path.join(here, "harness.py")], { stdio: ["pipe", "pipe", "inherit"] });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.on("error", (e) => reject(new Error(`cannot start ${python} (set VAULTLENS_PYTHON): ${e.message}`)));
    child.on("exit", (code) => reject(new Error(`tests/harness.py exited with ${code} before the server was up`)));
    readline.createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line) as Ready));
  });
  project.provide("server", ready);
  return () => {
    child.stdin!.end();
  };
}

// Without a Python that imports vaultlens a thrown error would be buried under vitest's unrelated
// "No test files found": say what is missing and how to fix it, alone, and exit non-zero.
function checkPython(python: string): void {
  const probe = spawnSync(python, ["-c", "import vaultlens"], { encoding: "utf-8" });
  if (!probe.error && probe.status === 0) return;
  const why = probe.error
    ? `cannot start it (${probe.error.message})`
    : `it cannot import vaultlens (${(probe.stderr.trim().split("\n").pop() ?? "").trim()})`;
  process.stderr.write(
    `\nThe plugin tests need a Python with vaultlens installed; ${python}: ${why}.\n` +
      "Run `make plugin` (or `make test`) from the repository root (it sets everything up), or set VAULTLENS_PYTHON to such a Python " +
      "(and PYTHONPATH=<checkout>/src to test a checkout's sources).\n",
  );
  process.exit(1);
}
