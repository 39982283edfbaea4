// The plugin: commands, views and the status bar, each a thin view of one server route.
import { Plugin } from "obsidian";
import { Client } from "./api";
import { SearchModal } from "./search";
import { DEFAULTS, Settings, SettingsTab, vaultPath } from "./settings";

export default class VaultlensPlugin extends Plugin {
  settings: Settings = { ...DEFAULTS };

  client(): Client {
    return new Client({
      url: this.settings.url,
      vaultPath: vaultPath(this.app),
      writeToken: this.settings.writeToken,
    });
  }

  async onload(): Promise<void> {
    this.settings = { ...DEFAULTS, ...((await this.loadData()) as Partial<Settings> | null) };
    this.addSettingTab(new SettingsTab(this.app, this));
    this.addCommand({
      id: "search",
      name: "Search by meaning",
      callback: () => new SearchModal(this.app, () => this.client()).open(),
    });
  }

  async saveSettings(): Promise<void> {
    await this.saveData(this.settings);
  }
}
