// The newcomer's walk through VS Code's defaults: the workspace trust prompt answered as a
// user would, the walkthrough opened while VS Code's Welcome page is open, the first plan
// rejected with typed feedback and its revision streamed, the Do run's second edit denied,
// the checklist that leaves the denied step unticked, the decisions shown after a reload, and
// the times the first start takes (recorded in results.json's `times`).
import { readFileSync } from 'node:fs';
import { FEEDBACK, README_TODO, TODO } from './session-script.mjs';
import { STEP_MS, activeTabTitle, check, ensure, log, quickOpen, shot, statusText, waitFor } from './workbench.mjs';
import { focusOn, openChatByKeyboard, runLens, tabTo } from './keyboard-steps.mjs';

/** Moments of the walk (ms since the epoch), and the times between them, for results.json. */
export const moments = {};

export function mark(name, at = Date.now()) {
  moments[name] ??= at;
}

/** Marks `name` once `fn` holds, looking every 100 ms in the background (for at most `ms`). */
export function markWhen(name, fn, ms = 5 * 60_000) {
  const deadline = Date.now() + ms;
  const look = async () => {
    while (!moments[name] && Date.now() < deadline) {
      if (await fn().catch(() => false)) mark(name);
      // unref: a look still pending never keeps the run from ending.
      else await new Promise((r) => setTimeout(r, 100).unref());
    }
  };
  void look();
}

/** Watches the first start from the workbench shown: the install step on the start-up card,
 *  the server running (the status bar's "Plan"), the setup card. */
export function watchFirstStart(page, chat) {
  mark('workbench');
  const cardKind = async () => ((await chat.locator('[data-testid=setup-card]').isVisible().catch(() => false))
    ? await chat.locator('[data-testid=setup-card]').getAttribute('data-kind') : '');
  markWhen('installShown', async () => /installing plan-lsp/.test(await chat.locator('[data-testid=setup-card]').innerText({ timeout: 1000 })));
  markWhen('serverRunning', async () => (await statusText(page)).startsWith('Plan'));
  markWhen('setupCard', async () => (await cardKind()) === 'unconfigured');
}

/** The times for results.json, in seconds: the first start (the trust click to the setup card
 *  shown, with the steps between from the workbench shown) and the install of the vsix to the
 *  first approved plan. */
export function times() {
  return {
    firstStartSeconds: between('trusted', 'setupCard'),
    installToApprovedPlanSeconds: between('install', 'approved'),
    firstStartSteps: {
      workbenchToTrusted: between('workbench', 'trusted'),
      workbenchToInstallShown: between('workbench', 'installShown'),
      workbenchToServerRunning: between('workbench', 'serverRunning'),
      workbenchToSetupCard: between('workbench', 'setupCard'),
    },
  };
}

/** Seconds between two recorded moments, or null when one is missing. */
export function between(from, to) {
  return moments[from] && moments[to] ? (moments[to] - moments[from]) / 1000 : null;
}

/** VS Code asks whether the folder's authors are trusted (workspace trust on, the default):
 *  "Yes, I trust the authors", with the keyboard (the dialog's first button has the focus;
 *  Enter). Returns once the dialog is gone. */
