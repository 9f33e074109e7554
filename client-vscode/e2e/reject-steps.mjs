// The end-to-end step on rejecting a plan: Reject… on PLAN.md's code lens asks for feedback
// in an input box (Escape cancels, an empty box rejects without feedback), and a rejected
// plan is never a dead end: the lens and the chat offer Approve and Revise….
import { STEP_MS, check, ensure, quickOpen, shot, waitFor } from './workbench.mjs';

export const REJECT_STEP = 'Reject… on the lens asks for feedback: Escape keeps the plan submitted, an empty box rejects it; the lens and the chat then offer Approve and Revise…';

async function planStatus(chat) {
  return (await chat.locator('[data-testid=plan-status]').allInnerTexts()).join(' ');
}

async function rejectBox(page) {
  const widget = page.locator('.quick-input-widget');
  await waitFor('the input box "Reject the plan"', async () =>
    (await widget.isVisible()) && (await widget.locator('.quick-input-title').innerText()).includes('Reject the plan'));
  return widget;
}

/** A submitted plan is open in `planFile` (PLAN.md, or a later round's PLAN-2.md); `chat` is
 * the chat view's frame. */
export async function rejectWithoutFeedback(page, chat, planFile = 'PLAN.md') {
  await check(page, REJECT_STEP, async () => {
    ensure(/submitted/.test(await planStatus(chat)), `the plan is not submitted: ${await planStatus(chat)}`);
    await quickOpen(page, planFile);
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    const reject = lenses.locator('a', { hasText: /^Reject…$/ });
    await reject.first().waitFor({ timeout: STEP_MS });

    // Escape: nothing happens.
    await reject.first().click();
    let box = await rejectBox(page);
    await page.keyboard.press('Escape');
    await waitFor('the input box to close', async () => !(await box.isVisible()));
    ensure(/submitted/.test(await planStatus(chat)), `Escape changed the plan: ${await planStatus(chat)}`);

    // Empty: rejected without feedback, and still approvable and revisable.
    await reject.first().click();
    box = await rejectBox(page);
    await box.locator('input').fill('');
    await page.keyboard.press('Enter');
    await waitFor('plan status "rejected"', async () => /rejected/.test(await planStatus(chat)));
    await waitFor('the lenses Approve and Revise… on the rejected plan', async () =>
      (await lenses.filter({ hasText: /Approve \(auto-accept edits\)/ }).count()) > 0 &&
      (await lenses.filter({ hasText: /Revise…/ }).count()) > 0 &&
      (await lenses.filter({ hasText: /waiting for a revised plan/ }).count()) === 0);
    await chat.locator('[data-testid=approve]').waitFor({ timeout: STEP_MS });
    const revise = chat.locator('[data-testid=feedback]');
    ensure((await revise.innerText()).trim() === 'Revise…', `the chat's second button: ${await revise.innerText()}`);
    await shot(page, '14-rejected-plan');
  });
}
