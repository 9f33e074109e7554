// The end-to-end step on reviewing a plan like code: on a selection of the plan, Ctrl+. offers
// "Comment on these lines…", which asks for the comment in an input box (Escape: nothing);
// the comment shows as an Information diagnostic (source "plan review") on its lines and the
// lens offers to send it; sent, the model receives it with the lines it quotes, writes a
// revised plan, and the lens says the comment was addressed.
import { readFileSync } from 'node:fs';
import { STEP_MS, activeEditorText, check, ensure, log, quickOpen, shot, userMessagesWith, waitFor } from './workbench.mjs';

export const COMMENT_STEP = 'Comment on these lines… (Ctrl+. on a selection of the plan) asks in an input box (Escape: nothing); the comment is an Information diagnostic of "plan review" on its lines, the lens sends it, the model gets it with the quoted lines, and the revised plan\'s lens says it is addressed';

/** What the user types about lines 11–12 of the second plan (its steps 3 and 4). */
export const COMMENT = 'Skip the search; say goodbye in README.md too.';

/** The plan the model writes after the comment: two steps, the Do run of
 * checkpoint-steps.mjs carries them out. */
export const FAREWELL_PLAN = [
  '# Plan: say goodbye (revised after review)',
  '',
  '## Steps',
  '',
  '1. Change the greeting in `hello.py` to `goodbye, world`, then print the file to check it.',
  '2. Say goodbye in `README.md` too.',
  '',
  'Nothing else changes.',
  '',
].join('\n');

/** The input box of the comment, once shown. */
async function commentBox(page) {
  const widget = page.locator('.quick-input-widget');
  await waitFor('the input box "Comment on lines 11–12"', async () =>
    (await widget.isVisible()) && (await widget.locator('.quick-input-title').innerText()).includes('Comment on lines 11–12'));
  return widget;
}

/** Lines 11–12 (steps 3 and 4) selected, whole lines: Go to Line, then Ctrl+L twice. */
async function selectSteps(page) {
  await page.keyboard.press('Control+g');
  await page.locator('.quick-input-widget input').waitFor({ state: 'visible', timeout: STEP_MS });
  await page.keyboard.type('11');
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: STEP_MS });
  await page.keyboard.press('Control+l');
  await page.keyboard.press('Control+l');
}

/** Lines 11–12 selected, Ctrl+., then "Comment on these lines…" chosen with the keys.
 * The code actions come from the server as the editor asks: a press made while the editor
 * was still taking the focus, or while the session finished its last run (no actions on a
 * plan while a run holds it), shows "No code actions available" and closes. Each attempt
 * that did not offer the action is logged with what it showed; then the user presses again. */
async function commentAction(page) {
  const menu = page.locator('.action-widget');
  const item = menu.locator('.monaco-list-row.action', { hasText: 'Comment on these lines…' });
  const missed = [];
  await waitFor('Ctrl+. to offer "Comment on these lines…"', async () => {
    // Escape below may have cleared the selection: made again at each attempt.
    await selectSteps(page);
    await page.keyboard.press('Control+.');
    if (await item.first().waitFor({ timeout: 5000 }).then(() => true, () => false)) return true;
    const rows = await menu.locator('.monaco-list-row').allInnerTexts().catch(() => []);
    const hint = await page.locator('.monaco-editor-overlaymessage, .context-view').allInnerTexts().catch(() => []);
    const focus = await page.evaluate(() => `${document.activeElement?.tagName}.${document.activeElement?.className}`);
    missed.push(`menu ${JSON.stringify(rows)}, message ${JSON.stringify(hint)}, focus ${focus}`);
    await page.keyboard.press('Escape');
    return false;
  }).catch((err) => {
    throw new Error(`${err.message}; the attempts: ${missed.join(' | ')}`);
  });
  if (missed.length) log(`  Ctrl+. offered the comment at attempt ${missed.length + 1}; before: ${missed.join(' | ')}`);
  const focused = menu.locator('.monaco-list-row.action.focused');
  for (let i = 0; i < 10 && !/Comment on these lines…/.test(await focused.first().innerText().catch(() => '')); i++) {
    await page.keyboard.press('ArrowDown');
  }
  ensure(/Comment on these lines…/.test(await focused.first().innerText()), `Ctrl+. offers: ${JSON.stringify(await menu.locator('.monaco-list-row').allInnerTexts())}`);
  await shot(page, '17a-comment-action');
  await page.keyboard.press('Enter');
}

