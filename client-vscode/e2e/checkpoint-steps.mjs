// The end-to-end steps on a Do run's checkpoints and on what its commands see: the run edits
// hello.py while it is open in an editor tab (never saved by the user), then runs `cat
// hello.py`, whose output is the new text, with no "changed on disk" conflict; then "Revert to
// before this step" on step 1's lens brings the editor and the disk back to the text before
// the run, its tab saved, and the plan's lens says its steps are open again. The chat's
// checkpoints card of the run then redoes and reverts again, from the keyboard.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { STEP_MS, activeEditorText, activeTabTitle, check, ensure, quickOpen, shot, waitFor } from './workbench.mjs';

export const COMMANDS_SEE_EDITS_STEP = 'a Do run edits hello.py open in an editor tab, then runs cat hello.py: the command prints the new text, the tab is saved, not dirty, and no "changed on disk" conflict shows';
export const REVERT_STEP = '"Revert to before this step" on step 1\'s lens: the hello.py editor and the disk hold the text before the run again (README.md too), its tab not dirty, with no conflict shown, and the plan\'s lens says its steps are open, not done';
export const TIMELINE_STEP = 'the chat\'s checkpoints card of the Do run lists its steps with the files they changed and says what the lens\'s revert restored; its Redo, then its "Revert to here" on step 1, pressed with the keyboard: the disk and the hello.py editor follow, its tab not dirty, and the card says what each did';

const STEP_1 = 'Change the greeting in hello.py to goodbye, world';
const STEP_2 = 'Say goodbye in README.md';
const BEFORE = "print('hello, world')\n";
const AFTER = "print('goodbye, world')\n";

/** The Do run of the farewell plan (comment-steps.mjs): two steps, the first with a command. */
function doRun() {
  const todos = (first, second) => ({ name: 'todo_write', arguments: { todos: [{ content: STEP_1, status: first }, { content: STEP_2, status: second }] } });
  return [
    { tool_calls: [todos('in_progress', 'pending')] },
    { tool_calls: [{ name: 'edit_file', arguments: { path: 'hello.py', old_text: "print('hello, world')", new_text: "print('goodbye, world')" } }] },
    { tool_calls: [{ name: 'bash', arguments: { command: 'cat hello.py' } }] },
    { tool_calls: [todos('completed', 'in_progress')] },
    { tool_calls: [{ name: 'edit_file', arguments: { path: 'README.md', old_text: '# sample', new_text: '# sample\n\nIt says goodbye.' } }] },
    { tool_calls: [todos('completed', 'completed')] },
    { text: 'Done: goodbye said.' },
  ];
}

/** The output of `cat hello.py` in a model request: the tool message after the call. */
function catOutput(request) {
  const messages = request.body?.messages ?? [];
  const at = messages.findIndex((m) => m.role === 'assistant' && JSON.stringify(m.tool_calls ?? []).includes('cat hello.py'));
  return at >= 0 && messages[at + 1]?.role === 'tool' ? messages[at + 1].content : undefined;
}

