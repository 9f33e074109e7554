// The end-to-end steps on keyboard use, and the keyboard helpers of the walk from install to
// the first Do run: the palette offers what acts on a pending request only
// while one is pending; Open Chat puts the focus in the prompt; Alt+M toggles Plan/Build
// there while Tab and Shift+Tab move the focus; Approve Plan from the palette names the plan
// and asks once.
import { STEP_MS, check, ensure, log, openQuickInput, shot, statusText, waitFor } from './workbench.mjs';

export const KEYBOARD_STEP = 'keyboard only: Open Chat puts the focus in the prompt; Alt+M toggles Plan → Build → Plan there and Shift+Tab moves the focus; Approve Plan from the palette names the plan and asks once (Escape: still rejected)';

/** Opens the command palette from the editor and types `text`; the rows once the list
 * answered (some rows, or VS Code's "No matching commands"). */
export async function palette(page, text) {
  const widget = page.locator('.quick-input-widget');
  const missed = [];
  await waitFor('the palette open with the focus in its box', async () => {
    const failed = await openQuickInput(page, 'F1', 'the palette');
    if (failed) missed.push(failed);
    return !failed;
  }, 2 * STEP_MS).catch((err) => {
    throw new Error(`${err.message}; the attempts: ${missed.join(' | ')}`);
  });
  if (missed.length) log(`  the palette opened at attempt ${missed.length + 1}; before: ${missed.join(' | ')}`);
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  let texts = [];
  await waitFor(`the palette's answer to ${text}`, async () => {
    texts = await rows.allInnerTexts();
    return texts.length > 0 || /No matching commands/.test(await widget.innerText());
  });
  return texts;
}

/** Runs the palette command titled `title` (Enter on its row, the one of exactly that title). */
export async function runCommand(page, title) {
  const rows = await palette(page, `>${title}`);
  ensure(rows.some((r) => r.includes(title)), `the palette does not offer ${title}: ${JSON.stringify(rows)}`);
  const focused = page.locator('.quick-input-widget .quick-input-list .monaco-list-row.focused .label-name');
  const onIt = async () => ((await focused.first().textContent().catch(() => '')) ?? '').trim() === title;
  for (let i = 0; i < 10 && !(await onIt()); i++) await page.keyboard.press('ArrowDown');
  ensure(await onIt(), `could not focus the palette's row ${title}`);
  await page.keyboard.press('Enter');
}

/** What has the focus in the chat: the chat itself (`has`), and the control's test id, action,
 * option, preset and text, and where it sits (`setup`: the set-up card, `notice`, `permission`:
 * a permission card, whose text is `card`). */
export async function chatFocus(chat) {
  return chat.locator('body').evaluate(() => {
    const el = document.activeElement;
    const has = document.hasFocus();
    if (!el || el === document.body) return { has, testid: '', action: '', text: '', in: '' };
    const d = el.dataset ?? {};
    const permission = el.closest('[data-testid=permission-card]');
    return {
      has, id: el.id, testid: d.testid ?? '', action: d.action ?? '', option: d.option ?? '', preset: d.preset ?? '',
      text: (el.innerText || el.value || '').trim(),
      in: el.closest('#setup-card') ? 'setup' : el.closest('[data-testid=notice]') ? 'notice' : permission ? 'permission' : '',
      card: permission?.innerText ?? '',
    };
  });
}

/** Waits until the chat's focus is on what `want` accepts. */
export async function focusOn(chat, what, want, timeoutMs = STEP_MS) {
  let last;
  await waitFor(`the focus on ${what}`, async () => {
    last = await chatFocus(chat);
    return last.has && want(last);
  }, timeoutMs).catch((err) => {
    throw new Error(`${err.message}; the focus: ${JSON.stringify(last)}`);
  });
  return last;
}

/** Presses Tab (Shift+Tab with `back`) until the chat's focus is on what `want` accepts, as a
 * keyboard user goes through the chat's controls in their order; the controls passed on the
 * way are in the error. */
export async function tabTo(page, chat, what, want, { back = false, max = 30 } = {}) {
  const passed = [];
  for (let i = 0; i <= max; i++) {
    const focus = await chatFocus(chat);
    if (focus.has && want(focus)) return focus;
    passed.push(focus.testid || focus.action || focus.id || focus.text.slice(0, 20) || '(nothing)');
    if (i < max) await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
  }
  throw new Error(`${back ? 'Shift+Tab' : 'Tab'} never reached ${what}; passed: ${passed.join(' → ')}`);
}

/** Open Chat from the palette; the chat has the focus. */
export async function openChatByKeyboard(page, chat) {
  await runCommand(page, 'Plan LSP: Open Chat');
  await waitFor('the chat to have the focus', async () => (await chatFocus(chat)).has).catch(async (err) => {
    const where = await page.evaluate(() => {
      const el = document.activeElement;
      return `${el?.tagName}.${el?.className} ${el?.getAttribute('aria-label') ?? ''} ${(el?.textContent ?? '').slice(0, 60)}`;
    });
    throw new Error(`${err.message}; the workbench's focus: ${where}`);
  });
}

