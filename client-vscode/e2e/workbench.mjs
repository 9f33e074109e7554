// Helpers that drive the code-server workbench for the end-to-end test: waiting, steps with
// screenshots, the status bar, editors, quick inputs, the Plan LSP chat webview, the logs.
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const STEP_MS = Number(process.env.E2E_TIMEOUT_S ?? 60) * 1000;
const started = Date.now();

/** Per-step results, written to results.json by the runner. */
export const results = [];
let artifacts = '.';

export function setArtifacts(dir) {
  artifacts = dir;
}

export function elapsed() {
  return (Date.now() - started) / 1000;
}

export function log(message) {
  process.stdout.write(`[e2e ${elapsed().toFixed(1)}s] ${message}\n`);
}

export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

export async function waitFor(what, fn, timeoutMs = STEP_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) {
        if (process.env.E2E_VERBOSE) log(`  got ${what}`);
        return value;
      }
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
}

export async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, `${name}.png`) }).catch((err) => log(`screenshot ${name} failed: ${err.message}`));
}

/** One step; a failed step stops the run (the next ones build on it). */
export async function check(page, name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, seconds: (Date.now() - t0) / 1000 });
    log(`PASS ${name}`);
  } catch (err) {
    results.push({ name, ok: false, seconds: (Date.now() - t0) / 1000, error: err.message });
    log(`FAIL ${name}: ${err.message}`);
    const slug = name.replace(/[^\w-]+/g, '-').slice(0, 80);
    await shot(page, `failed-${slug}`);
    // What the chat said, results included, for the post-mortem.
    const text = await chatFrame(page).locator('body').evaluate((b) => {
      b.querySelectorAll('details').forEach((d) => d.setAttribute('open', ''));
      return b.innerText;
    }).catch(() => '');
    writeFileSync(join(artifacts, `failed-${slug}.chat.txt`), text);
    throw err;
  }
}

export function ensure(condition, message) {
  if (!condition) throw new Error(message);
}

/** The workbench status bar item of this extension (its text, spaces normalised). */
export async function statusText(page) {
  const items = page.locator('.statusbar-item').filter({ has: page.locator('.codicon-eye, .codicon-tools') });
  if ((await items.count()) === 0) return '';
  return ((await items.first().innerText()) ?? '').replace(/[\s\u00a0]+/g, ' ').trim();
}

/** The active editor's text, lines in visual order (Monaco does not keep DOM order). */
export async function activeEditorText(page, selector = '.monaco-editor') {
  return page.evaluate((sel) => {
    const group = document.querySelector('.editor-group-container.active') ?? document;
    const editor = group.querySelector(sel) ?? group;
    const lines = [...editor.querySelectorAll('.view-lines .view-line')];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((l) => l.textContent.replace(/\u00a0/g, ' ')).join('\n');
  }, selector);
}

export async function activeTabTitle(page) {
  const tab = page.locator('.editor-group-container.active .tab.active .label-name');
  return (await tab.count()) ? (await tab.first().innerText()).trim() : '';
}

/** The chat view (other webviews, e.g. the walkthrough's Markdown, belong to no extension). */
export function chatFrame(page) {
  return page.frameLocator('iframe.webview.ready[src*="extensionId=plan-lsp.plan-lsp"]').frameLocator('iframe#active-frame');
}

/** Shows the Plan LSP view. Its activity-bar icon toggles: a click on it while the view is
 *  already shown (a reloaded window restores it) would hide it, so click only while it is not
 *  shown, and until it is. */
export async function openChat(page) {
  const item = page.locator('.activitybar .action-item:has(.action-label[aria-label^="Plan LSP"])').first();
  const shown = async () => ((await item.getAttribute('class')) || '').split(/\s+/).includes('checked');
  await waitFor('the Plan LSP view', async () => {
    if (await shown()) return true;
    await item.locator('.action-label').click();
    // the click's effect, before any second look (a second click would hide it again)
    return waitFor('the Plan LSP view after a click', shown, 5000).catch(() => false);
  }, 30000);
}

/** Types into the input box whose title contains `title` (it has the focus), and accepts:
 * the keyboard only. */
export async function answerInputBox(page, title, text) {
  const widget = page.locator('.quick-input-widget');
  await waitFor(`the input box "${title}"`, async () =>
    (await widget.isVisible()) && (await widget.locator('.quick-input-title').innerText()).includes(title));
  await waitFor(`the input box "${title}" to have the focus`, () => widget.locator('input').evaluate((el) => el === document.activeElement));
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await waitFor(`the input box "${title}" to close`, async () =>
    !(await widget.isVisible()) || !(await widget.locator('.quick-input-title').innerText()).includes(title));
}

