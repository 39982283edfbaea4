// Starting `vaultlens serve` for this vault from Obsidian (desktop): where Node's child_process is
// there, a button runs the command (the setting "Server command", default `vaultlens`) on the
// settings' port and waits until the server answers; otherwise, or when it fails, the exact command.
import type { ChildProcess } from "child_process";
import { Client, ServerDown, quoteArg } from "./api";

const START_WAIT_MS = 60_000;

/** What a view needs to offer the start button: the command line and the way to run it. */
export interface Starter {
  commandLine(): string;
  start(): Promise<ChildProcess>;
}

/** The arguments of `serve` for ``client``'s vault and port (the command's own words first). */
export function serveArgs(command: string, client: Client): string[] {
  const url = new URL(client.base);
  const port = url.port || "8765";
  return [...command.trim().split(/\s+/), "serve", "--vault", client.options.vaultPath, "--port", port];
}

/** Spawn the server (detached: it outlives Obsidian's window) and wait until it answers. */
export async function startServer(command: string, client: Client, waitMs = START_WAIT_MS): Promise<ChildProcess> {
  const [program, ...args] = serveArgs(command, client);
  const shown = [program, ...args].map(quoteArg).join(" ");
  let spawn: typeof import("child_process").spawn;
  try {
    ({ spawn } = await import("child_process"));
  } catch {
    throw new Error(`This Obsidian cannot start programs. Start the server in a terminal:\n${shown}`);
  }
  const child = spawn(program, args, { detached: true, stdio: "ignore" });
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (e) => reject(new Error(`Could not run ${program} (${e.message}). Start the server in a terminal:\n${shown}`)));
    child.once("exit", (code) => reject(new Error(`The server exited (code ${code}). Run it in a terminal to see why:\n${shown}`)));
  });
  failed.catch(() => undefined); // settled below or never looked at once the server answers
  const deadline = Date.now() + waitMs;
  for (;;) {
    const up = client.health().then(
      () => true,
      (e: unknown) => {
        if (e instanceof ServerDown) return false;
        throw e;
      },
    );
    if (await Promise.race([up, failed])) break;
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`The server did not answer within ${waitMs / 1000} s. Start it in a terminal:\n${shown}`);
    }
    await new Promise((r) => window.setTimeout(r, 300));
  }
  child.unref();
  return child;
}

/** The no-server message (with the exact command) and a button that starts the server. */
export function showServerDown(target: HTMLElement, err: ServerDown, starter: Starter): HTMLButtonElement {
  const box = target.createDiv({ cls: "vaultlens-problem" });
  box.createEl("p", { text: err.message });
  const button = box.createEl("button", { text: "Start the server" });
  const status = box.createEl("p");
  button.addEventListener("click", () => {
    button.disabled = true;
    status.setText(`Starting: ${starter.commandLine()}`);
    starter.start().then(
      () => status.setText("The server answers now: ask again."),
      (e: unknown) => {
        status.setText(e instanceof Error ? e.message : String(e));
        button.disabled = false;
      },
    );
  });
  return button;
}
