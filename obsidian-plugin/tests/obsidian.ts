// A stand-in for the `obsidian` module (the app itself cannot be installed here): the classes the
// plugin uses, with Obsidian's element helpers on a happy-dom document. Requests are real HTTP.
import * as http from "http";
import * as fs from "fs";
import * as nodePath from "path";
import { Window } from "happy-dom";

const window = new Window();
(globalThis as { window?: unknown }).window ??= globalThis; // timers: the plugin calls window.setTimeout
/** URLs the plugin opened in the browser (window.open). */
export const browserOpened: string[] = [];
(globalThis as { open?: unknown }).open = (url: string) => void browserOpened.push(url);
export const document = window.document as unknown as Document;
type DomInfo = { cls?: string | string[]; text?: string; attr?: Record<string, string> };

const proto = (window as unknown as { HTMLElement: { prototype: Record<string, unknown> } }).HTMLElement.prototype;
function createEl(this: HTMLElement, tag: string, info?: DomInfo | string): HTMLElement {
  const el = document.createElement(tag);
  const o: DomInfo = typeof info === "string" ? { cls: info } : (info ?? {});
  if (o.cls) el.className = Array.isArray(o.cls) ? o.cls.join(" ") : o.cls;
  if (o.text !== undefined) el.textContent = o.text;
  for (const [k, v] of Object.entries(o.attr ?? {})) el.setAttribute(k, v);
  this.appendChild(el);
  return el;
}
Object.assign(proto, {
  createEl,
  createDiv(this: HTMLElement, info?: DomInfo) { return createEl.call(this, "div", info); },
  createSpan(this: HTMLElement, info?: DomInfo) { return createEl.call(this, "span", info); },
  empty(this: HTMLElement) { this.replaceChildren(); },
  setText(this: HTMLElement, text: string) { this.textContent = text; },
  appendText(this: HTMLElement, text: string) { this.append(text); },
  addClass(this: HTMLElement, ...c: string[]) { this.classList.add(...c); },
  removeClass(this: HTMLElement, ...c: string[]) { this.classList.remove(...c); },
  toggleClass(this: HTMLElement, c: string, on: boolean) { this.classList.toggle(c, on); },
});
export function div(): HTMLElement {
  return document.createElement("div");
}

// ---- requestUrl: a real HTTP request (connection errors throw, as Obsidian's do) -------------------
export interface RequestUrlParam {
  url: string; method?: string; contentType?: string; body?: string;
  headers?: Record<string, string>; throw?: boolean;
}
export const requests: RequestUrlParam[] = [];
export function requestUrl(p: RequestUrlParam) {
  requests.push(p);
  return new Promise<{ status: number; text: string; json: unknown; headers: Record<string, string> }>((resolve, reject) => {
    const headers: Record<string, string> = { ...(p.headers ?? {}) };
    if (p.contentType) headers["Content-Type"] = p.contentType;
    // agent: false, a connection per request: a kept-alive socket the server closed meanwhile would
    // fail the next request as if no server answered
    const req = http.request(p.url, { method: p.method ?? "GET", headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        if (status >= 400 && p.throw !== false) return reject(new Error(`Request failed, status ${status}`));
        let json: unknown = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status, text, json, headers: res.headers as Record<string, string> });
      });
    });
    req.on("error", reject);
    req.end(p.body);
  });
}

export class Notice {
  static shown: string[] = [];
  constructor(readonly message: string) { Notice.shown.push(message); }
  hide(): void {}
}

