// Settings: where the server is, the write token from `vaultlens obsidian pair`, and a connect test.
import { App, FileSystemAdapter, PluginSettingTab, Setting } from "obsidian";
import { DEFAULT_URL } from "./api";
import { describe } from "./errors";
import type VaultlensPlugin from "./main";

export interface Settings {
  url: string;
  writeToken: string;
  serverCommand: string; // how vaultlens is run here, for the "Start the server" button
}

export const DEFAULTS: Settings = { url: DEFAULT_URL, writeToken: "", serverCommand: "vaultlens" };

/** The vault's folder on disk (what `vaultlens serve --vault` takes). */
export function vaultPath(app: App): string {
  const adapter = app.vault.adapter;
  return adapter instanceof FileSystemAdapter ? adapter.getBasePath() : "<this vault's folder>";
}

export class SettingsTab extends PluginSettingTab {
  result: HTMLElement | null = null;

  constructor(
    app: App,
    private readonly plugin: VaultlensPlugin,
  ) {
    super(app, plugin);
  }

  display(): void {
    const { containerEl } = this;
    containerEl.empty();
    new Setting(containerEl)
      .setName("Server URL")
      .setDesc(`The address \`vaultlens serve --vault ${vaultPath(this.app)}\` listens on (default ${DEFAULT_URL}).`)
      .addText((t) =>
        t.setValue(this.plugin.settings.url).onChange(async (v) => {
          this.plugin.settings.url = v.trim() || DEFAULT_URL;
          await this.plugin.saveSettings();
        }),
      );
    new Setting(containerEl)
      .setName("Write token")
      .setDesc("From `vaultlens obsidian pair`: lets review, apply and undo write through the server.")
      .addText((t) =>
        t.setValue(this.plugin.settings.writeToken).onChange(async (v) => {
          this.plugin.settings.writeToken = v.trim();
          await this.plugin.saveSettings();
        }),
      );
    new Setting(containerEl)
      .setName("Server command")
      .setDesc("How vaultlens runs on this computer (a path, or e.g. `python -m vaultlens`): the start button runs it with `serve`.")
      .addText((t) =>
        t.setValue(this.plugin.settings.serverCommand).onChange(async (v) => {
          this.plugin.settings.serverCommand = v.trim() || DEFAULTS.serverCommand;
          await this.plugin.saveSettings();
        }),
      );
    const test = new Setting(containerEl)
      .setName("Connection")
      .addButton((b) => b.setButtonText("Test").onClick(() => void this.test()))
      .addButton((b) => b.setButtonText("Start the server").onClick(() => void this.start()));
    this.result = test.descEl;
  }

  async start(): Promise<string> {
    const starter = this.plugin.starter();
    this.result?.setText(`Starting: ${starter.commandLine()}`);
    let text: string;
    try {
      await starter.start();
      text = `Started: ${this.plugin.client().base} answers.`;
    } catch (err) {
      text = describe(err);
    }
    this.result?.setText(text);
    return text;
  }

  async test(): Promise<string> {
    let text: string;
    try {
      await this.plugin.client().health();
      text = `Connected to ${this.plugin.client().base}.`;
    } catch (err) {
      text = describe(err);
    }
    this.result?.setText(text);
    return text;
  }
}
