#!/usr/bin/env node
// End-to-end test of a new user's first run in a real VS Code workbench (code-server 4.100.3 +
// Debian Chromium driven by playwright-core): the .vsix installed into fresh user-data and
// extensions directories, no plan-lsp setting and VS Code's defaults on (the Welcome page, the
// workspace trust prompt: newcomer-steps.mjs), a hostile workspace, a loopback
// OpenAI-compatible model server. The extension must install its server into a private venv
// (from the wheel the vsix carries), show what it is doing, guide the setup through its own
// UI, and take the user to an approved plan whose edit is on disk; later, a plan reviewed with a
// comment on its lines, a Do run whose command reads the file it edited in an open editor, and
// a step reverted from its lens. From the trust prompt to the end of the first Do run the user
// has the keyboard only (keyboard-steps.mjs: the palette, Tab and Shift+Tab through the chat,
// Enter, typing; the lenses through Show CodeLens Commands for Current Line), the chat putting
// the focus on each card that waits for an answer. The plans stream at a
// model's speed (tests/e2e/model_speed.py); the extension records every change of PLAN.md
// (PLAN_LSP_DOCUMENT_LOG). Screenshots per step go to test-artifacts/vscode/, with
// results.json (with the first-start times), the model's timeline and script, and the PLAN.md
// record (for stream_report).
//
// Environment: E2E_ARTIFACTS (screenshot folder), E2E_REUSE_VSIX=1 (skip `npm run package`
// when a vsix exists), E2E_TIMEOUT_S (per-step wait, default 60), CHROMIUM, E2E_PROFILE=1 (a
// CPU profile of the workbench while the first plan streams: first-plan.cpuprofile).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { FakeOpenAI } from './fake-openai.mjs';
import { PROMPT, TODO, hostileProject, modelSpeed, revisedAfterFeedback, sessionTurns } from './session-script.mjs';
import { CONTEXT_WINDOW, usageAndCompaction } from './usage-steps.mjs';
import {
  focusOn, keyboardWalk, nothingPendingInPalette, openChatByKeyboard, runCommand, tabTo, typePrompt,
} from './keyboard-steps.mjs';
import { rejectWithoutFeedback } from './reject-steps.mjs';
import { SECOND_PLAN_FILE, secondRoundDraft } from './plans-steps.mjs';
import { commentOnPlan } from './comment-steps.mjs';
import { commandsSeeEdits, revertStep } from './checkpoint-steps.mjs';
import {
  decisionsAfterReload, denyReadmeEdit, honestChecklist, mark, rejectWithFeedback, times, trustWorkspace, walkthroughOverWelcome, watchFirstStart,
} from './newcomer-steps.mjs';
import {
  STEP_MS, activeEditorText, activeTabTitle, answerInputBox, cardKind, chatFrame, check, elapsed, ensure, findFiles,
  freePort, log, openChat, outputLog, quickOpen, results, sendPrompt, setArtifacts, shot, statusText, userMessagesWith, waitFor,
} from './workbench.mjs';

const HERE = dirname(dirname(fileURLToPath(import.meta.url)));
const REPO = resolve(HERE, '..');
const CODE_SERVER = join(HERE, '.e2e', 'node_modules', '.bin', 'code-server');
// The server's dependencies as wheels (scripts/install-e2e.sh): the vsix carries them, and the
// extension's first-run install reaches no package index.
const WHEELHOUSE = join(HERE, '.e2e', 'wheelhouse');
const ARTIFACTS = resolve(process.env.E2E_ARTIFACTS ?? join(REPO, 'test-artifacts', 'vscode'));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const API_KEY = 'sk-e2e-4f1d9c0b7a';
// A key the model server refuses, entered first as a user might.
const WRONG_KEY = 'sk-e2e-wrong-0000';
const MODEL = 'e2e-model';
// What the user types into PLAN.md before approving it.
const TYPED_LINE = 'Reviewed: one line changes, nothing else.';

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The extension's record of PLAN.md (PLAN_LSP_DOCUMENT_LOG): open/change events and approvals. */
function planRecord(file) {
  if (!existsSync(file)) return { events: [], approved: [] };
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return {
    events: lines.filter((l) => (l.event === 'open' || l.event === 'change') && /[\\/]\.plan-lsp[\\/]plans[\\/]PLAN\.md$/.test(l.path)),
    approved: lines.filter((l) => l.event === 'approved'),
  };
}

/** `plan` without the checkboxes a Do run's checklist puts on its numbered steps. */
const unticked = (plan) => plan.replace(/^(\d+\. )\[[ x~]\] /gm, '$1');

/** How much of `plan`'s beginning `text` shows (as model_speed.py's `_shown`). */
function shown(text, plan) {
  let i = 0;
  while (i < text.length && i < plan.length && text[i] === plan[i]) i++;
  return i;
}

/** Whether `text` shows part of `plan`, not all of it: the plan still streaming. */
const partOf = (text, plan) => shown(text, plan) > 0 && shown(text, plan) < plan.length;

/** Distinct texts PLAN.md held since `since` that showed a growing, incomplete part of `plan`
 * (as model_speed.py's `stream_report` counts them). */
function growingStates(events, plan, since) {
  return new Set(events.filter((e) => e.t >= since && partOf(e.text, plan)).map((e) => e.text)).size;
}

/** Whether the extension host has activated VS Code's Markdown language features. */
function markdownActive(userDir) {
  return findFiles(join(userDir, 'logs'), /^remoteexthost\.log$/).some((file) =>
    /_doActivateExtension vscode\.markdown-language-features\b/.test(readFileSync(file, 'utf8')));
}