// ---- files, editor, workspace ------------------------------------------------------------------
export class TAbstractFile { constructor(readonly path: string) {} }
export class TFile extends TAbstractFile {
  get basename(): string { return nodePath.basename(this.path).replace(/\.md$/, ""); }
  get extension(): string { return nodePath.extname(this.path).slice(1); }
}
export class FileSystemAdapter {
  constructor(private readonly base: string) {}
  getBasePath(): string { return this.base; }
}
export class Vault {
  adapter: FileSystemAdapter;
  constructor(readonly root: string) { this.adapter = new FileSystemAdapter(root); }
  getAbstractFileByPath(path: string): TAbstractFile | null {
    return fs.existsSync(nodePath.join(this.root, path)) ? new TFile(path) : null;
  }
  async read(file: TFile): Promise<string> { return fs.readFileSync(nodePath.join(this.root, file.path), "utf8"); }
}
export interface EditorPosition { line: number; ch: number }
export class Editor {
  cursor: EditorPosition = { line: 0, ch: 0 };
  inserted: string[] = [];
  scrolledTo: number | null = null;
  setCursor(pos: EditorPosition): void { this.cursor = pos; }
  getCursor(): EditorPosition { return this.cursor; }
  scrollIntoView(range: { from: EditorPosition }): void { this.scrolledTo = range.from.line; }
  replaceSelection(text: string): void { this.inserted.push(text); }
}
export class Component {
  private cleanups: (() => void)[] = [];
  register(cb: () => void): void { this.cleanups.push(cb); }
  registerEvent(ref: EventRef): void { this.cleanups.push(() => ref.off()); }
  registerInterval(id: number): number { return id; }
  unload(): void { this.cleanups.splice(0).forEach((c) => c()); }
}
export interface EventRef { off(): void }
export class View extends Component {
  containerEl: HTMLElement = div();
  constructor(readonly leaf: WorkspaceLeaf) { super(); }
  get app(): App { return this.leaf.app; }
}
export class MarkdownView extends View {
  editor = new Editor();
  constructor(leaf: WorkspaceLeaf, readonly file: TFile) { super(leaf); }
}
export class ItemView extends View {
  contentEl: HTMLElement;
  constructor(leaf: WorkspaceLeaf) {
    super(leaf);
    this.containerEl.createDiv();
    this.contentEl = this.containerEl.createDiv();
  }
  async onOpen(): Promise<void> {}
  async onClose(): Promise<void> {}
}
export class WorkspaceLeaf {
  view: View | null = null;
  constructor(readonly app: App) {}
  async openFile(file: TFile, state?: { eState?: { line?: number } }): Promise<void> {
    this.view = new MarkdownView(this, file);
    this.app.workspace.opened.push({ path: file.path, line: state?.eState?.line ?? null });
    this.app.workspace.activeLeaf = this;
    this.app.workspace.trigger("file-open", file);
  }
  async setViewState(state: { type: string }): Promise<void> {
    const make = this.app.workspace.viewFactories.get(state.type);
    if (make) { this.view = make(this); await (this.view as ItemView).onOpen(); }
  }
}
export class Workspace {
  opened: { path: string; line: number | null }[] = [];
  activeLeaf: WorkspaceLeaf | null = null;
  leaves: WorkspaceLeaf[] = [];
  viewFactories = new Map<string, (leaf: WorkspaceLeaf) => View>();
  private handlers = new Map<string, ((...a: unknown[]) => void)[]>();
  constructor(readonly app: App) {}
  getLeaf(_new?: boolean): WorkspaceLeaf {
    if (!_new && this.activeLeaf) return this.activeLeaf;
    const leaf = new WorkspaceLeaf(this.app);
    this.leaves.push(leaf);
    return leaf;
  }
  getRightLeaf(_split: boolean): WorkspaceLeaf { const l = new WorkspaceLeaf(this.app); this.leaves.push(l); return l; }
  getLeavesOfType(type: string): WorkspaceLeaf[] {
    return this.leaves.filter((l) => (l.view as { getViewType?: () => string } | null)?.getViewType?.() === type);
  }
  revealLeaf(_leaf: WorkspaceLeaf): void {}
  getActiveFile(): TFile | null {
    const v = this.activeLeaf?.view;
    return v instanceof MarkdownView ? v.file : null;
  }
  getActiveViewOfType<T>(type: abstract new (...a: never[]) => T): T | null {
    const v = this.activeLeaf?.view;
    return v instanceof type ? (v as T) : null;
  }
  on(name: string, cb: (...a: never[]) => void): EventRef {
    const list = this.handlers.get(name) ?? [];
    list.push(cb as (...a: unknown[]) => void);
    this.handlers.set(name, list);
    return { off: () => list.splice(list.indexOf(cb as (...a: unknown[]) => void), 1) };
  }
  trigger(name: string, ...args: unknown[]): void { (this.handlers.get(name) ?? []).forEach((h) => h(...args)); }
  onLayoutReady(cb: () => void): void { cb(); }
}
export class App {
  vault: Vault;
  workspace: Workspace;
  constructor(root: string) { this.vault = new Vault(root); this.workspace = new Workspace(this); }
}