/** The second plan (`planFile`, its path; `secondPlan`, its text) is rejected and nothing
 * runs; `model` is the FakeOpenAI server; `pace` the model's speed. */
export async function commentOnPlan(page, chat, { model, planFile, secondPlan, pace }) {
  await check(page, COMMENT_STEP, async () => {
    const name = planFile.split(/[\\/]/).pop();
    await quickOpen(page, name);

    // Escape: nothing is commented, nothing is typed into the plan.
    await commentAction(page);
    let box = await commentBox(page);
    await page.keyboard.press('Escape');
    await waitFor('the input box to close', async () => !(await box.isVisible()));
    ensure(!(await activeEditorText(page)).includes('> comment:'), 'Escape put a "> comment:" line into the plan');
    ensure(readFileSync(planFile, 'utf8') === secondPlan, `${name} changed on disk after Escape`);

    await commentAction(page);
    box = await commentBox(page);
    await box.locator('input').fill(COMMENT);
    await shot(page, '17b-comment-typed');
    await page.keyboard.press('Enter');
    await waitFor('the input box to close', async () => !(await box.isVisible()));
    ensure(!(await activeEditorText(page)).includes('> comment:'), 'the comment was typed into the plan, not kept by the server');

    // The diagnostic, in the Problems panel: Information, "plan review", on line 11.
    await page.keyboard.press('Control+Shift+M');
    const rows = page.locator('.markers-panel .monaco-list-row', { hasText: `Comment: ${COMMENT}` });
    await rows.first().waitFor({ timeout: STEP_MS });
    ensure((await rows.count()) === 1, `${await rows.count()} comment rows in the Problems panel`);
    const row = rows.first();
    const rowText = (await row.innerText()).replace(/\s+/g, ' ');
    ensure(/plan review/.test(rowText) && /\[Ln 11, Col 1\]/.test(rowText), `the Problems row: ${rowText}`);
    ensure((await row.locator('.codicon-info').count()) === 1, `the comment is not shown as Information: ${await row.innerHTML()}`);
    await shot(page, '17c-comment-diagnostic');

    // The lens sends it; the model receives it with its lines and revises the plan.
    model.turns.push(
      { pace, tool_calls: [{ name: 'plan_write', arguments: { content: FAREWELL_PLAN } }] },
      { tool_calls: [{ name: 'exit_plan_mode', arguments: {} }] },
    );
    await quickOpen(page, name);
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    const send = lenses.locator('a', { hasText: /^1 comment — send$/ });
    await send.first().waitFor({ timeout: STEP_MS });
    const asked = model.agentRequests.length;
    await send.first().click();
    const request = await waitFor('the revision request', async () => model.agentRequests[asked]);
    const lines = secondPlan.split('\n');
    for (const quoted of [`Comment: ${COMMENT}`, `> ${lines[10]}`, `> ${lines[11]}`]) {
      ensure(userMessagesWith(request, JSON.stringify(quoted).slice(1, -1)) === 1,
        `the revision request lacks ${JSON.stringify(quoted)}: ${JSON.stringify(request.body?.messages?.filter((m) => m.role === 'user').at(-1))}`);
    }
    await waitFor(`the revised plan in ${name}, submitted`, async () =>
      /submitted/.test(await chat.locator('[data-testid=plan-status]').innerText()) && readFileSync(planFile, 'utf8') === FAREWELL_PLAN);
    await waitFor('the lens "1 of 1 comments addressed"', async () =>
      (await lenses.filter({ hasText: /1 of 1 comments addressed/ }).count()) > 0 &&
      (await lenses.filter({ hasText: /comment — send/ }).count()) === 0);
    await page.locator('.markers-panel .monaco-list-row', { hasText: `Comment (addressed): ${COMMENT}` }).first().waitFor({ timeout: STEP_MS });
    await shot(page, '17d-comment-addressed');
    await page.keyboard.press('Control+j'); // the panel closes: the editor gets its room back
  });
}
