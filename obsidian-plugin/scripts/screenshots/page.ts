// The screenshot page: the plugin's own code (src/) on the tests' stand-in of the `obsidian` module
// (tests/obsidian.ts, built for the browser), against a real `vaultlens serve`. Each scene drives the
// plugin the way the tests do, places its elements in a frame with Obsidian's class names (styled by
// theme.css) and returns the selector scripts/screenshots.py photographs. This is not Obsidian.
import { App, ItemView, Modal, SuggestModal, TFile } from "obsidian";
import VaultlensPlugin from "../../src/main";
import { AskView, ASK_VIEW } from "../../src/ask";
import { DuplicatesModal } from "../../src/duplicates";
import { RelatedView, RELATED_VIEW } from "../../src/related";
import { ReviewModal } from "../../src/review";
import { SearchModal } from "../../src/search";

interface Setup {
  vault: string;
  writeToken: string;
}

let plugin: VaultlensPlugin;
let app: App;

async function load(setup: Setup): Promise<void> {
  app = new App(setup.vault);
  plugin = new VaultlensPlugin(app as never, { id: "vaultlens", version: "0.1.0" } as never);
  (plugin as unknown as { data: unknown }).data = { url: location.origin, writeToken: setup.writeToken };
  await plugin.onload();
}

/** Waits until a view's or modal's `pending` stops being replaced (a click starts the next step). */
async function settle(o: { pending: Promise<void> }): Promise<void> {
  for (let last = null; last !== o.pending; ) {
    last = o.pending;
    await last;
  }
}

function click(root: HTMLElement, text: string): void {
  const button = [...root.querySelectorAll("button")].reverse().find((b) => b.textContent === text && !b.disabled);
  if (!button) throw new Error(`no "${text}" button in: ${root.textContent}`);
  button.click();
}

function stage(): HTMLElement {
  document.body.replaceChildren();
  return document.body.createDiv({ cls: "stage" });
}

/** A modal as Obsidian lays it out: a dimmed backdrop, the modal, its title and content. */
function showModal(modal: Modal, extra = ""): string {
  modal.containerEl.addClass("modal-container");
  modal.modalEl.addClass("modal");
  if (extra) modal.modalEl.addClass(extra);
  modal.titleEl.addClass("modal-title");
  modal.contentEl.addClass("modal-content");
  stage().appendChild(modal.containerEl);
  return ".modal";
}

/** A side view in the right sidebar: its header (the view's name) above its content. */
function showView(view: ItemView & { getDisplayText(): string }): string {
  const pane = stage().createDiv({ cls: "workspace-leaf mod-right" });
  view.containerEl.addClass("workspace-leaf-content");
  const header = view.containerEl.children[0] as HTMLElement;
  header.addClass("view-header");
  header.setText(view.getDisplayText());
  view.contentEl.addClass("view-content");
  pane.appendChild(view.containerEl);
  if (plugin.statusEl) pane.createDiv({ cls: "status-bar" }).appendChild(plugin.statusEl);
  return ".workspace-leaf";
}

const scenes = {
  load,

  async search(query: string): Promise<string> {
    const modal = new SearchModal(app as never, () => plugin.client(), 0);
    modal.open();
    const suggest = modal as unknown as SuggestModal<unknown>;
    suggest.inputEl.addClass("prompt-input");
    suggest.resultContainerEl.addClass("prompt-results");
    modal.modalEl.replaceChildren(suggest.inputEl, suggest.resultContainerEl);
    const shown = showModal(modal, "prompt");
    await suggest.type(query);
    suggest.resultContainerEl.firstElementChild?.addClass("is-selected");
    return shown;
  },

  async related(path: string): Promise<string> {
    await app.workspace.getLeaf(false).openFile(new TFile(path));
    const view = (await plugin.reveal(RELATED_VIEW))!.view as unknown as RelatedView;
    await view.pending;
    return showView(view);
  },

  async askConsent(question: string): Promise<string> {
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    view.clear();
    await view.ask(question);
    return showView(view);
  },

  /** Send on the consent askConsent left open: the answer streams, then its citations link. */
  async askAnswer(): Promise<string> {
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    click(view.answerEl, "Send");
    await settle(view);
    if (!view.result) throw new Error(`no answer: ${view.contentEl.textContent}`);
    return showView(view);
  },

  async duplicates(): Promise<string> {
    const modal = new DuplicatesModal(app as never, () => plugin.client());
    modal.open();
    await modal.pending;
    return showModal(modal);
  },

  async review(a: string, b: string): Promise<string> {
    const modal = new ReviewModal(app as never, () => plugin.client(), a, b);
    modal.open();
    await settle(modal);
    if (modal.state === "proposed-send") {
      click(modal.contentEl, "Send");
      await settle(modal);
    }
    if (modal.state !== "proposed-write") throw new Error(`no diff: ${modal.contentEl.textContent}`);
    return showModal(modal, "mod-wide");
  },
};

(window as unknown as { scenes: typeof scenes }).scenes = scenes;
