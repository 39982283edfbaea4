// The plugin: commands, views and the status bar, each a thin view of one server route.
import { MarkdownView, Notice, Plugin, WorkspaceLeaf } from "obsidian";
import { Client, quoteArg } from "./api";
import { ASK_VIEW, AskView } from "./ask";
import { DuplicatesModal } from "./duplicates";
import { RELATED_VIEW, RelatedView } from "./related";
import { SearchModal } from "./search";
import { DEFAULTS, Settings, SettingsTab, vaultPath } from "./settings";
import { Starter, serveArgs, startServer } from "./server";
import { refreshStatus } from "./status";

const STATUS_EVERY_MS = 30_000;

export default class VaultlensPlugin extends Plugin {
  settings: Settings = { ...DEFAULTS };
  statusEl: HTMLElement | null = null;

  client(): Client {
    return new Client({
      url: this.settings.url,
      vaultPath: vaultPath(this.app),
      writeToken: this.settings.writeToken,
    });
  }

  /** Starts `vaultlens serve` for this vault on the settings' port (the button when none answers). */
  starter(): Starter {
    return {
      commandLine: () => serveArgs(this.settings.serverCommand, this.client()).map(quoteArg).join(" "),
      start: () => startServer(this.settings.serverCommand, this.client()),
    };
  }

  async onload(): Promise<void> {
    this.settings = { ...DEFAULTS, ...((await this.loadData()) as Partial<Settings> | null) };
    this.addSettingTab(new SettingsTab(this.app, this));
    const client = () => this.client();
    this.registerView(RELATED_VIEW, (leaf) => new RelatedView(leaf, client));
    this.registerView(ASK_VIEW, (leaf) => new AskView(leaf, client, this.starter()));
    this.addCommand({
      id: "search",
      name: "Search by meaning",
      callback: () => new SearchModal(this.app, client).open(),
    });
    this.addCommand({ id: "related", name: "Show related notes", callback: () => this.reveal(RELATED_VIEW) });
    this.addCommand({ id: "ask", name: "Ask the vault", callback: () => this.reveal(ASK_VIEW) });
    this.addCommand({ id: "duplicates", name: "Find duplicates", callback: () => new DuplicatesModal(this.app, client).open() });
    this.statusEl = this.addStatusBarItem();
    this.statusEl.addClass("vaultlens-status");
    this.statusEl.addEventListener("click", () => window.open(`${this.client().base}/status`));
    const refresh = () => (this.statusEl ? refreshStatus(this.statusEl, this.client()) : Promise.resolve(""));
    this.registerInterval(window.setInterval(() => void refresh(), STATUS_EVERY_MS));
    this.app.workspace.onLayoutReady(() => void refresh());
  }

  async reveal(type: string): Promise<WorkspaceLeaf | null> {
    let leaf: WorkspaceLeaf | null = this.app.workspace.getLeavesOfType(type)[0] ?? null;
    if (!leaf) {
      if (!this.app.workspace.getActiveViewOfType(MarkdownView) && type === RELATED_VIEW) new Notice("Open a note first.");
      leaf = this.app.workspace.getRightLeaf(false);
      await leaf?.setViewState({ type, active: true });
    }
    if (leaf) await this.app.workspace.revealLeaf(leaf);
    return leaf;
  }

  async saveSettings(): Promise<void> {
    await this.saveData(this.settings);
  }
}
