// The end-to-end steps on keyboard use: the palette offers what acts on a pending request only
// while one is pending; Open Chat puts the focus in the prompt; Alt+M toggles Plan/Build
// there while Tab and Shift+Tab move the focus; Approve Plan from the palette names the plan
// and asks once.
import { STEP_MS, check, ensure, shot, statusText, waitFor } from './workbench.mjs';

export const KEYBOARD_STEP = 'keyboard only: Open Chat puts the focus in the prompt; Alt+M toggles Plan → Build → Plan there and Shift+Tab moves the focus; Approve Plan from the palette names the plan and asks once (Escape: still rejected)';

/** Opens the command palette from the editor and types `text`; the rows once the list
 * answered (some rows, or VS Code's "No matching commands"). */
async function palette(page, text) {
  await page.keyboard.press('Control+1');
  await page.keyboard.press('F1');
  const widget = page.locator('.quick-input-widget');
  await widget.locator('input').waitFor({ state: 'visible', timeout: STEP_MS });
  await widget.locator('input').fill(text);
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  let texts = [];
  await waitFor(`the palette's answer to ${text}`, async () => {
    texts = await rows.allInnerTexts();
    return texts.length > 0 || /No matching commands/.test(await widget.innerText());
  });
  return texts;
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
