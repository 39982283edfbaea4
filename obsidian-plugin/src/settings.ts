// Settings: where the server is, the write token from `vaultlens obsidian pair`, and a connect test.
import { App, FileSystemAdapter, PluginSettingTab, Setting } from "obsidian";
import { DEFAULT_URL } from "./api";
import { describe } from "./errors";
import type VaultlensPlugin from "./main";

export interface Settings {
  url: string;
  writeToken: string;
}

export const DEFAULTS: Settings = { url: DEFAULT_URL, writeToken: "" };

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
    const test = new Setting(containerEl).setName("Connection").addButton((b) =>
      b.setButtonText("Test").onClick(() => void this.test()),
    );
    this.result = test.descEl;
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
