// What the user reads when a call fails: the server's message and hint, or the command to start it.
import { ServerDown, ServerError } from "./api";

export function describe(err: unknown): string {
  if (err instanceof ServerDown || err instanceof ServerError) return err.message;
  return `vaultlens: ${err instanceof Error ? err.message : String(err)}`;
}
