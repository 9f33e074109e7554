// The end-to-end step on plans as history: after a plan was approved and carried out, the
// next planning round drafts into its own file (PLAN-2.md), brought to the front without
// taking the focus from the chat, and the chat's plan card says it is drafted there; PLAN.md keeps the approved plan, its lens says so, and
// "Plan LSP: Show Plans" lists both.
import { readFileSync } from 'node:fs';
import { activeTabTitle, check, ensure, quickOpen, sendPrompt, shot, waitFor } from './workbench.mjs';
import { runCommand } from './keyboard-steps.mjs';

export const SECOND_ROUND_STEP = 'after an approved plan a new draft streams into PLAN-2.md, brought to the front without taking the focus from the chat, whose plan card says "PLAN-2.md: drafting" with no todos; PLAN.md keeps the approved plan, its lens says approved, and Show Plans lists both';

/** The file the second round writes. */
export const SECOND_PLAN_FILE = 'PLAN-2.md';

/** The extension's record (PLAN_LSP_DOCUMENT_LOG) of one plan file: open/change events. */
export function planEvents(documentLog, fileName) {
  const lines = readFileSync(documentLog, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return lines.filter((l) => (l.event === 'open' || l.event === 'change') && l.path.split(/[\\/]/).pop() === fileName);
}

async function chatHasFocus(chat) {
  return chat.locator('[data-testid=prompt]').evaluate((el) => document.activeElement === el && document.hasFocus());
}

/** How much of `plan`'s beginning `text` shows. */
function shown(text, plan) {
  let i = 0;
  while (i < text.length && i < plan.length && text[i] === plan[i]) i++;
  return i;
}

/**
 * A plan was approved and carried out in PLAN.md (`approvedFile`, its path) and the session
 * asks for another plan now; `secondPlan` is what the model streams, `documentLog` the
 * extension's record of plan documents.
 */
export async function secondRoundDraft(page, chat, { documentLog, secondPlan, approvedFile }) {
  await check(page, SECOND_ROUND_STEP, async () => {
    const approvedText = readFileSync(approvedFile, 'utf8');
    await quickOpen(page, 'hello.py');
    const since = Date.now() / 1000;
    await sendPrompt(chat, 'Plan a farewell');
    await waitFor(`${SECOND_PLAN_FILE} to come to the front`, async () => (await activeTabTitle(page)) === SECOND_PLAN_FILE);
    const partOf = (text) => shown(text, secondPlan) > 0 && shown(text, secondPlan) < secondPlan.length;
    await waitFor(`the second plan streaming into ${SECOND_PLAN_FILE}`, async () =>
      planEvents(documentLog, SECOND_PLAN_FILE).some((e) => e.t >= since && partOf(e.text)));
    ensure(await chatHasFocus(chat), 'the chat input lost the focus');
    // While it streams, the chat's panels follow the new round: its file drafting, no todos of
    // the last Do run.
    const drafting = await chat.locator('[data-testid=plan-status]').innerText();
    ensure(drafting.includes(`${SECOND_PLAN_FILE}: drafting`), `the plan card while the second plan streams: ${drafting}`);
    ensure(await chat.locator('[data-testid=todos]').isHidden(), `the last run's todos show during the next draft: ${await chat.locator('[data-testid=todos]').innerText()}`);
    await waitFor('plan status "submitted"', async () => /submitted/.test(await chat.locator('[data-testid=plan-status]').innerText()));
    const status = await chat.locator('[data-testid=plan-status]').innerText();
    ensure(status.includes(SECOND_PLAN_FILE), `the chat's plan card does not name ${SECOND_PLAN_FILE}: ${status}`);
    const events = planEvents(documentLog, SECOND_PLAN_FILE);
    const growing = new Set(events.filter((e) => e.t >= since && partOf(e.text)).map((e) => e.text)).size;
    ensure(growing >= 10, `${SECOND_PLAN_FILE} showed ${growing} growing beginnings of the second plan (want 10 or more)`);
    ensure(events.at(-1).text === secondPlan && events.at(-1).visible, `${SECOND_PLAN_FILE} on screen does not hold the second plan`);
    ensure(await chatHasFocus(chat), 'the chat input lost the focus');
    // Nothing of the second plan reached PLAN.md: not its document, not the disk.
    const intoFirst = planEvents(documentLog, 'PLAN.md').filter((e) => e.t >= since && shown(e.text, secondPlan) > 0);
    ensure(intoFirst.length === 0, `the second plan went into PLAN.md: ${JSON.stringify(intoFirst[0]?.text?.slice(0, 200))}`);
    ensure(readFileSync(approvedFile, 'utf8') === approvedText, 'PLAN.md on disk changed during the second round');
    await shot(page, '13-second-draft-revealed');

    // PLAN.md's lens: the approved plan, carried out; never Approve.
    await quickOpen(page, 'PLAN.md');
    // The keys go to the editor (the chat kept the focus), which shows its first line, lenses on top.
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').click();
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    await waitFor('the "Approved plan ✓" lens on PLAN.md and no Approve lens', async () =>
      (await lenses.filter({ hasText: /Approved plan ✓/ }).count()) > 0 && (await lenses.filter({ hasText: /Approve \(/ }).count()) === 0);
    await shot(page, '13a-approved-plan-lens');

    // Show Plans lists both, each with its status in words.
    await runCommand(page, 'Plan LSP: Show Plans');
    const rows = page.locator('.quick-input-list .monaco-list-row');
    let listed = [];
    await waitFor('Show Plans to list PLAN-2.md and PLAN.md', async () => {
      listed = await rows.allInnerTexts();
      return listed.some((r) => r.includes(SECOND_PLAN_FILE) && r.includes('waiting for your decision')) &&
        listed.some((r) => /PLAN\.md/.test(r.replace(SECOND_PLAN_FILE, '')) && r.includes('approved'));
    });
    await shot(page, '13b-show-plans');
    // Choosing the submitted plan opens it.
    await page.locator('.quick-input-list .monaco-list-row', { hasText: SECOND_PLAN_FILE }).first().click();
    await waitFor(`${SECOND_PLAN_FILE} to be the active editor`, async () => (await activeTabTitle(page)) === SECOND_PLAN_FILE);
  });
}