/** Types a prompt into the chat and sends it, keyboard only: Open Chat puts the focus in the
 * prompt. */
export async function typePrompt(page, chat, text) {
  await openChatByKeyboard(page, chat);
  await focusOn(chat, 'the prompt', (f) => f.testid === 'prompt');
  await waitFor('the Send button to be enabled', async () => chat.locator('[data-testid=send]').isEnabled());
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

/** With nothing pending, the palette answers "Allow This Change" with neither it nor Approve
 * Plan (Enter there once approved a plan). */
export async function nothingPendingInPalette(page) {
  const rows = await palette(page, '>Allow This Change');
  ensure(!rows.some((r) => /Plan LSP: (Approve Plan|Allow This Change|Reject Plan)/.test(r)), `the palette offers ${JSON.stringify(rows)} with nothing pending`);
  await shot(page, '03a-palette-nothing-pending');
  await page.keyboard.press('Escape');
}

async function promptFocused(chat) {
  return chat.locator('[data-testid=prompt]').evaluate((el) => document.activeElement === el && document.hasFocus());
}

/** A plan (`planFile`) was rejected and nothing runs; `chat` is the chat view's frame. */
export async function keyboardWalk(page, chat, planFile) {
  await check(page, KEYBOARD_STEP, async () => {
    const prompt = chat.locator('[data-testid=prompt]');
    await prompt.fill('');
    const rows = await palette(page, '>Plan LSP: Open Chat');
    ensure(rows.some((r) => r.includes('Plan LSP: Open Chat')), `the palette rows: ${JSON.stringify(rows)}`);
    await page.keyboard.press('Enter');
    await waitFor('the focus in the prompt after Open Chat', () => promptFocused(chat));
    await page.keyboard.type('typed without a click');
    ensure((await prompt.inputValue()) === 'typed without a click', `the prompt holds ${JSON.stringify(await prompt.inputValue())}`);

    await page.keyboard.press('Alt+m');
    await waitFor('status bar "Build" after Alt+M', async () => (await statusText(page)).startsWith('Build'));
    await waitFor('the chat to show Build', async () => (await chat.locator('[data-testid=mode-build]').getAttribute('aria-pressed')) === 'true');
    await page.keyboard.press('Alt+m');
    await waitFor('status bar "Plan" after Alt+M again', async () => (await statusText(page)).startsWith('Plan'));
    ensure((await prompt.inputValue()) === 'typed without a click', `Alt+M typed into the prompt: ${JSON.stringify(await prompt.inputValue())}`);
    await shot(page, '14a-keyboard-prompt');

    // Shift+Tab leaves the prompt for the control before it; the mode stays.
    await page.keyboard.press('Shift+Tab');
    await waitFor('the focus out of the prompt', async () => !(await promptFocused(chat)));
    ensure((await statusText(page)).startsWith('Plan'), `Shift+Tab changed the mode: ${await statusText(page)}`);
    await prompt.fill('');

    // The palette's Approve Plan names the plan and asks once; Escape approves nothing.
    const approve = await palette(page, '>Plan LSP: Approve Plan');
    ensure(approve.some((r) => r.includes('Plan LSP: Approve Plan')), `a rejected plan is not offered for approval: ${JSON.stringify(approve)}`);
    await page.keyboard.press('Enter');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: STEP_MS });
    const asked = await dialog.innerText();
    ensure(asked.includes(`Approve ${planFile}, "`), `the approval question does not name the plan: ${asked}`);
    await shot(page, '14b-approve-from-palette');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: STEP_MS });
    ensure(/rejected/.test(await chat.locator('[data-testid=plan-status]').innerText()), 'Escape on the question changed the plan');
  });
}

/** Runs the lens titled `title` on the cursor's line of the active editor, keyboard only: the
 * palette's "Show CodeLens Commands for Current Line" lists them; the row, then Enter. */
export async function runLens(page, title) {
  await runCommand(page, 'Show CodeLens Commands for Current Line');
  const widget = page.locator('.quick-input-widget');
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  // The palette's own list stays a moment after Enter (its box still starts with `>`): the
  // lenses are the list of the quick pick that replaces it.
  await waitFor('the lenses of the line', async () =>
    (await widget.isVisible()) && !(await widget.locator('input').inputValue()).startsWith('>') &&
    (await rows.count()) > 0);
  const focused = widget.locator('.quick-input-list .monaco-list-row.focused .label-name');
  const onIt = async () => ((await focused.first().textContent().catch(() => '')) ?? '').trim() === title;
  for (let i = 0; i < 10 && !(await onIt()); i++) await page.keyboard.press('ArrowDown');
  ensure(await onIt(), `the line's lenses: ${JSON.stringify(await rows.allInnerTexts())}`);
  await page.keyboard.press('Enter');
}
