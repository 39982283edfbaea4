// The few Node built-ins the plugin and the stand-in of `obsidian` (tests/obsidian.ts) use, over the
// browser's own APIs, so the screenshot page runs the same code the tests do. Desktop Obsidian has
// Node's http; here `http.request` is fetch with the body read as it arrives (Ask still streams).
// esbuild maps http, fs, path and happy-dom to this module (scripts/screenshots/build.mjs).

type Listener = (arg?: unknown) => void;

class Emitter {
  private listeners = new Map<string, Listener[]>();
  on(name: string, cb: Listener): this {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), cb]);
    return this;
  }
  once(name: string, cb: Listener): this {
    return this.on(name, cb);
  }
  emit(name: string, arg?: unknown): void {
    for (const cb of this.listeners.get(name) ?? []) cb(arg);
  }
}

class Response extends Emitter {
  complete = false;
  constructor(
    readonly statusCode: number,
    readonly headers: Record<string, string>,
  ) {
    super();
  }
  setEncoding(_encoding: string): void {}
}

interface Options {
  method?: string;
  headers?: Record<string, string | number>;
}

class Request extends Emitter {
  private body: string | undefined;
  private readonly abort = new AbortController();
  constructor(
    private readonly url: string | URL,
    private readonly options: Options,
    private readonly onResponse: (res: Response) => void,
  ) {
    super();
  }
  end(body?: string): void {
    this.body = body;
    void this.send();
  }
  destroy(): void {
    this.abort.abort();
  }
  private async send(): Promise<void> {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.options.headers ?? {}))
      if (k.toLowerCase() !== "content-length") headers[k] = String(v);
    let reply: globalThis.Response;
    try {
      reply = await fetch(this.url, { method: this.options.method ?? "GET", headers, body: this.body, signal: this.abort.signal });
    } catch (err) {
      this.emit("error", Object.assign(new Error(String(err)), { code: "ECONNREFUSED" }));
      return;
    }
    const res = new Response(reply.status, Object.fromEntries(reply.headers.entries()));
    this.onResponse(res);
    const reader = reply.body!.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.emit("data", decoder.decode(value, { stream: true }));
      }
      res.complete = true;
      res.emit("end");
    } catch (err) {
      res.emit("error", err);
    }
    res.emit("close");
  }
}

// ---- http --------------------------------------------------------------------------------------
export function request(url: string | URL, options: Options, onResponse: (res: Response) => void): Request {
  return new Request(url, options, onResponse);
}
(globalThis as { Buffer?: unknown }).Buffer ??= { byteLength: (s: string) => new TextEncoder().encode(s).length };

// ---- fs: the page reads no file; every path the plugin opens is taken to exist -------------------
export function existsSync(_path: string): boolean {
  return true;
}
export function readFileSync(path: string): never {
  throw new Error(`the screenshot page reads no file (${path})`);
}

// ---- path ----------------------------------------------------------------------------------------
export function basename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
export function extname(path: string): string {
  const name = basename(path);
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot) : "";
}
export function join(...parts: string[]): string {
  return parts.join("/").replace(/\/+/g, "/");
}

// ---- happy-dom: the browser's own window -------------------------------------------------------
export const Window = function Window() {
  return window;
} as unknown as new () => Window;