export async function trustWorkspace(page) {
  const yes = page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Yes, I trust the authors' });
  await yes.first().waitFor({ timeout: STEP_MS });
  await shot(page, '00-trust-prompt');
  await waitFor('the focus on "Yes, I trust the authors"', async () =>
    /Yes, I trust the authors/.test(await page.evaluate(() => document.activeElement?.textContent ?? '')));
  await page.keyboard.press('Enter');
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
 *  title), not leave the Welcome page as it is. The keyboard only: Open Chat from the palette
 *  (no model set up: the focus is on the set-up card's first preset), Tab through the card to
 *  the empty chat's link, Enter. */
export async function walkthroughOverWelcome(page, chat) {
  await check(page, WALKTHROUGH_STEP, async () => {
    const welcome = (titles) => titles.filter((t) => t === 'Welcome' || (t.startsWith('Walkthrough: ') && !t.includes('Plan LSP')));
    await waitFor("VS Code's Welcome page", async () => welcome(await tabTitles(page)).length > 0);
    const editors = page.locator('.part.editor');
    ensure(!/Get started with Plan LSP/.test(await editors.innerText()), 'the walkthrough shows before it is asked for');
    await shot(page, '03a-welcome-page');
    await openChatByKeyboard(page, chat);
    await focusOn(chat, "the set-up card's first preset", (f) => f.in === 'setup' && f.preset === 'openai');
    await tabTo(page, chat, "the empty chat's walkthrough link", (f) => f.action === 'openWalkthrough');
    await shot(page, '03a-walkthrough-link-focused');
    await page.keyboard.press('Enter');
    await waitFor("the walkthrough's title", async () =>
      /Get started with Plan LSP/.test(await page.locator('.editor-group-container.active').innerText()));
    ensure(welcome(await tabTitles(page)).length === 0, `the Welcome page is still open beside the walkthrough: ${JSON.stringify(await tabTitles(page))}`);
    await shot(page, '03b-walkthrough-over-welcome');
  });
}

/** Scrolls the chat to `locator`; the chat renders again as updates arrive, which can detach
 *  the element found: until one scroll succeeds. */
async function inView(locator) {
  await waitFor('a chat card in view', async () => (await locator.scrollIntoViewIfNeeded({ timeout: 2000 }), true));
}

export const REJECT_FEEDBACK_STEP = 'Reject… with feedback typed on PLAN.md: the model is sent the feedback, the revised plan streams into PLAN.md and is submitted';

async function planStatus(chat) {
  return (await chat.locator('[data-testid=plan-status]').allInnerTexts()).join(' ');
}

/** The first plan is submitted and shown in PLAN.md; `events()` gives the extension's record of
 *  PLAN.md (open/change events with their text), `revised` the plan the model writes next. */
export async function rejectWithFeedback(page, chat, { model, revised, events }) {
  await check(page, REJECT_FEEDBACK_STEP, async () => {
    ensure(/submitted/.test(await planStatus(chat)), `the plan is not submitted: ${await planStatus(chat)}`);
    await quickOpen(page, 'PLAN.md');
    await page.keyboard.press('Control+Home');
    const lenses = page.locator('.editor-group-container.active .codelens-decoration');
    const reject = lenses.locator('a', { hasText: /^Reject…$/ });
    await reject.first().waitFor({ timeout: STEP_MS });
    const since = Date.now() / 1000;
    const asked = model.agentRequests.length;
    // The keyboard: the lenses of the cursor's line (the first) from the palette.
    await runLens(page, 'Reject…');
    const widget = page.locator('.quick-input-widget');
    await waitFor('the input box "Reject the plan"', async () =>
      (await widget.isVisible()) && (await widget.locator('.quick-input-title').innerText()).includes('Reject the plan'));
    await widget.locator('input').pressSequentially(FEEDBACK);
    await shot(page, '07a-reject-with-feedback');
    await page.keyboard.press('Enter');
    await waitFor('the revised plan in PLAN.md and submitted', async () =>
      events().at(-1)?.text === revised && /submitted/.test(await planStatus(chat)), 2 * STEP_MS);
    const request = model.agentRequests[asked];
    ensure(request && JSON.stringify(request.body?.messages ?? []).includes(FEEDBACK),
      'the model was not sent the feedback');
    // The revision streamed: PLAN.md showed a growing part of it, not only the whole.
    const shown = (text) => {
      let i = 0;
      while (i < text.length && i < revised.length && text[i] === revised[i]) i++;
      return i;
    };
    const partial = new Set(events().filter((e) => e.t >= since && shown(e.text) > 40 && shown(e.text) < revised.length).map((e) => e.text));
    ensure(partial.size >= 10, `PLAN.md showed ${partial.size} growing beginnings of the revised plan (want 10 or more)`);
    ensure((await rejection(chat).count()) === 1, 'the chat does not show the rejection with its feedback');
    const heading = await chat.locator('[data-testid=plan-markdown] h1').last().innerText();
    ensure(heading === 'Plan: greet politely, README noted', `the plan card shows ${heading}`);
    ensure(await activeTabTitle(page) === 'PLAN.md', `the front tab is ${await activeTabTitle(page)}`);
    await shot(page, '07b-revised-plan');
  });
}

export const DENY_STEP = "the Do run's second edit (README.md) is shown as a diff and denied: the file stays as it was";

/** The Do run has asked for README.md's edit after hello.py's was allowed. */
export async function denyReadmeEdit(page, chat, { ws }) {
  await check(page, DENY_STEP, async () => {
    const card = chat.locator('[data-testid=permission-card]:not(.answered)');
    await waitFor("the permission card of README.md's edit", async () => /README\.md/.test(await card.innerText()));
    await waitFor("the proposal diff of README.md", async () =>
      (await activeTabTitle(page)).includes('README.md') && (await page.locator('.editor-group-container.active .monaco-diff-editor').count()) > 0);
    // Approved with the default permission mode: every edit is asked for.
    ensure(/^Build · Ask before edits/.test(await statusText(page)), `the status bar: ${await statusText(page)}`);
    // The keyboard: the card took the focus as it appeared (the chat had it, hello.py's Allow
    // pressed there), on its first answer; Tab goes on to Deny, Enter.
    const readme = (option) => (f) => f.in === 'permission' && f.option === option && /README\.md/.test(f.card);
    await focusOn(chat, "README.md's card, on Allow", readme('allow_once'));
    await tabTo(page, chat, "README.md's Deny", readme('reject_once'));
    await shot(page, '08a-diff-before-deny');
    await page.keyboard.press('Enter');
    await waitFor('the answer on the card', async () => (await chat.locator('[data-testid=permission-card].answered').count()) === 2);
    ensure(readFileSync(`${ws}/README.md`, 'utf8') === '# sample\n', 'README.md changed although its edit was denied');
  });
}

export const CHECKLIST_STEP = 'the checklist is honest: the denied step is not ticked, in PLAN.md and in the chat, which says why';

/** The Do run is over. `planFile`: PLAN.md's path; `events()` as for rejectWithFeedback. */
export async function honestChecklist(page, chat, { planFile, events }) {
  await check(page, CHECKLIST_STEP, async () => {
    const todo = chat.locator('[data-testid=tool-card][data-tool=todo_write]').last();
    const text = await todo.innerText();
    ensure(text.includes(`[x] ${TODO}`) && text.includes(`[ ] ${README_TODO}`), `the last todo card: ${JSON.stringify(text)}`);
    ensure(/not marked done: the edit of README\.md was denied/.test(text), `the todo card does not say why: ${JSON.stringify(text)}`);
    ensure((await todo.locator('[data-testid=todo-checklist][data-kept=true]').count()) === 1, 'the todo card does not show the list the server kept');
    const ticked = (plan) => [/^2\. \[x\] Change the greeting in `hello\.py`/m.test(plan), /^4\. \[ \] Note the new greeting in `README\.md`/m.test(plan)];
    await waitFor('the checklist in PLAN.md on disk', async () => ticked(readFileSync(planFile, 'utf8')).every(Boolean));
    ensure(ticked(events().at(-1)?.text ?? '').every(Boolean), `the PLAN.md buffer: ${JSON.stringify((events().at(-1)?.text ?? '').slice(0, 900))}`);
    await inView(todo);
    await quickOpen(page, 'PLAN.md');
    await page.keyboard.press('Control+Home');
    await shot(page, '09b-checklist-honest');
  });
}

export const HISTORY_STEP = 'after the reload the history shows the decisions: the plan rejected with its feedback, the hello.py edit allowed, the README.md edit denied';

/** The chat's record of the rejection: the feedback, as the user's own message. */
const rejection = (chat) => chat.locator('[data-testid=user-message]', { hasText: `Rejected the plan: ${FEEDBACK}` });

export async function decisionsAfterReload(page, chat) {
  await check(page, HISTORY_STEP, async () => {
    ensure((await rejection(chat).count()) === 1, 'the rejection and its feedback are not in the history');
    const answers = (await chat.locator('[data-testid=permission-card] .perm-answer').allInnerTexts()).map((t) => t.trim());
    ensure(answers.length === 2 && /^Allow/.test(answers[0]) && /^Den/.test(answers[1]), `the decisions shown: ${JSON.stringify(answers)}`);
    const edits = await chat.locator('[data-testid=tool-card][data-tool=edit_file]').evaluateAll((els) => els.map((e) => e.dataset.status));
    ensure(JSON.stringify(edits) === JSON.stringify(['done', 'blocked']), `the edit cards after the reload: ${JSON.stringify(edits)}`);
    await inView(chat.locator('[data-testid=permission-card]').last());
    await shot(page, '11a-decisions-after-reload');
  });
}