/** The tab of `name` in any group. */
function tabOf(page, name) {
  return page.locator('.tabs-container .tab').filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${name.replace('.', '\\.')}$`) }) }).first();
}

/** What the workbench says about a file changed behind an editor, or a failed save. */
async function conflicts(page) {
  const dialogs = await page.locator('.monaco-dialog-box').allInnerTexts();
  const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
  return [...dialogs, ...toasts].filter((t) => /newer|changed on disk|conflict|Failed to save|overwrite/i.test(t));
}

/** The farewell plan (`planFile`) was submitted; `ws` is the workspace. */
export async function commandsSeeEdits(page, chat, { model, ws, planFile }) {
  await check(page, COMMANDS_SEE_EDITS_STEP, async () => {
    const hello = join(ws, 'hello.py');
    ensure(readFileSync(hello, 'utf8') === BEFORE, `hello.py before the run: ${readFileSync(hello, 'utf8')}`);
    // hello.py in a tab of its own (kept: opening the plan does not replace it), unmodified.
    await quickOpen(page, 'hello.py');
    await page.keyboard.press('Control+k');
    await page.keyboard.press('Enter');
    model.turns.push(...doRun());
    const asked = model.agentRequests.length;
    const name = planFile.split(/[\\/]/).pop();
    await quickOpen(page, name);
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    const approve = lenses.locator('a', { hasText: /^Approve \(auto-accept edits\)$/ });
    await approve.first().waitFor({ timeout: STEP_MS });
    await approve.first().click();
    // Edits run without asking; a command that only reads runs in the read-only sandbox
    // (where one proves itself), else it asks: then the user allows it.
    const allow = chat.locator('[data-testid=permission-card] [data-testid=permission-option][data-option=allow_once]');
    await waitFor('the run to end', async () => {
      if (await allow.count()) await allow.last().click();
      return (await chat.locator('[data-testid=assistant-message]', { hasText: 'Done: goodbye said.' }).count()) === 1;
    });
    // The command's output, as the model received it, and in its card.
    const output = JSON.stringify(model.agentRequests.slice(asked).map(catOutput).find((o) => o !== undefined) ?? null);
    ensure(output.includes("print('goodbye, world')") && !output.includes("print('hello, world')"), `cat hello.py printed: ${output}`);
    const bashCard = chat.locator('[data-testid=tool-card][data-tool=bash]').last();
    ensure((await bashCard.textContent()).includes("print('goodbye, world')"), `the command's card: ${await bashCard.textContent()}`);
    // The tab: the new text, saved, with no conflict.
    await quickOpen(page, 'hello.py');
    await waitFor('the hello.py editor to show the edit', async () => (await activeEditorText(page)).includes("print('goodbye, world')"));
    ensure(!/\bdirty\b/.test((await tabOf(page, 'hello.py').getAttribute('class')) ?? ''), 'the hello.py tab is left dirty');
    ensure(readFileSync(hello, 'utf8') === AFTER, 'hello.py on disk is not the edit');
    const seen = await conflicts(page);
    ensure(seen.length === 0, `the workbench shows a conflict: ${JSON.stringify(seen)}`);
    // The card's result unfolded, for the screenshot.
    await bashCard.locator('summary', { hasText: 'result' }).first().click({ timeout: 5000 }).catch(() => undefined);
    await bashCard.scrollIntoViewIfNeeded();
    await shot(page, '18-command-sees-edit');
  });
}

/** The farewell plan's Do run (commandsSeeEdits) ended. */
export async function revertStep(page, chat, { ws, planFile }) {
  await check(page, REVERT_STEP, async () => {
    const hello = join(ws, 'hello.py');
    const readme = join(ws, 'README.md');
    ensure(readFileSync(readme, 'utf8').includes('It says goodbye.'), 'the run did not edit README.md');
    const name = planFile.split(/[\\/]/).pop();
    await quickOpen(page, name);
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    await waitFor('the "Plan approved ✓ — done" lens', async () => (await lenses.filter({ hasText: /Plan approved ✓ — done/ }).count()) > 0);
    const reverts = lenses.locator('a', { hasText: /^Revert to before this step$/ });
    await waitFor('a revert lens on each step', async () => (await reverts.count()) === 2);
    // Step 1's: the one above the other.
    const tops = await reverts.evaluateAll((links) => links.map((a) => a.getBoundingClientRect().top));
    await shot(page, '19a-step-lenses');
    await reverts.nth(tops[0] <= tops[1] ? 0 : 1).click();
    await waitFor('hello.py and README.md on disk as before the run', async () =>
      readFileSync(hello, 'utf8') === BEFORE && readFileSync(readme, 'utf8') === '# sample\n');
    await waitFor('the lens to say the steps are open', async () =>
      (await lenses.filter({ hasText: /Plan approved ✓ — carried out partly: steps 1 and 2 open/ }).count()) > 0);
    ensure((await lenses.filter({ hasText: /— done/ }).count()) === 0, 'the lens still says done');
    ensure(/\[ \] Change the greeting/.test(readFileSync(planFile, 'utf8')), `the plan's checklist still ticks step 1: ${readFileSync(planFile, 'utf8')}`);
    await shot(page, '19b-reverted-lens');
    await quickOpen(page, 'hello.py');
    ensure((await activeTabTitle(page)) === 'hello.py', 'hello.py is not the active editor');
    await waitFor('the hello.py editor to show the text before the run', async () => {
      const text = await activeEditorText(page);
      return text.includes("print('hello, world')") && !text.includes('goodbye');
    });
    await waitFor('the hello.py tab not to be dirty', async () => !(await isDirty(page, 'hello.py')), 10000);
    const seen = await conflicts(page);
    ensure(seen.length === 0, `the workbench shows a conflict: ${JSON.stringify(seen)}`);
    await shot(page, '19c-reverted-editor');
  });
  await timelineRevert(page, chat, { ws });
}

