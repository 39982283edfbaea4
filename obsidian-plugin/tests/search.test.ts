import { describe as group, expect, it } from "vitest";
import { Setting } from "obsidian";
import { SearchModal } from "../src/search";
import { SettingsTab } from "../src/settings";
import { deadUrl, loaded, server } from "./support";

group("search by meaning", () => {
  it("finds the note that means the query first, across languages, and Enter opens it at the section", async () => {
    const { app, plugin } = await loaded();
    const modal = new SearchModal(app as never, () => plugin.client(), 0);
    const rows = await modal.type("why does an apple fall to the ground");
    expect(rows[0].hit.path).toBe("Физика/Гравитация.md");
    expect(modal.resultContainerEl.textContent).toContain("Гравитация, lines 1-3");
    await modal.choose(0);
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Физика/Гравитация.md", line: 0 });
  });

  it("finds an English note from a Russian query and opens it at its section", async () => {
    const { app, plugin } = await loaded();
    const modal = new SearchModal(app as never, () => plugin.client(), 0);
    const rows = await modal.type("подкормка закваски ржаной мукой");
    expect(rows[0].hit.path).toBe("Bread/Starter.md");
    expect(rows[0].first).toBe(true);
    await modal.choose(0);
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Bread/Starter.md", line: rows[0].section!.start_line - 1 });
  });

  it("says how to start the server when none answers", async () => {
    const url = await deadUrl();
    const { app, plugin } = await loaded({ url });
    const modal = new SearchModal(app as never, () => plugin.client(), 0);
    expect(await modal.type("anything")).toEqual([]);
    expect(modal.resultContainerEl.textContent).toContain(`No vaultlens server answers at ${url}`);
    expect(modal.resultContainerEl.textContent).toContain(`vaultlens serve --vault ${server().vault}`);
  });
});

group("settings", () => {
  it("the connect test names the server when it answers and the command when it does not", async () => {
    const { app, plugin } = await loaded();
    const tab = new SettingsTab(app as never, plugin);
    tab.display();
    expect(await tab.test()).toBe(`Connected to ${server().url}.`);
    const urlField = Setting.all.find((s) => s.nameEl.textContent === "Server URL")!.texts[0];
    await urlField.input(await deadUrl());
    expect(await tab.test()).toContain(`vaultlens serve --vault ${server().vault}`);
    expect((plugin as unknown as { data: { url: string } }).data.url).toBe(plugin.settings.url);
  });
});
