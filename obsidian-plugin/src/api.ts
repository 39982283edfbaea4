// The one client of `vaultlens serve`: every request the plugin makes goes through here, so the
// server's error shape, the "no server" message and the pairing header live in one place.
import { requestUrl } from "obsidian";
import * as http from "http";

export const DEFAULT_URL = "http://127.0.0.1:8765";
export const WRITE_HEADER = "X-Vaultlens-Write-Token";

export interface ErrorBody {
  code: string;
  message: string;
  hint?: string | null;
  proposal?: Proposal;
  [key: string]: unknown;
}

export interface Proposal {
  token: string;
  destination?: string;
  what?: string;
  preview?: string | null;
  remarks?: string[];
  diff?: string;
  question?: string; // Ask: the question as it will be asked (a follow-up after its rewrite)
  passages?: Passage[]; // Ask: each passage that would be sent
  [key: string]: unknown;
}

/** A passage an Ask proposal would send: its source id, note, section, lines and length. */
export interface Passage {
  id: string;
  path: string;
  heading_path: string[];
  start_line: number;
  end_line: number;
  chars: number;
}

/** One earlier exchange of a conversation, as the Ask view keeps it and sends it back. */
export interface Exchange {
  question: string;
  answer: string;
}

export interface Section {
  chunk_id: string;
  heading_path: string[];
  start_line: number;
  end_line: number;
  score: number | null;
  snippet: string;
}

export interface NoteHit {
  path: string;
  title: string;
  score: number;
  sections: Section[];
  weak: boolean;
}

export interface SimilarNote {
  path: string;
  title: string;
  score: number;
  matches: { source: Section; other: Section; score: number }[];
}

export interface Source {
  id: string;
  path: string;
  heading_path: string[];
  start_line: number;
  end_line: number;
}

export interface AskResult {
  question: string;
  answer: string;
  sources: Source[];
  invalid_citations: string[];
}

/** A request the server refused or failed, in its one error shape. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly error: ErrorBody,
  ) {
    super(error.message + (error.hint ? ` ${error.hint}` : ""));
  }
  get code(): string {
    return this.error.code;
  }
}

/** No server answers at the configured URL: the message names the exact command to start one. */
export class ServerDown extends Error {
  constructor(
    readonly url: string,
    readonly vaultPath: string,
  ) {
    super(
      `No vaultlens server answers at ${url}. Start it for this vault with:\n` +
        `vaultlens serve --vault ${quoteArg(vaultPath)}`,
    );
  }
}

export function quoteArg(value: string): string {
  return /^[\w./:@-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

export type Params = Record<string, string | number | boolean | null | undefined>;

export interface ClientOptions {
  url: string;
  vaultPath: string;
  writeToken?: string;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function errorOf(status: number, body: unknown): ServerError {
  const error = (body as { error?: ErrorBody } | null)?.error;
  return new ServerError(status, error ?? { code: "http", message: `The server answered ${status}.` });
}

export class Client {
  constructor(readonly options: ClientOptions) {}

  get base(): string {
    return this.options.url.replace(/\/+$/, "");
  }

  private headers(write: boolean): Record<string, string> {
    const token = this.options.writeToken?.trim();
    return write && token ? { [WRITE_HEADER]: token } : {};
  }

  async request<T>(method: "GET" | "POST", path: string, query?: Params, body?: unknown): Promise<T> {
    let url = this.base + path;
    const init: { method: string; body?: string; contentType?: string } = { method };
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
      url += `?${q.toString()}`;
    }
    if (method === "POST") {
      init.body = JSON.stringify(body ?? {});
      init.contentType = "application/json";
    }
    let reply;
    try {
      reply = await requestUrl({ url, ...init, headers: this.headers(method === "POST"), throw: false });
    } catch {
      throw new ServerDown(this.base, this.options.vaultPath);
    }
    const answer = parse(reply.text);
    if (reply.status >= 400) throw errorOf(reply.status, answer);
    return answer as T;
  }

  get<T>(path: string, params?: Params): Promise<T> {
    return this.request<T>("GET", path, params);
  }

  post<T>(path: string, body?: Record<string, unknown>): Promise<T> {
    return this.request<T>("POST", path, undefined, body);
  }

  /** True when the server answers; throws ServerDown with the command otherwise. */
  async health(): Promise<boolean> {
    await this.get<{ ok: boolean }>("/v1/health");
    return true;
  }

  search(q: string): Promise<NoteHit[]> {
    return this.get<NoteHit[]>("/ui/api/search", { q });
  }

  /**
   * A POST answered with server-sent events (Ask), read as it arrives. requestUrl buffers the whole
   * reply, so this uses Node's http (the plugin is desktop-only). An error before the stream is a
   * ServerError, as from request().
   */
  stream(
    path: string,
    body: Record<string, unknown>,
    onEvent: (kind: string, data: unknown) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const url = new URL(this.base + path);
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: "POST",
          agent: false, // its own connection: a long stream never races a kept-alive socket's close
          headers: {
            "Content-Type": "application/json",
            "Content-Length": Buffer.byteLength(payload),
            ...this.headers(true),
          },
        },
        (res) => {
          res.setEncoding("utf8");
          if ((res.statusCode ?? 500) >= 400) {
            let text = "";
            res.on("data", (c: string) => (text += c));
            res.on("end", () => reject(errorOf(res.statusCode ?? 500, parse(text))));
            return;
          }
          let buffer = "";
          res.on("data", (chunk: string) => {
            buffer += chunk;
            let cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              let kind = "message";
              let data = "";
              for (const line of block.split("\n")) {
                if (line.startsWith("event: ")) kind = line.slice(7);
                else if (line.startsWith("data: ")) data += line.slice(6);
              }
              try {
                onEvent(kind, parse(data));
              } catch (err) {
                req.destroy();
                reject(err instanceof Error ? err : new Error(String(err)));
                return;
              }
            }
          });
          res.on("end", () => resolve());
          // a Stop destroys the request: the stream ends there, as asked; any other cut is an error
          res.on("error", (err) => (signal?.aborted ? resolve() : reject(err)));
          res.on("close", () => {
            if (signal?.aborted) resolve();
            else if (!res.complete) reject(new Error("The server closed the stream before the answer was complete."));
          });
        },
      );
      req.on("error", (err: Error & { code?: string }) => {
        if (signal?.aborted) resolve();
        else reject(err.code === "ECONNREFUSED" ? new ServerDown(this.base, this.options.vaultPath) : err);
      });
      signal?.addEventListener("abort", () => req.destroy());
      req.end(payload);
    });
  }
}