/** Opens the workspace file `name` through Quick Open (Ctrl+P), as a user would. The file
 *  search behind it can miss a file for a while (a busy machine, a file just written), and its
 *  list reorders as results arrive: each attempt reopens Quick Open, types the name again and
 *  chooses the row whose label is exactly `name` (not a fuzzy neighbour such as PLAN-2.md or a
 *  diff of the file) — until the file is the active editor, never by waiting longer on one
 *  attempt. The attempts that failed are logged. */
/** One attempt at opening a quick input (Quick Open, the palette) with `key` from the editor
 * (Ctrl+1 first: not from a webview that has the focus) with its box focused; '' or what
 * went wrong. A webview that had the focus (the walkthrough, the chat) can take it back a
 * moment after the box opened, on a loaded machine later: the caller tries again. */
export async function openQuickInput(page, key, what) {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('input');
  if (await widget.isVisible()) {
    await page.keyboard.press('Escape');
    await widget.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
  }
  await page.keyboard.press('Control+1');
  await page.keyboard.press(key);
  if (!(await input.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false))) return `${what} did not open`;
  if (!(await waitFor(`${what} to have the focus`, () => input.evaluate((el) => el === document.activeElement), 5000).catch(() => false))) {
    return `${what} did not take the focus`;
  }
  return '';
}

export async function quickOpen(page, name, timeoutMs = 2 * STEP_MS) {
  const widget = page.locator('.quick-input-widget');
  const exact = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const row = widget.locator('.quick-input-list .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: exact }) }).first();
  // What each attempt that failed saw, for the log.
  const missed = [];
  const attempt = async () => {
    const failed = await openQuickInput(page, 'Control+P', 'Quick Open');
    if (failed) return failed;
    await page.keyboard.press('Control+A');
    await page.keyboard.type(name);
    if (!(await row.waitFor({ timeout: 5000 }).then(() => true, () => false))) {
      return `not listed: ${JSON.stringify(await widget.locator('.quick-input-list .monaco-list-row').allInnerTexts().catch(() => []))}`;
    }
    // The keyboard, not a click: the list reorders as results arrive, and a click can land on
    // the row that moved under the pointer. Down until the focused row is the file, then Enter.
    const focused = widget.locator('.quick-input-list .monaco-list-row.focused .label-name');
    for (let i = 0; i < 10 && !exact.test(((await focused.first().textContent().catch(() => '')) ?? '').trim()); i++) {
      await page.keyboard.press('ArrowDown');
    }
    if (!exact.test(((await focused.first().textContent().catch(() => '')) ?? '').trim())) return 'could not focus its row';
    await page.keyboard.press('Enter');
    const opened = await waitFor(`${name} to be the active editor`, async () => (await activeTabTitle(page)) === name, 5000).catch(() => false);
    return opened ? '' : `the active editor is ${await activeTabTitle(page)}`;
  };
  await waitFor(`${name} opened through Quick Open`, async () => {
    const failed = await attempt();
    if (failed) missed.push(failed);
    return !failed;
  }, timeoutMs).catch((err) => {
    throw new Error(`${err.message}; the attempts: ${missed.join(' | ')}`);
  });
  if (missed.length) log(`  Quick Open opened ${name} at attempt ${missed.length + 1}; before: ${missed.join(' | ')}`);
}

export async function cardKind(chat) {
  const card = chat.locator('[data-testid=setup-card]');
  if (!(await card.isVisible().catch(() => false))) return '';
  return (await card.getAttribute('data-kind')) ?? '';
}

export async function sendPrompt(chat, text) {
  await waitFor('the Send button to be enabled', async () => chat.locator('[data-testid=send]').isEnabled());
  const prompt = chat.locator('[data-testid=prompt]');
  await prompt.click();
  await prompt.fill(text);
  await prompt.press('Enter');
}

/** Every file under `dir` whose name matches. */
export function findFiles(dir, pattern, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findFiles(path, pattern, out);
    else if (pattern.test(name)) out.push(path);
  }
  return out;
}

/** The "Plan LSP" output channel as logged to disk by the workbench (all windows). */
export function outputLog(userDir) {
  return findFiles(join(userDir, 'logs'), /Plan LSP\.log$/).map((f) => readFileSync(f, 'utf8')).join('\n');
}

export function userMessagesWith(request, text) {
  return (request.body?.messages ?? []).filter((m) => m.role === 'user' && JSON.stringify(m.content).includes(text)).length;
}