// ---- modals, settings, plugin ------------------------------------------------------------------
export class Modal {
  containerEl = div();
  modalEl = this.containerEl.createDiv();
  titleEl = this.modalEl.createDiv();
  contentEl = this.modalEl.createDiv();
  isOpen = false;
  constructor(readonly app: App) {}
  open(): void { this.isOpen = true; void this.onOpen(); }
  close(): void { this.isOpen = false; void this.onClose(); }
  setTitle(t: string): this { this.titleEl.setText(t); return this; }
  onOpen(): void | Promise<void> {}
  onClose(): void | Promise<void> {}
}
export abstract class SuggestModal<T> extends Modal {
  inputEl = document.createElement("input") as HTMLInputElement;
  resultContainerEl = div();
  emptyStateText = "";
  placeholder = "";
  shown: T[] = [];
  setPlaceholder(p: string): void { this.placeholder = p; }
  abstract getSuggestions(q: string): T[] | Promise<T[]>;
  abstract renderSuggestion(value: T, el: HTMLElement): void;
  abstract onChooseSuggestion(item: T, evt: MouseEvent | KeyboardEvent): void | Promise<void>;
  /** Test helper: type a query, as the input event does, and render what comes back. */
  async type(q: string): Promise<T[]> {
    this.inputEl.value = q;
    this.shown = await this.getSuggestions(q);
    this.resultContainerEl.empty();
    if (!this.shown.length) this.resultContainerEl.createDiv({ cls: "suggestion-empty", text: this.emptyStateText });
    for (const item of this.shown) this.renderSuggestion(item, this.resultContainerEl.createDiv({ cls: "suggestion-item" }));
    return this.shown;
  }
  /** Test helper: Enter on the i-th suggestion. */
  async choose(i: number): Promise<void> {
    await this.onChooseSuggestion(this.shown[i], {} as KeyboardEvent);
    await (this as unknown as { opening?: Promise<void> }).opening;
  }
}
export class BaseComponent<E extends HTMLElement> {
  handler: ((v: string) => unknown) | null = null;
  constructor(readonly el: E) {}
}
export class TextComponent {
  inputEl = document.createElement("input") as HTMLInputElement;
  handler: ((v: string) => unknown) | null = null;
  constructor(parent: HTMLElement) { parent.appendChild(this.inputEl); }
  setValue(v: string): this { this.inputEl.value = v; return this; }
  getValue(): string { return this.inputEl.value; }
  setPlaceholder(p: string): this { this.inputEl.placeholder = p; return this; }
  onChange(cb: (v: string) => unknown): this { this.handler = cb; return this; }
  /** Test helper: the user types v. */
  async input(v: string): Promise<void> { this.inputEl.value = v; await this.handler?.(v); }
}
export class ButtonComponent {
  buttonEl = document.createElement("button");
  handler: (() => unknown) | null = null;
  constructor(parent: HTMLElement) { parent.appendChild(this.buttonEl); }
  setButtonText(t: string): this { this.buttonEl.textContent = t; return this; }
  setCta(): this { return this; }
  setWarning(): this { return this; }
  setDisabled(d: boolean): this { this.buttonEl.disabled = d; return this; }
  onClick(cb: () => unknown): this { this.handler = cb; return this; }
  async click(): Promise<void> { await this.handler?.(); }
}
export class Setting {
  settingEl: HTMLElement; nameEl: HTMLElement; descEl: HTMLElement; controlEl: HTMLElement;
  static all: Setting[] = [];
  texts: TextComponent[] = [];
  buttons: ButtonComponent[] = [];
  constructor(parent: HTMLElement) {
    this.settingEl = parent.createDiv({ cls: "setting-item" });
    this.nameEl = this.settingEl.createDiv(); this.descEl = this.settingEl.createDiv(); this.controlEl = this.settingEl.createDiv();
    Setting.all.push(this);
  }
  setName(n: string): this { this.nameEl.setText(n); return this; }
  setDesc(d: string): this { this.descEl.setText(d); return this; }
  setHeading(): this { return this; }
  addText(cb: (t: TextComponent) => unknown): this { const t = new TextComponent(this.controlEl); this.texts.push(t); cb(t); return this; }
  addButton(cb: (b: ButtonComponent) => unknown): this { const b = new ButtonComponent(this.controlEl); this.buttons.push(b); cb(b); return this; }
}
export interface PluginManifest { id: string; version: string }
export class PluginSettingTab {
  containerEl = div();
  constructor(readonly app: App, readonly plugin: Plugin) {}
}
export interface Command { id: string; name: string; callback?: () => unknown; editorCallback?: (e: Editor, v: MarkdownView) => unknown }
export class Plugin extends Component {
  data: unknown = null;
  commands: Command[] = [];
  tabs: PluginSettingTab[] = [];
  statusBar: HTMLElement[] = [];
  constructor(readonly app: App, readonly manifest: PluginManifest) { super(); }
  async loadData(): Promise<unknown> { return this.data; }
  async saveData(d: unknown): Promise<void> { this.data = JSON.parse(JSON.stringify(d)); }
  addCommand(c: Command): Command { this.commands.push(c); return c; }
  addSettingTab(t: PluginSettingTab): void { this.tabs.push(t); }
  registerView(type: string, make: (leaf: WorkspaceLeaf) => View): void { this.app.workspace.viewFactories.set(type, make); }
  addStatusBarItem(): HTMLElement { const el = div(); this.statusBar.push(el); return el; }
  addRibbonIcon(_icon: string, _title: string, _cb: () => unknown): HTMLElement { return div(); }
  /** Test helper: run a command by id. */
  async run(id: string): Promise<void> {
    const c = this.commands.find((x) => x.id === id);
    if (!c) throw new Error(`no command ${id}`);
    if (c.callback) await c.callback();
    else if (c.editorCallback) {
      const v = this.app.workspace.getActiveViewOfType(MarkdownView);
      if (v) await c.editorCallback(v.editor, v);
    }
  }
}
export function setIcon(_el: HTMLElement, _icon: string): void {}
