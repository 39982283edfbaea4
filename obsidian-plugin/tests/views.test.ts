import { describe as group, expect, it } from "vitest";
import { browserOpened, MarkdownView, TFile } from "obsidian";
import { AskView, ASK_VIEW } from "../src/ask";
import { DuplicatesModal } from "../src/duplicates";
import { RelatedView, RELATED_VIEW } from "../src/related";
import { deadUrl, loaded, server } from "./support";

group("related notes", () => {
  it("follows the open note, lists its related notes section to section, opens and links them", async () => {
    const { app, plugin } = await loaded();
    await app.workspace.getLeaf(false).openFile(new TFile("Study/Caching/Cache lifetime.md"));
    const leaf = await plugin.reveal(RELATED_VIEW);
    const view = leaf!.view as unknown as RelatedView;
    await view.pending;
    expect(view.path).toBe("Study/Caching/Cache lifetime.md");
    expect(view.results[0].path).toBe("Study/Systems/Cache lifetime.md");
    expect(view.contentEl.textContent).toContain("Cache lifetime, lines 1-3 ↔ Cache lifetime, lines 1-3");

    expect(view.insertLink(view.results[0])).toBe(true);
    const editor = (app.workspace.activeLeaf!.view as MarkdownView).editor;
    expect(editor.inserted).toEqual(["[[Study/Systems/Cache lifetime]]"]);

    await view.open(view.results[0]); // opening a related note makes it the open note: the pane follows
    await view.pending;
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Study/Systems/Cache lifetime.md", line: 0 });
    expect(view.path).toBe("Study/Systems/Cache lifetime.md");
    expect(view.results.map((r) => r.path)).toContain("Study/Caching/Cache lifetime.md");
  });

  it("says how to start the server when none answers", async () => {
    const { app, plugin } = await loaded({ url: await deadUrl() });
    await app.workspace.getLeaf(false).openFile(new TFile("Bread/Starter.md"));
    const view = (await plugin.reveal(RELATED_VIEW))!.view as unknown as RelatedView;
    await view.pending;
    expect(view.contentEl.textContent).toContain("vaultlens serve --vault");
  });
});

group("ask", () => {
  it("asks consent for the remote model as the server proposes it, then streams the answer, links each valid citation to its lines and flags the invalid one", async () => {
    const { app, plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    await view.ask("how do I feed my sourdough starter?");
    expect(view.result).toBeNull();
    expect(view.answerEl.textContent).toContain("What is sent, and where");
    expect(view.answerEl.textContent).toContain("openai-compatible model chat-test at http://0.0.0.0:");
    const send = [...view.answerEl.querySelectorAll("button")].find((b) => b.textContent === "Send")!;
    send.click();
    await view.pending;
    expect(view.tokens).toBeGreaterThan(2); // the answer arrived piece by piece, then the final object
    expect(view.streamed).toBe(view.result!.answer);
    expect(view.result!.answer).toBe("Feed the starter rye flour every day [S1]; see also [S9].");
    expect(view.result!.invalid_citations).toEqual(["S9"]);
    const cites = [...view.answerEl.querySelectorAll(".vaultlens-cite")].map((a) => a.textContent);
    expect(cites).toEqual(["[S1]"]);
    expect(view.answerEl.querySelector(".vaultlens-invalid")!.textContent).toBe("[S9]");
    expect(await view.cite("S1")).toBe(true);
    const s1 = view.result!.sources.find((s) => s.id === "S1")!;
    expect(s1.path).toBe("Bread/Starter.md");
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Bread/Starter.md", line: s1.start_line - 1 });
    expect(await view.cite("S9")).toBe(false);
  });

  it("says how to start the server when none answers", async () => {
    const { plugin } = await loaded({ url: await deadUrl() });
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    await view.ask("anything");
    expect(view.answerEl.textContent).toContain("vaultlens serve --vault");
  });

  it("answers with passages and no model when extractive is on", async () => {
    const { plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    view.extractive.checked = true;
    await view.ask("how do I feed my sourdough starter?");
    expect(view.result!.sources[0].path).toBe("Bread/Starter.md");
    expect(view.result!.answer).not.toContain("[S9]");
  });
});

group("duplicates and the status bar", () => {
  it("lists the same-named pair and the status bar counts the notes", async () => {
    const { app, plugin } = await loaded();
    const modal = new DuplicatesModal(app as never, () => plugin.client());
    modal.open();
    await modal.pending;
    expect(modal.pairs).toContainEqual({ a: "Study/Caching/Cache lifetime.md", b: "Study/Systems/Cache lifetime.md", kind: "same_name" });
    const { refreshStatus } = await import("../src/status");
    expect(await refreshStatus(plugin.statusEl!, plugin.client())).toMatch(/^vaultlens: 5 notes · watching/);
    plugin.statusEl!.click();
    expect(browserOpened.at(-1)).toBe(`${server().url}/status`);
  });
});