/** Whether the tab of `name` shows unsaved changes. */
async function isDirty(page, name) {
  return /\bdirty\b/.test((await tabOf(page, name).getAttribute('class')) ?? '');
}

/** After `revertDone`: the hello.py editor shows `text`, its tab is not dirty, no conflict. */
async function editorFollows(page, what, text) {
  await quickOpen(page, 'hello.py');
  await waitFor(`the hello.py editor to show ${what}`, async () => (await activeEditorText(page)).includes(text));
  await waitFor('the hello.py tab not to be dirty', async () => !(await isDirty(page, 'hello.py')), 10000);
  const seen = await conflicts(page);
  ensure(seen.length === 0, `the workbench shows a conflict: ${JSON.stringify(seen)}`);
}

/** The lens reverted step 1 of the farewell run (revertStep): its card in the chat. */
async function timelineRevert(page, chat, { ws }) {
  await check(page, TIMELINE_STEP, async () => {
    const hello = join(ws, 'hello.py');
    const readme = join(ws, 'README.md');
    const card = chat.locator('[data-testid=checkpoint-card]').last();
    const step = (n) => card.locator(`[data-testid=checkpoint-step][data-step="${n}"]`);
    const outcome = card.locator('[data-testid=checkpoint-outcome]');
    await waitFor('the card to list both steps with their files', async () =>
      /hello\.py \+1 −1/.test(await step(1).innerText()) && /README\.md \+\d+ −0/.test(await step(2).innerText()));
    ensure((await card.locator('[data-testid=checkpoint-step]').count()) === 2, `the card: ${await card.innerText()}`);
    await waitFor("the card to say what the lens's revert did", async () => {
      const said = await outcome.innerText();
      return said.includes('Reverted to before step 1') && /Restored: .*hello\.py/.test(said) && /Restored: .*README\.md/.test(said);
    });
    ensure((await card.locator('[data-testid=checkpoint-reverted]').count()) === 2, `steps not marked reverted: ${await card.innerText()}`);
    await card.scrollIntoViewIfNeeded();
    await shot(page, '20a-checkpoints-card');

    // Redo: a real button, pressed from the keyboard.
    const redo = card.locator('[data-testid=checkpoint-redo]');
    await waitFor('the Redo button', async () => (await redo.count()) === 1);
    ensure((await redo.evaluate((b) => b.tagName)) === 'BUTTON', 'Redo is not a button');
    await redo.press('Enter');
    await waitFor('the card to say the revert was redone', async () => (await outcome.innerText()).includes('Redone'));
    ensure(readFileSync(hello, 'utf8') === AFTER, `hello.py after the redo: ${readFileSync(hello, 'utf8')}`);
    ensure(readFileSync(readme, 'utf8').includes('It says goodbye.'), 'README.md is not back after the redo');
    await editorFollows(page, 'the run\'s text again', "print('goodbye, world')");
    await shot(page, '20b-redone-editor');

    // "Revert to here" on step 1: back to before the run once more.
    const revert = step(1).locator('[data-testid=checkpoint-revert]');
    ensure((await revert.evaluate((b) => b.tagName)) === 'BUTTON', '"Revert to here" is not a button');
    await revert.press('Enter');
    await waitFor("the card to say what the card's revert did", async () => {
      const said = await outcome.innerText();
      return said.includes('Reverted to before step 1: steps 1 and 2 undone') && /Restored: .*hello\.py/.test(said);
    });
    ensure(readFileSync(hello, 'utf8') === BEFORE && readFileSync(readme, 'utf8') === '# sample\n',
      `after the card's revert: hello.py ${JSON.stringify(readFileSync(hello, 'utf8'))}, README.md ${JSON.stringify(readFileSync(readme, 'utf8'))}`);
    await waitFor('Redo offered again', async () => (await redo.count()) === 1);
    await card.scrollIntoViewIfNeeded();
    await shot(page, '20c-card-reverted');
    await editorFollows(page, 'the text before the run', "print('hello, world')");
    ensure(!(await activeEditorText(page)).includes('goodbye'), 'the hello.py editor still says goodbye');
    await shot(page, '20d-card-reverted-editor');
  });
}
