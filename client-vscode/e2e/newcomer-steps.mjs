// The newcomer's walk through VS Code's defaults: the workspace trust prompt answered as a
// user would, the walkthrough opened while VS Code's Welcome page is open, the times the
// first start takes (recorded in results.json's `times`).
import { STEP_MS, log, waitFor } from './workbench.mjs';

/** Moments of the walk (ms since the epoch), and the times between them, for results.json. */
export const moments = {};

export function mark(name) {
  moments[name] ??= Date.now();
}

/** Seconds between two recorded moments, or null when one is missing. */
export function between(from, to) {
  return moments[from] && moments[to] ? (moments[to] - moments[from]) / 1000 : null;
}

/** VS Code asks whether the folder's authors are trusted (workspace trust on, the default):
 *  "Yes, I trust the authors". Returns once the dialog is gone. */
export async function trustWorkspace(page) {
  const yes = page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Yes, I trust the authors' });
  await yes.first().waitFor({ timeout: STEP_MS });
  await yes.first().click();
  mark('trusted');
  await waitFor('the trust dialog to close', async () => (await page.locator('.monaco-dialog-box').count()) === 0);
  log('workspace trusted');
}

export const WALKTHROUGH_STEP = "the walkthrough opens from the chat's link while VS Code's Welcome page is open";

/** The titles of the editor tabs, every group. */
async function tabTitles(page) {
  return (await page.locator('.editor-group-container .tab .label-name').allInnerTexts()).map((t) => t.trim());
}

/** On a default first run VS Code's Welcome page is open, on VS Code's own "Setup"
 *  walkthrough: the chat's walkthrough link must still show the extension's walkthrough (its
 *  title), not leave the Welcome page as it is. */
export async function walkthroughOverWelcome(page, chat, { check, ensure, shot }) {
  await check(page, WALKTHROUGH_STEP, async () => {
    const welcome = (titles) => titles.filter((t) => t === 'Welcome' || (t.startsWith('Walkthrough: ') && !t.includes('Plan LSP')));
    await waitFor("VS Code's Welcome page", async () => welcome(await tabTitles(page)).length > 0);
    const editors = page.locator('.part.editor');
    ensure(!/Get started with Plan LSP/.test(await editors.innerText()), 'the walkthrough shows before it is asked for');
    await shot(page, '03a-welcome-page');
    await chat.locator('[data-testid=empty] [data-action=openWalkthrough]').click();
    await waitFor("the walkthrough's title", async () =>
      /Get started with Plan LSP/.test(await page.locator('.editor-group-container.active').innerText()));
    ensure(welcome(await tabTitles(page)).length === 0, `the Welcome page is still open beside the walkthrough: ${JSON.stringify(await tabTitles(page))}`);
    await shot(page, '03b-walkthrough-over-welcome');
  });
}