/** Starts recording, in the page, what the editor showing PLAN.md paints: at each animation
 * frame after a change in the editor area, the text of its rendered lines (top to bottom, a
 * line each: only the lines in view are rendered, and Markdown wraps long lines) when it
 * differs from the last one recorded. */
async function recordPlanPaints(page) {
  await page.evaluate(() => {
    const record = [];
    window.__planPaints = record;
    let scheduled = false;
    const snapshot = () => {
      scheduled = false;
      const group = [...document.querySelectorAll('.editor-group-container')].find((g) =>
        g.querySelector('.tab.active .label-name')?.textContent?.trim() === 'PLAN.md');
      const lines = group ? [...group.querySelectorAll('.monaco-editor .view-lines .view-line')] : [];
      if (!lines.length) return;
      const text = lines
        .map((l) => [parseFloat(l.style.top) || 0, (l.textContent ?? '').replace(/\u00a0/g, ' ').replace(/[\u200b\u200c]/g, '')])
        .sort((a, b) => a[0] - b[0])
        .map(([, t]) => `${t}\n`)
        .join('');
      if (record.at(-1)?.text !== text) record.push({ t: Date.now() / 1000, text });
    };
    new MutationObserver(() => {
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(snapshot);
      }
    }).observe(document.querySelector('.part.editor') ?? document.body, { subtree: true, childList: true, characterData: true });
  });
}

async function chatHasFocus(chat) {
  return chat.locator('[data-testid=prompt]').evaluate((el) => document.activeElement === el && document.hasFocus());
}

