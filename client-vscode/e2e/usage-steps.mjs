// The end-to-end steps on token usage and compaction: the context fill and session tokens in
// the chat's header line and the status bar's tooltip after a plan run, and the Compact
// button's compaction card and count. The server measures the fill against CONTEXT_WINDOW
// (PLAN_LSP_CONTEXT_WINDOW in the workbench's environment).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STEP_MS, check, ensure, sendPrompt, shot, waitFor } from './workbench.mjs';

/** Tokens: small enough that a planning request fills a visible share, large enough that
 * nothing compacts by itself during the story (the server prunes past 40% of the window). */
export const CONTEXT_WINDOW = 32000;

/** Notes the agent reads before Compact: more than the share of the window a compaction keeps
 * verbatim (so the conversation up to them is summarised), less than what would make the
 * server prune by itself. */
const NOTES = Array.from({ length: 5 }, (_, n) => [
  `notes-${n}.md`,
  `- note ${n}: a line of the project's notes, kept short and ordinary\n`.repeat(100),
]);

export const USAGE_STEP = 'after a plan run the chat header and the status tooltip show the context fill and session tokens; Compact shows the compaction card and the count';

const TOKENS = String.raw`\d+(?:\.\d)?[kM]?`;
const USAGE_LINE = new RegExp(`^Context (\\d+)% \\((${TOKENS}) / (${TOKENS})\\) · (${TOKENS}) in / (${TOKENS}) out`);

/** The numbers of a shown token count ("7.4k" → 7400). */
function tokens(text) {
  const scale = text.endsWith('M') ? 1e6 : text.endsWith('k') ? 1e3 : 1;
  return Number(text.replace(/[kM]$/, '')) * scale;
}

/** `model`: the FakeOpenAI server (the step adds the turns of its own prompt); `ws`: the
 * workspace. */
export async function usageAndCompaction(page, chat, { model, ws }) {
  await check(page, USAGE_STEP, async () => {
    const usage = chat.locator('[data-testid=usage]');
    await usage.waitFor({ timeout: STEP_MS });
    const line = await waitFor('the usage line with tokens', async () => {
      const text = (await usage.innerText()).trim();
      const m = USAGE_LINE.exec(text);
      return m && tokens(m[2]) > 0 && tokens(m[4]) > 0 ? m : null;
    });
    ensure(tokens(line[3]) === CONTEXT_WINDOW, `the window shown is ${line[3]}, not ${CONTEXT_WINDOW}`);
    const fill = Number(line[1]);
    ensure(fill > 0 && fill <= 80, `the context fill is ${fill}%`);
    ensure(Number(await usage.getAttribute('data-fill')) === fill, 'data-fill differs from the text');
    ensure(!(await usage.getAttribute('class') ?? '').includes('usage-warning'), 'a fill below 80% is shown as a warning');
    ensure(!/\$/.test(line.input), `a cost is shown without a price: ${line.input}`);
    ensure(await chat.locator('[data-testid=compact]').isEnabled(), 'Compact is disabled after the run');

    // The status bar item's tooltip has the same numbers.
    const item = page.locator('.statusbar-item').filter({ has: page.locator('.codicon-eye, .codicon-tools') }).first();
    // The pointer may still be on the item from the step before (it was clicked): a hover
    // needs it to arrive.
    await page.mouse.move(0, 0);
    await item.hover();
    const hover = page.locator('.workbench-hover, .monaco-hover').filter({ hasText: 'Session tokens:' }).first();
    await hover.waitFor({ timeout: STEP_MS });
    const tip = (await hover.innerText()).replace(/[\s\u00a0]+/g, ' ');
    ensure(tip.includes(`Context: ${fill}% of ${line[3]} tokens`), `the status tooltip: ${tip}`);
    await shot(page, '15-usage-after-plan');
    await page.mouse.move(0, 0);

    // A run that reads the notes and a short exchange after it, then Compact.
    for (const [name, text] of NOTES) writeFileSync(join(ws, name), text);
    model.turns.push(
      { tool_calls: NOTES.map(([name]) => ({ name: 'read_file', arguments: { path: name } })) },
      { text: 'Read the notes.' },
      { text: 'You are welcome.' },
    );
    await sendPrompt(chat, 'Read the notes');
    await chat.locator('[data-testid=assistant-message]', { hasText: 'Read the notes.' }).waitFor({ timeout: STEP_MS });
    await sendPrompt(chat, 'Thanks');
    await chat.locator('[data-testid=assistant-message]', { hasText: 'You are welcome.' }).waitFor({ timeout: STEP_MS });
    await waitFor('Compact enabled after the run', async () => chat.locator('[data-testid=compact]').isEnabled());
    const full = USAGE_LINE.exec((await usage.innerText()).trim());
    ensure(full && Number(full[1]) > fill && Number(full[1]) < 40, `the fill after the reads: ${full?.[0]}`);
    await chat.locator('[data-testid=compact]').click();
    const card = chat.locator('[data-testid=compaction-card][data-trigger=manual]');
    await card.waitFor({ timeout: STEP_MS });
    const title = (await card.locator('.compaction-title').innerText()).trim();
    const numbers = new RegExp(`^Conversation compacted \\(manual\\): (\\d+) tool outputs? pruned, (${TOKENS}) → (${TOKENS}) tokens$`).exec(title);
    ensure(numbers, `the compaction card says: ${title}`);
    ensure(tokens(numbers[3]) < tokens(numbers[2]), `the compaction freed nothing: ${title}`);
    // The state that follows the card: fewer tokens in the context.
    await waitFor('a smaller context fill', async () => {
      const after = USAGE_LINE.exec((await usage.innerText()).trim());
      return after && Number(after[1]) < Number(full[1]);
    });
    await waitFor('the compactions count in the header', async () =>
      (await usage.getAttribute('data-compactions')) === '1' && (await usage.innerText()).includes('· 1 compaction'));
    // The summary is collapsed, and rendered (not JSON) once opened.
    const summary = card.locator('[data-testid=compaction-summary]');
    ensure(!(await summary.isVisible()), 'the summary is not collapsed');
    await card.locator('details > summary').click();
    await summary.waitFor({ state: 'visible', timeout: STEP_MS });
    const text = (await summary.innerText()).trim();
    ensure(text.length > 0 && !text.startsWith('{'), `the summary shown: ${text.slice(0, 200)}`);
    await summary.scrollIntoViewIfNeeded();
    await shot(page, '16-compacted');
  });
}