async function main() {
  if (!existsSync(CODE_SERVER)) throw new Error(`code-server missing: run ${join(HERE, 'scripts', 'install-e2e.sh')}`);
  // install-e2e.sh's stamp: the server's dependencies (pyproject.toml), the script that fetches
  // their wheels (stage-server.mjs), the python3 the extension's venv is made with and the
  // CPython versions asked for, as the wheels were fetched for them.
  const stamp = createHash('sha256').update(readFileSync(join(REPO, 'pyproject.toml')))
    .update(readFileSync(join(HERE, 'scripts', 'stage-server.mjs'))).update(execFileSync('python3', ['-VV']))
    .update(`${process.env.PLAN_LSP_BUNDLE_PYTHONS ?? ''}\n`).digest('hex').slice(0, 16);
  const built = existsSync(join(WHEELHOUSE, '.stamp')) ? readFileSync(join(WHEELHOUSE, '.stamp'), 'utf8').trim() : null;
  if (built !== stamp) {
    throw new Error(`the dependency wheels are ${built ? 'out of date (pyproject.toml, stage-server.mjs or python3 changed)' : 'missing'}: run ${join(HERE, 'scripts', 'install-e2e.sh')}`);
  }
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  setArtifacts(ARTIFACTS);

  const vsix = join(HERE, 'plan-lsp.vsix');
  if (!(process.env.E2E_REUSE_VSIX === '1' && existsSync(vsix))) {
    log('npm run package');
    execFileSync('npm', ['run', 'package'], {
      cwd: HERE, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, PLAN_LSP_BUNDLE_WHEELS: WHEELHOUSE },
    });
  }

  const tmp = mkdtempSync(join(tmpdir(), 'plan-lsp-e2e-'));
  const userDir = join(tmp, 'user');
  const extDir = join(tmp, 'extensions');
  const markers = join(tmp, 'markers');
  const ws = hostileProject(join(tmp, 'ws'), markers);
  const planFile = join(ws, '.plan-lsp', 'plans', 'PLAN.md');
  const speed = modelSpeed(REPO);
  const PLAN_TEXT = speed.plan;
  const SECOND_PLAN_TEXT = speed.revisedPlan;
  // The first plan as the model writes it again after the user's feedback: the one approved.
  const REVISED_TEXT = revisedAfterFeedback(PLAN_TEXT);
  const documentLog = join(ARTIFACTS, 'plan-documents.jsonl');
  const model = new FakeOpenAI({
    key: API_KEY, model: MODEL, turns: sessionTurns({ plan: PLAN_TEXT, secondPlan: SECOND_PLAN_TEXT, pace: speed.pace }),
    timeline: join(ARTIFACTS, 'model-timeline.jsonl'),
  });
  writeFileSync(join(ARTIFACTS, 'model-script.json'), JSON.stringify(model.scriptFor(), null, 2));
  const baseUrl = await model.listen();
  mkdirSync(join(userDir, 'User'), { recursive: true });
  // A new user's settings: nothing of plan-lsp and nothing that hides VS Code's defaults (the
  // Welcome page and the workspace trust prompt on); telemetry off, and the desktop default of
  // no auto-save (code-server's own default saves after a delay).
  const userSettings = join(userDir, 'User', 'settings.json');
  writeFileSync(
    userSettings,
    JSON.stringify(
      {
        'telemetry.telemetryLevel': 'off',
        'files.autoSave': 'off',
      },
      null,
      2,
    ),
  );

  log('install the vsix');
  mark('install');
  execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', vsix], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });

  const port = await freePort();
  const out = [];
  // detached: its own process group, so extension hosts and language servers die with it.
  const cs = spawn(
    CODE_SERVER,
    ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
      '--user-data-dir', userDir, '--extensions-dir', extDir, ws],
    {
      detached: true, stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', PLAN_LSP_DOCUMENT_LOG: documentLog,
        // No package index for pip: the first-run install must use the wheels the vsix carries.
        PIP_NO_INDEX: '1', PIP_INDEX_URL: 'http://127.0.0.1:9/simple', PIP_EXTRA_INDEX_URL: '',
        PLAN_LSP_CONTEXT_WINDOW: String(CONTEXT_WINDOW),
      },
    },
  );
  cs.stdout.on('data', (d) => out.push(d));
  cs.stderr.on('data', (d) => out.push(d));
  let browser;
  try {
    await waitFor('code-server /healthz', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60000);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    log('workbench ready');
    const chat = chatFrame(page);
    watchFirstStart(page, chat);
    await trustWorkspace(page);

    await check(page, 'first run: the sidebar opens by itself and shows the install with progress', async () => {
      await chat.locator('[data-testid=prompt]').waitFor({ timeout: STEP_MS });
      await waitFor('the start-up card', async () => (await cardKind(chat)) === 'starting');
      await waitFor('the install step', async () => /installing plan-lsp/.test(await chat.locator('[data-testid=setup-card]').innerText()), 90000);
      ensure(await chat.locator('[data-testid=startup-progress]').isVisible(), 'no progress bar on the start-up card');
      await shot(page, '01-first-run-install');
      await waitFor('the server to run (status bar "Plan")', async () => (await statusText(page)).startsWith('Plan'), 180000);
    });

    await check(page, 'a hostile workspace neither configures the client nor runs code at start', async () => {
      const warnings = await chat.locator('[data-testid=warnings]').innerText();
      for (const key of ['planLsp.python', 'planLsp.serverArgs', 'planLsp.baseUrl']) ensure(warnings.includes(key), `the warning does not name ${key}: ${warnings}`);
      const found = readdirSync(markers);
      ensure(found.length === 0, `workspace code ran: ${found.join(', ')}`);
      const logText = outputLog(userDir);
      ensure(/Server interpreter: .*venv.*private environment/.test(logText), `the log does not name the private venv interpreter:\n${logText.slice(-3000)}`);
      ensure(/Starting: .* -I -m plan_lsp serve --stdio \(in .*globalStorage/.test(logText), 'the server was not started isolated, outside the workspace');
      // pip as a module of the venv, or run from its own bundled wheel (a venv made --without-pip).
      ensure(/(-m pip|[\\/]pip-[^\s]*\.whl[\\/]pip) install .*--no-index --find-links \S*server[\\/]wheels /.test(logText), 'pip did not install from the wheels the extension carries');
      ensure(!/pypi\.org|pythonhosted\.org|Downloading /.test(logText), 'the first-run install reached a package index');
      ensure(!/Server process exited/.test(logText), 'a start logged a server exit as an error');
      await shot(page, '02-hostile-settings-ignored');
    });

    await check(page, 'setup card: no model is configured, presets offered; with nothing pending the palette offers no Approve Plan', async () => {
      await waitFor('the setup card', async () => (await cardKind(chat)) === 'unconfigured');
      const text = await chat.locator('[data-testid=setup-card]').innerText();
      for (const label of ['OpenAI', 'Anthropic', 'Ollama', 'vLLM', 'LM Studio', 'Set API Key', 'Test Connection']) {
        ensure(text.includes(label), `the setup card lacks ${label}: ${text}`);
      }
      // Nothing was chosen: no model "in use", no setting keys.
      ensure(!/Using |Now: |gpt-4o-mini|planLsp\./.test(text), `the setup card speaks of a choice never made or of setting keys: ${text}`);
      // The protection shows once the server's sandbox self-test has answered.
      await waitFor('the shell protection in the status bar', async () =>
        /Plan · Ask before edits · .*(bubblewrap|landlock|classifier|no shell)/.test(await statusText(page)));
      // The permission mode in words in the chat too, never its wire value.
      const modes = await chat.locator('[data-testid=permission-mode] option').allInnerTexts();
      ensure(JSON.stringify(modes) === JSON.stringify(['Ask before edits', 'Auto-accept edits', 'Full auto (no questions)', 'Ask before everything']),
        `the permission modes offered: ${JSON.stringify(modes)}`);
      const chosen = await chat.locator('[data-testid=permission-mode]').evaluate((el) => el.selectedOptions[0]?.textContent);
      ensure(chosen === 'Ask before edits', `the chat shows the permission mode as ${chosen}`);
      await shot(page, '03-setup-card');
      await nothingPendingInPalette(page);
    });

    await walkthroughOverWelcome(page, chat);

    await check(page, 'configured through the UI: the vLLM preset asks for the key its model list wants (HTTP 401), saying why; Escape types the model; user settings written; the test names the key', async () => {
      // Keyboard only. The walkthrough read, it is closed (View: Close Editor; Enter on the palette
      // over the walkthrough would reach its step on the key's release, which takes the focus
      // back a moment later). Open Chat: no model is set up, so the focus is on the card's first
      // preset; Tab to vLLM, Enter.
      await runCommand(page, 'View: Close Editor');
      await waitFor('the walkthrough closed', async () => !/Get started with Plan LSP/.test(await page.locator('.part.editor').innerText()));
      await openChatByKeyboard(page, chat);
      await focusOn(chat, "the set-up card's first preset", (f) => f.in === 'setup' && f.preset === 'openai');
      await tabTo(page, chat, 'the vLLM preset', (f) => f.in === 'setup' && f.preset === 'vllm');
      await shot(page, '03c-preset-focused');
      await page.keyboard.press('Enter');
      await answerInputBox(page, 'vLLM: base URL', baseUrl);
      // The server's model list wants a key (401): the key is asked first, saying why.
      const box = page.locator('.quick-input-widget');
      await waitFor('the API key box', async () => (await box.isVisible()) && (await box.locator('.quick-input-title').innerText()).includes('API key'));
      const why = await box.innerText();
      ensure(/answered HTTP 401 when asked for its models: it needs an API key/.test(why), `the key box does not say why: ${why}`);
      await shot(page, '04-key-asked-after-401');
      // Escape: no key yet; the model is typed, and its box says why there is no list.
      await page.keyboard.press('Escape');
      await waitFor('the model box', async () => (await box.isVisible()) && (await box.locator('.quick-input-title').innerText()).includes('vLLM: model'));
      ensure(/wants an API key \(HTTP 401\) and none was given/.test(await box.innerText()), `the model box does not say why it is typed: ${await box.innerText()}`);
      await answerInputBox(page, 'vLLM: model', MODEL);
      await waitFor('the user settings to hold provider, base URL and model', async () => {
        const written = JSON.parse(readFileSync(userSettings, 'utf8'));
        return written['planLsp.baseUrl'] === baseUrl && written['planLsp.model'] === MODEL && written['planLsp.provider'] === 'openai';
      });
      // The server restarts with the new settings and the connection is tested: no key yet.
      await waitFor('the key problem on the card', async () => (await cardKind(chat)) === 'problem', 90000);
      const card = await chat.locator('[data-testid=setup-card]').innerText();
      ensure(card.includes('Set API Key'), `the card does not offer Set API Key: ${card}`);
      // Told apart from a refused key, a server that is down or a wrong URL: no key is set.
      ensure(card.startsWith('This model server needs an API key') && card.includes('No API key is set'), `the card does not say the key is missing: ${card}`);
      ensure(!/planLsp\./.test(card), `the card names setting keys: ${card}`);
      ensure(model.requests.some((r) => !r.authorized), 'the model server saw no request');
      await shot(page, '04-test-connection-needs-key');
    });

    await check(page, 'a prompt the model server rejects is marked failed, back in the input with Retry, the fix beside it in words', async () => {
      await typePrompt(page, chat, PROMPT);
      await chat.locator('[data-testid=user-message][data-failed=true]').waitFor({ timeout: STEP_MS });
      const notice = chat.locator('[data-testid=notice][data-code=provider_auth]');
      await notice.waitFor({ timeout: STEP_MS });
      ensure((await notice.innerText()).includes('Set API Key'), 'the error does not offer Set API Key');
      const hint = await notice.locator('[data-testid=error-hint]').innerText();
      ensure(/^No API key is set and this model server needs one/.test(hint), `the error does not say what to do: ${hint}`);
      ensure((await chat.locator('[data-testid=prompt]').inputValue()) === PROMPT, 'the failed prompt is not back in the input');
      ensure(await chat.locator('[data-testid=user-message][data-failed=true] [data-testid=retry-prompt]').isVisible(), 'the failed prompt offers no Retry');
      await shot(page, '05-failed-prompt-with-fix');
    });

    await check(page, "Set API Key from the error: a wrong key is refused, the right one connects (the card offers Change Model, Change Key, Test Again); Set Up Model then offers the server's models", async () => {
      // Keyboard only: the failed prompt is back in the input, which kept the focus; Shift+Tab
      // reaches the error's fix.
      await focusOn(chat, 'the prompt', (f) => f.testid === 'prompt');
      await tabTo(page, chat, "the error's Set API Key", (f) => f.in === 'notice' && f.text === 'Set API Key', { back: true });
      await page.keyboard.press('Enter');
      await answerInputBox(page, 'API key', WRONG_KEY);
      // The server restarts and tests the connection with the wrong key: refused, not missing.
      const card = chat.locator('[data-testid=setup-card]');
      await waitFor('the refused key on the card', async () => (await cardKind(chat)) === 'problem' &&
        (await card.innerText()).startsWith('The model server refused the API key'), 90000);
      ensure(!/No API key is set|needs an API key/.test(await card.innerText()), `the card says the key is missing: ${await card.innerText()}`);
      ensure(model.requests.some((r) => r.keyGiven && !r.authorized), 'the model server never saw the wrong key');
      // Test Connection on the card asks the server again, and says the same.
      const refused = () => model.requests.filter((r) => r.keyGiven && !r.authorized).length;
      // The refused key's card took the focus as it appeared, on its fix; Tab to Test Connection.
      const onCard = (label) => (f) => f.in === 'setup' && f.text === label;
      await focusOn(chat, "the card's Set API Key", onCard('Set API Key'));
      const refusedBefore = refused();
      await tabTo(page, chat, "the card's Test Connection", onCard('Test Connection'));
      await page.keyboard.press('Enter');
      await waitFor('the connection tested again with the wrong key', async () => refused() > refusedBefore && (await cardKind(chat)) === 'problem' &&
        (await card.innerText()).startsWith('The model server refused the API key'), 90000);
      // The card kept the focus while it tested: on its fix again.
      await focusOn(chat, "the card's Set API Key again", onCard('Set API Key'));
      await shot(page, '05a-wrong-key-refused');
      await page.keyboard.press('Enter');
      await answerInputBox(page, 'API key', API_KEY);
      await waitFor('the connected card', async () => (await cardKind(chat)) === 'connected', 90000);
      const offered = await card.locator('[data-testid=card-action]').allInnerTexts();
      ensure(JSON.stringify(offered) === JSON.stringify(['Change Model', 'Change Key', 'Test Again']), `the Connected card offers ${JSON.stringify(offered)}`);
      // Set up: typing goes on in the prompt.
      await focusOn(chat, 'the prompt once connected', (f) => f.testid === 'prompt');
      await shot(page, '06-connected');

      // With the key stored, the preset's model comes from the server's list (GET /models).
      const listed = () => model.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/models') && r.authorized).length;
      const before = listed();
      const title = () => page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');
      const pick = async (text) => {
        await page.keyboard.press('Control+A');
        await page.keyboard.type(text);
        await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: text }).first().waitFor({ timeout: STEP_MS });
        await page.keyboard.press('Enter');
      };
      await runCommand(page, 'Plan LSP: Set Up Model');
      await waitFor('the model server pick', async () => (await title()).includes('which model server'));
      await pick('vLLM');
      await answerInputBox(page, 'vLLM: base URL', baseUrl);
      await waitFor("the pick of the server's models", async () => (await title()).includes('vLLM: model'));
      const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
      ensure(rows.some((r) => r.includes(MODEL)) && rows.some((r) => r.includes('Another model')), `the models offered: ${JSON.stringify(rows)}`);
      ensure(listed() > before, 'the model list was not asked for with the key');
      await shot(page, '06a-model-from-server-list');
      await pick(MODEL);
      // The server restarts with the same settings and tests the connection again.
      await waitFor('the server to restart', async () => (await cardKind(chat)) !== 'connected');
      await waitFor('the connection tested again', async () => (await cardKind(chat)) === 'connected', 90000);
      const written = JSON.parse(readFileSync(userSettings, 'utf8'));
      ensure(written['planLsp.model'] === MODEL, `the model written: ${written['planLsp.model']}`);
    });

    // The first plan of the workspace: PLAN.md does not exist before the prompt. While the
    // model streams it, what the user sees is sampled: the active tab, and whether the chat
    // input still has the focus.
    await check(page, 'plan mode: blocked calls; the first plan streams into PLAN.md from its first line, shown while the chat keeps the focus', async () => {
      ensure(!existsSync(planFile), 'PLAN.md exists before the first plan');
      // The first Markdown document of the window is no longer this plan: the extension had
      // the Markdown support made ready when its server started.
      await waitFor('the Markdown support active before the first plan', async () => markdownActive(userDir));
      const since = Date.now() / 1000;
      await recordPlanPaints(page);
      const profiler = process.env.E2E_PROFILE ? await page.context().newCDPSession(page) : undefined;
      if (profiler) {
        await profiler.send('Profiler.enable');
        await profiler.send('Profiler.setSamplingInterval', { interval: 500 });
        await profiler.send('Profiler.start');
      }
      // Retry on the failed prompt sends it again (the input it was put back into empties).
      // Keyboard only: Open Chat puts the focus in the prompt, Shift+Tab reaches Retry.
      await waitFor('the Send button to be enabled', async () => chat.locator('[data-testid=send]').isEnabled());
      await openChatByKeyboard(page, chat);
      await focusOn(chat, 'the prompt', (f) => f.testid === 'prompt');
      await tabTo(page, chat, "the failed prompt's Retry", (f) => f.testid === 'retry-prompt', { back: true });
      await page.keyboard.press('Enter');
      const samples = [];
      await waitFor('plan status "submitted"', async () => {
        samples.push({ t: Date.now() / 1000, tab: await activeTabTitle(page), focused: await chatHasFocus(chat).catch(() => false) });
        // allInnerTexts: no waiting for a status that is not there yet (sampling goes on).
        return /submitted/.test((await chat.locator('[data-testid=plan-status]').allInnerTexts()).join(' '));
      }, 2 * STEP_MS);
      writeFileSync(join(ARTIFACTS, 'first-plan-samples.json'), JSON.stringify(samples, null, 2));
      const paints = await page.evaluate(() => window.__planPaints ?? []);
      writeFileSync(join(ARTIFACTS, 'first-plan-paints.jsonl'), paints.map((p) => `${JSON.stringify(p)}\n`).join(''));
      if (profiler) {
        const { profile } = await profiler.send('Profiler.stop');
        writeFileSync(join(ARTIFACTS, 'first-plan.cpuprofile'), JSON.stringify({ ...profile, since }));
      }
      const tools = await chat.locator('[data-testid=tool-card]').evaluateAll((els) => els.map((e) => `${e.dataset.tool}:${e.dataset.status}`));
      ensure(JSON.stringify(tools) === JSON.stringify(['read_file:done', 'write_file:blocked', 'bash:blocked', 'plan_write:done', 'exit_plan_mode:done']),
        `tool cards (every response numbers its calls from call_0): ${JSON.stringify(tools)}`);
      const { events } = planRecord(documentLog);
      const mine = events.filter((e) => e.t >= since);
      ensure(mine.length > 0, 'the editor never opened PLAN.md');
      ensure(mine[0].event === 'open' && mine[0].text.length < PLAN_TEXT.length / 10,
        `PLAN.md was opened only with ${mine[0].text.length} of the plan's ${PLAN_TEXT.length} characters`);
      const complete = mine.find((e) => e.text === PLAN_TEXT);
      ensure(complete, 'PLAN.md never held the whole plan');
      const growing = growingStates(mine, PLAN_TEXT, since);
      ensure(growing >= 10, `PLAN.md showed ${growing} growing beginnings of the plan (want 10 or more)`);
      ensure(mine.some((e) => e.visible && e.t < complete.t && partOf(e.text, PLAN_TEXT)),
        'no editor on screen showed PLAN.md while the plan streamed');
      ensure(samples.some((x) => x.tab === 'PLAN.md' && x.focused && x.t < complete.t),
        `PLAN.md was never the front tab beside a focused chat while it streamed: ${JSON.stringify(samples.slice(0, 40))}`);
      const lost = samples.filter((x) => !x.focused);
      ensure(lost.length === 0, `the chat input lost the focus at ${lost.map((x) => (x.t - since).toFixed(2)).join(', ')} s`);
      ensure(await activeTabTitle(page) === 'PLAN.md', `the front tab is ${await activeTabTitle(page)}`);
      const logText = outputLog(userDir);
      ensure(!/could not show/.test(logText), `the extension could not show the plan:\n${logText.slice(-2000)}`);
      const heading = await chat.locator('[data-testid=plan-markdown] h1').innerText();
      ensure(heading === 'Plan: greet politely', `the plan card does not render the plan's Markdown: ${heading}`);
      // The whole plan is in the chat's own scroll, not in a box that scrolls inside it.
      const box = await chat.locator('[data-testid=plan-markdown]').evaluate((el) =>
        ({ overflow: getComputedStyle(el).overflowY, hidden: el.scrollHeight - el.clientHeight }));
      ensure(box.overflow === 'visible' && box.hidden <= 1, `the plan card scrolls inside the chat: ${JSON.stringify(box)}`);
      ensure((await chat.locator('[data-testid=prompt]').inputValue()) === '', 'the retried prompt is still in the input');
      ensure((await chat.locator('[data-testid=user-message]', { hasText: PROMPT }).count()) === 2, 'Retry did not send the prompt again');
      const first = model.agentRequests.find((r) => r.authorized);
      ensure(first?.body?.model === MODEL, `the model asked for is ${first?.body?.model}`);
      ensure(userMessagesWith(first, PROMPT) === 1, `the failed prompt was sent again: ${userMessagesWith(first, PROMPT)} copies`);
      await shot(page, '07-plan-submitted');
    });

    await rejectWithFeedback(page, chat, { model, revised: REVISED_TEXT, events: () => planRecord(documentLog).events });

    await check(page, 'a line typed into PLAN.md, then approved from the palette (it names the plan, asks once, Enter approves): editor, disk and approved plan agree; the edit shows as a diff before it is allowed, from the chat opened on its card', async () => {
      const expected = `${REVISED_TEXT}${TYPED_LINE}\n`;
      // Keyboard only, from here to the end of the Do run.
      await quickOpen(page, 'PLAN.md');
      await page.keyboard.press('Control+End');
      await page.keyboard.type(TYPED_LINE);
      await page.keyboard.press('Enter');
      await waitFor('the typed line in the PLAN.md document', async () => planRecord(documentLog).events.at(-1)?.text === expected);
      // hello.py open in an editor, unmodified: the Do run's edit goes to that buffer.
      await quickOpen(page, 'hello.py');
      await runCommand(page, 'Plan LSP: Approve Plan');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ timeout: STEP_MS });
      const asked = await dialog.innerText();
      ensure(asked.includes('Approve PLAN.md, "Plan: greet politely, README noted"?'), `the approval question does not name the plan: ${asked}`);
      await waitFor('the focus on the dialog\'s Approve', async () => (await page.evaluate(() => document.activeElement?.textContent ?? '')).trim() === 'Approve');
      await shot(page, '07c-approve-asked');
      await page.keyboard.press('Enter');
      await waitFor('status bar "Build"', async () => (await statusText(page)).startsWith('Build'));
      await waitFor('the approved plan', async () => planRecord(documentLog).approved.length > 0);
      const approved = planRecord(documentLog).approved.at(-1);
      mark('approved', approved.t * 1000);
      ensure(approved.text === expected, `the approved plan is not what the editor held: ${JSON.stringify(approved.text.slice(-80))}`);
      ensure(approved.sha256 === sha256(expected), 'the approved sha256 is not that of the text');
      // The Do run starts with its todo list, which the plan's steps mirror as checkboxes.
      ensure(unticked(planRecord(documentLog).events.at(-1).text) === expected, 'the editor no longer holds the approved plan');
      await waitFor('PLAN.md on disk to be the approved plan', async () => unticked(readFileSync(planFile, 'utf8')) === expected, 10000);
      await chat.locator('[data-testid=permission-card] [data-testid=show-proposal]').waitFor({ timeout: STEP_MS });
      await waitFor('the proposal diff editor', async () =>
        (await activeTabTitle(page)).includes('proposed') && (await page.locator('.editor-group-container.active .monaco-diff-editor').count()) > 0);
      await waitFor("the diff's proposed side", async () => (await activeEditorText(page, '.editor.modified')).includes("print('hello, world')"));
      ensure(readFileSync(join(ws, 'hello.py'), 'utf8') === "print('hi')\n", 'the edit ran before permission');
      const options = await chat.locator('[data-testid=permission-card] [data-testid=permission-option]').allInnerTexts();
      ensure(JSON.stringify(options) === JSON.stringify(['Allow', 'Allow edits to hello.py for this session', 'Deny', 'Deny edits to hello.py for this session']),
        `the permission buttons: ${JSON.stringify(options)}`);
      const always = await chat.locator('[data-testid=permission-option][data-option=allow_always]').getAttribute('title');
      ensure(/edit_file on exactly hello\.py \(not other files\) without asking, in Build mode only, until a new session starts/.test(always ?? ''),
        `"Allow … for this session" does not say what it covers: ${always}`);
      const allow = page.locator('.editor-group-container.active .editor-actions .action-label[aria-label^="Allow This Change"]');
      const deny = page.locator('.editor-group-container.active .editor-actions .action-label[aria-label^="Deny This Change"]');
      ensure((await allow.innerText()).trim() === 'Allow This Change' && (await deny.innerText()).trim() === 'Deny This Change',
        `the diff's title bar shows "${await allow.innerText()}" / "${await deny.innerText()}", not words`);
      // Open Chat while the change waits: the focus is on its card's first answer, Allow; Enter.
      await openChatByKeyboard(page, chat);
      await focusOn(chat, "hello.py's card, on Allow", (f) => f.in === 'permission' && f.option === 'allow_once' && /hello\.py/.test(f.card));
      await shot(page, '08-diff-before-allow');
      await page.keyboard.press('Enter');
    });

    await denyReadmeEdit(page, chat, { ws });

    await check(page, 'the Do run ends; its file card diffs what the run changed', async () => {
      await waitFor('plan status "approved" and the run over', async () =>
        /approved/.test(await chat.locator('[data-testid=plan-status]').innerText()) &&
        (await chat.locator('[data-testid=assistant-message]', { hasText: 'Done: the greeting is updated.' }).count()) === 1);
      ensure((await chat.locator('[data-testid=show-proposal]').count()) === 0, 'an answered permission still offers its proposal');
      const todoCard = chat.locator('[data-testid=tool-card][data-tool=todo_write]').last();
      const todoText = await todoCard.innerText();
      ensure(new RegExp(`\\[( |~|x)\\] ${TODO}`).test(todoText) && !/[{}]|"status"/.test(todoText),
        `the todo card is not a checklist: ${JSON.stringify(todoText)}`);
      ensure((await todoCard.locator('[data-testid=todo-checklist][data-kept=true]').count()) === 1, 'the todo card does not show the list the server kept');
      // The chat renders again as updates arrive: scroll until the card stays there.
      await waitFor('the todo card in view', async () => (await todoCard.scrollIntoViewIfNeeded({ timeout: 2000 }), true));
      await shot(page, '09a-todo-checklist');
      // Keyboard only: Open Chat puts the focus in the prompt; Shift+Tab reaches the edit's
      // "changes".
      await openChatByKeyboard(page, chat);
      await focusOn(chat, 'the prompt', (f) => f.testid === 'prompt');
      await tabTo(page, chat, "hello.py's edit card, on changes", (f) => f.testid === 'run-diff', { back: true, max: 40 });
      await page.keyboard.press('Enter');
      await waitFor('the run-changes diff', async () => (await activeTabTitle(page)).includes('before the run'));
      await waitFor("the run diff's right side to show the edit", async () =>
        (await activeEditorText(page, '.editor.modified')).includes("print('hello, world')"));
      ensure((await activeEditorText(page, '.editor.original')).includes("print('hi')"), "the run diff's left side is not the file before the run");
      await shot(page, '09-run-changes');
    });

    await honestChecklist(page, chat, { planFile, events: () => planRecord(documentLog).events });

    // The edit went to hello.py while it was open in an editor (opened before the approval),
    // unmodified. With auto-save off it still reaches the disk: the server asks the editor to
    // save it (planLsp/saveDocument).
    await check(page, 'the Do edit is on disk with auto-save off', async () => {
      await waitFor('hello.py on disk to hold the edit', async () => readFileSync(join(ws, 'hello.py'), 'utf8').includes('hello, world'), 10000);
      ensure(outputLog(userDir).includes(`Saved ${join(ws, 'hello.py')} after the server's edit.`),
        'the open hello.py buffer was not saved by the editor (planLsp/saveDocument)');
    });

    await check(page, 'lenses on PLAN.md no longer offer Approve once approved', async () => {
      await quickOpen(page, 'PLAN.md');
      // The lenses sit on the first line; the cursor is still after the line typed at the end.
      await page.keyboard.press('Control+Home');
      const lenses = page.locator('.editor-group-container.active .codelens-decoration');
      await waitFor('the "Plan approved" lens and no Approve lens', async () =>
        (await lenses.filter({ hasText: /Plan approved/ }).count()) > 0 && (await lenses.filter({ hasText: /Approve \(/ }).count()) === 0, STEP_MS);
      await shot(page, '10-lenses-after-approval');
    });

    const before = {
      users: await chat.locator('[data-testid=user-message]').count(),
      tools: await chat.locator('[data-testid=tool-card]').count(),
    };
    await check(page, 'after a window reload the conversation is still shown, the failed prompt still marked', async () => {
      await page.reload();
      await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
      await openChat(page);
      await waitFor('the restored conversation', async () =>
        (await chat.locator('[data-testid=user-message]').count()) === before.users &&
        (await chat.locator('[data-testid=tool-card]').count()) === before.tools, 90000);
      ensure((await chat.locator('[data-testid=user-message][data-failed=true]').count()) === 1, 'the failed prompt is not marked after the reload');
      await shot(page, '11-after-reload');
    });

    await decisionsAfterReload(page, chat);

    await check(page, 'New session clears the conversation, the empty chat links the walkthrough; the next request carries none of it', async () => {
      await chat.locator('[data-testid=new-session]').click();
      await page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Drop Approved Plan' }).click();
      await chat.locator('[data-testid=empty]').waitFor({ timeout: STEP_MS });
      // The empty chat points to the walkthrough.
      await chat.locator('[data-testid=empty] [data-action=openWalkthrough]').click();
      await waitFor('the walkthrough', async () =>
        /Get started with Plan LSP/.test(await page.locator('.editor-group-container.active').innerText()));
      await shot(page, '12a-walkthrough');
      const asked = model.agentRequests.length;
      await sendPrompt(chat, 'Say hello');
      await chat.locator('[data-testid=assistant-message]', { hasText: 'Hello again' }).waitFor({ timeout: STEP_MS });
      const request = model.agentRequests[asked];
      ensure(userMessagesWith(request, PROMPT) === 0, 'the new session still sent the old conversation');
      await shot(page, '12-new-session');
    });

    await check(page, '@ offers the workspace files and inserts the chosen path; the selection chip sends the editor selection with its file and lines', async () => {
      await quickOpen(page, 'hello.py');
      await page.locator('.editor-group-container.active .monaco-editor .view-lines').click();
      await page.keyboard.press('Control+Home');
      await page.keyboard.press('Shift+End');
      const chip = chat.locator('[data-testid=selection-chip]');
      await waitFor('the selection chip', async () => (await chip.allInnerTexts()).join(' ').trim() === '+ Selection hello.py:1');
      const prompt = chat.locator('[data-testid=prompt]');
      await prompt.click();
      await prompt.fill('');
      await prompt.pressSequentially('Explain @hel');
      await chat.locator('[data-testid=mention-item]').first().waitFor({ timeout: STEP_MS });
      const offered = await chat.locator('[data-testid=mention-item]').allInnerTexts();
      ensure(offered[0] === 'hello.py', `@hel offers ${JSON.stringify(offered)}`);
      await shot(page, '12b-file-mention');
      await prompt.press('Enter');
      ensure((await prompt.inputValue()) === 'Explain @hello.py ', `the mention inserted: ${JSON.stringify(await prompt.inputValue())}`);
      ensure(await chat.locator('[data-testid=mentions]').isHidden(), 'the suggestions stay open after the choice');
      await chip.click();
      await chat.locator('[data-testid=attachment]', { hasText: 'hello.py:1' }).waitFor({ timeout: STEP_MS });
      await shot(page, '12c-selection-attached');
      const asked = model.agentRequests.length;
      await prompt.press('Enter');
      await chat.locator('[data-testid=assistant-message]', { hasText: 'Seen the selection.' }).waitFor({ timeout: STEP_MS });
      const sent = "Explain @hello.py\n\nSelected in hello.py, line 1:\n```python\nprint('hello, world')\n```";
      ensure(userMessagesWith(model.agentRequests[asked], JSON.stringify(sent).slice(1, -1)) === 1,
        `the prompt sent: ${JSON.stringify(model.agentRequests[asked]?.body?.messages?.filter((m) => m.role === 'user').at(-1))}`);
      ensure((await chat.locator('[data-testid=attachment]').count()) === 0, 'the selection stays attached after sending');
    });

    await secondRoundDraft(page, chat, { documentLog, secondPlan: SECOND_PLAN_TEXT, approvedFile: planFile });

    await rejectWithoutFeedback(page, chat, SECOND_PLAN_FILE);

    await check(page, 'the status bar toggles Plan → Build → Plan, and the chat follows', async () => {
      await page.locator('.statusbar-item').filter({ has: page.locator('.codicon-eye') }).first().click();
      await waitFor('status bar "Build"', async () => (await statusText(page)).startsWith('Build'));
      await waitFor('the chat to show Build', async () => (await chat.locator('[data-testid=mode-build]').getAttribute('aria-pressed')) === 'true');
      await page.locator('.statusbar-item').filter({ has: page.locator('.codicon-tools') }).first().click();
      await waitFor('status bar back to "Plan"', async () => (await statusText(page)).startsWith('Plan'));
    });

    await keyboardWalk(page, chat, SECOND_PLAN_FILE);

    await usageAndCompaction(page, chat, { model, ws });

    // The rejected second plan, reviewed with a comment, revised, approved and carried out.
    const secondPlanFile = join(ws, '.plan-lsp', 'plans', SECOND_PLAN_FILE);
    await commentOnPlan(page, chat, { model, planFile: secondPlanFile, secondPlan: SECOND_PLAN_TEXT, pace: speed.pace });
    await commandsSeeEdits(page, chat, { model, ws, planFile: secondPlanFile });
    await revertStep(page, chat, { ws, planFile: secondPlanFile });

    await check(page, 'nothing the workspace ships ran; the API key is in no log', async () => {
      const found = readdirSync(markers);
      ensure(found.length === 0, `workspace code or settings took effect: ${found.join(', ')}`);
      const logs = findFiles(join(userDir, 'logs'), /\.log$/).filter((f) => [API_KEY, WRONG_KEY].some((key) => readFileSync(f, 'utf8').includes(key)));
      ensure(logs.length === 0, `the key is in ${logs.join(', ')}`);
      ensure(!readFileSync(userSettings, 'utf8').includes(API_KEY), 'the key is in settings.json');
    });
  } finally {
    await browser?.close().catch(() => undefined);
    try {
      process.kill(-cs.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await model.close();
    writeFileSync(join(ARTIFACTS, 'code-server.log'), Buffer.concat(out));
    writeFileSync(join(ARTIFACTS, 'plan-lsp-output.log'), outputLog(userDir));
    // The workbench's own logs (extension host, activations), for the post-mortem.
    if (existsSync(join(userDir, 'logs'))) cpSync(join(userDir, 'logs'), join(ARTIFACTS, 'workbench-logs'), { recursive: true });
    writeFileSync(join(ARTIFACTS, 'model-requests.json'), JSON.stringify(model.requests.map((r) => ({ ...r, body: r.body && { model: r.body.model, messages: r.body.messages?.length, tools: r.body.tools?.length } })), null, 2));
    rmSync(tmp, { recursive: true, force: true });
  }
}

main()
  .catch((err) => {
    if (!results.some((r) => !r.ok)) results.push({ name: 'setup', ok: false, error: err.message });
    log(`ERROR ${err.stack ?? err}`);
  })
  .finally(() => {
    const passed = results.filter((r) => r.ok).length;
    const failed = results.length - passed;
    writeFileSync(join(ARTIFACTS, 'results.json'), JSON.stringify({ seconds: elapsed(), times: times(), results }, null, 2));
    log(`${passed} passed, ${failed} failed`);
    process.exitCode = failed === 0 && passed > 0 ? 0 : 1;
  });
