#!/usr/bin/env node
// End-to-end test in a real VS Code workbench (code-server 4.100.3 + Debian Chromium driven by
// playwright-core): packages and installs the extension, starts the plan-lsp server with the
// scripted provider, and checks what a user sees. Screenshots go to test-artifacts/vscode/.
//
// Environment: PLAN_LSP_PYTHON (required; an interpreter that can import plan_lsp),
// E2E_ARTIFACTS (screenshot folder), E2E_REUSE_VSIX=1 (skip `npm run package` when a vsix
// exists), E2E_TIMEOUT_S (per-step wait, default 60).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { PLAN_TEXT, SCRIPT_TURNS, sampleProject } from './session-script.mjs';

const HERE = dirname(dirname(fileURLToPath(import.meta.url)));
const REPO = resolve(HERE, '..');
const CODE_SERVER = join(HERE, '.e2e', 'node_modules', '.bin', 'code-server');
const ARTIFACTS = resolve(process.env.E2E_ARTIFACTS ?? join(REPO, 'test-artifacts', 'vscode'));
const STEP_MS = Number(process.env.E2E_TIMEOUT_S ?? 60) * 1000;
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const started = Date.now();

const results = [];
function log(message) {
  process.stdout.write(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

async function waitFor(what, fn, timeoutMs = STEP_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
}

async function shot(page, name) {
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file }).catch((err) => log(`screenshot ${name} failed: ${err.message}`));
  return file;
}

async function check(page, name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, seconds: (Date.now() - t0) / 1000 });
    log(`PASS ${name}`);
  } catch (err) {
    results.push({ name, ok: false, seconds: (Date.now() - t0) / 1000, error: err.message });
    log(`FAIL ${name}: ${err.message}`);
    await shot(page, `failed-${name.replace(/[^\w-]+/g, '-')}`);
    throw err;
  }
}

/** The workbench status bar item of this extension (its text, spaces normalised). */
async function statusText(page) {
  const items = page.locator('.statusbar-item').filter({ has: page.locator('.codicon-eye, .codicon-tools') });
  if ((await items.count()) === 0) return '';
  return ((await items.first().innerText()) ?? '').replace(/\u00a0/g, ' ').trim();
}

/** The active editor's text, lines in visual order (Monaco does not keep DOM order). */
async function activeEditorText(page) {
  return page.evaluate(() => {
    const group = document.querySelector('.editor-group-container.active') ?? document;
    const lines = [...group.querySelectorAll('.monaco-editor .view-lines .view-line')];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((l) => l.textContent.replace(/\u00a0/g, ' ')).join('\n');
  });
}

async function activeTabTitle(page) {
  const tab = page.locator('.editor-group-container.active .tab.active .label-name');
  return (await tab.count()) ? (await tab.first().innerText()).trim() : '';
}

function chatFrame(page) {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

async function main() {
  const python = process.env.PLAN_LSP_PYTHON;
  if (!python) throw new Error('set PLAN_LSP_PYTHON to an interpreter that can import plan_lsp');
  if (!existsSync(CODE_SERVER)) throw new Error(`code-server missing: run ${join(HERE, 'scripts', 'install-e2e.sh')}`);
  mkdirSync(ARTIFACTS, { recursive: true });

  const vsix = join(HERE, 'plan-lsp.vsix');
  if (!(process.env.E2E_REUSE_VSIX === '1' && existsSync(vsix))) {
    log('npm run package');
    execFileSync('npm', ['run', 'package'], { cwd: HERE, stdio: ['ignore', 'ignore', 'inherit'] });
  }

  const tmp = mkdtempSync(join(tmpdir(), 'plan-lsp-e2e-'));
  const userDir = join(tmp, 'user');
  const extDir = join(tmp, 'extensions');
  const ws = sampleProject(join(tmp, 'ws'));
  const script = join(tmp, 'script.json');
  const transcript = join(tmp, 'transcript.jsonl');
  writeFileSync(script, JSON.stringify({ chunk: 16, turns: SCRIPT_TURNS }));
  mkdirSync(join(userDir, 'User'), { recursive: true });
  writeFileSync(
    join(userDir, 'User', 'settings.json'),
    JSON.stringify(
      {
        'planLsp.python': python,
        'planLsp.serverArgs': ['--provider', 'scripted', '--script', script, '--transcript', transcript],
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.enableExperiments': false,
        'security.workspace.trust.enabled': false,
        'extensions.ignoreRecommendations': true,
        'telemetry.telemetryLevel': 'off',
        'editor.codeLens': true,
        'files.autoSave': 'off',
        'window.restoreWindows': 'none',
      },
      null,
      2,
    ),
  );

  log('install the vsix');
  execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', vsix], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });

  const port = await freePort();
  const serverLog = join(ARTIFACTS, 'code-server.log');
  const out = [];
  // detached: its own process group, so extension hosts and language servers die with it.
  const cs = spawn(
    CODE_SERVER,
    ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
      '--disable-workspace-trust', '--user-data-dir', userDir, '--extensions-dir', extDir, ws],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PLAN_LSP_E2E: '1' } },
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

    await check(page, 'status bar shows Plan', async () => {
      await waitFor('status bar "$(eye) Plan"', async () => /^Plan · ask$/.test(await statusText(page)), 90000);
      await shot(page, '01-status-plan');
    });

    await check(page, 'status bar click toggles Plan -> Build -> Plan', async () => {
      const item = page.locator('.statusbar-item').filter({ has: page.locator('.codicon-eye') }).first();
      await item.click();
      await waitFor('status bar "Build"', async () => (await statusText(page)).startsWith('Build'));
      await page.locator('.statusbar-item').filter({ has: page.locator('.codicon-tools') }).first().waitFor();
      await shot(page, '02-status-build');
      await page.locator('.statusbar-item').filter({ has: page.locator('.codicon-tools') }).first().click();
      await waitFor('status bar back to "Plan"', async () => (await statusText(page)).startsWith('Plan'));
    });

    const chat = chatFrame(page);
    await check(page, 'sidebar prompt runs the scripted session; blocked calls shown', async () => {
      await page.locator('.activitybar .action-label[aria-label^="Plan LSP"]').first().click();
      const prompt = chat.locator('[data-testid=prompt]');
      await prompt.waitFor({ timeout: STEP_MS });
      await waitFor('the chat to show Plan mode', async () =>
        (await chat.locator('[data-testid=mode-plan]').getAttribute('aria-pressed')) === 'true');
      await waitFor('the Send button to be enabled', async () => chat.locator('[data-testid=send]').isEnabled());
      await prompt.click();
      await prompt.fill('Make the greeting polite');
      await prompt.press('Enter');
      await chat.locator('[data-testid=user-message]').filter({ hasText: 'Make the greeting polite' }).waitFor({ timeout: STEP_MS });
      await waitFor('two blocked tool cards (write_file, bash)', async () =>
        (await chat.locator('[data-testid=tool-card][data-status=blocked]').count()) >= 2);
      const blocked = await chat.locator('[data-testid=tool-card][data-status=blocked]').allInnerTexts();
      if (!blocked.some((t) => t.includes('write_file')) || !blocked.some((t) => t.includes('bash'))) {
        throw new Error(`blocked cards are ${JSON.stringify(blocked)}`);
      }
      const reason = await chat.locator('[data-testid=tool-card][data-tool=write_file] [data-testid=tool-reason]').first().innerText();
      if (!/plan/i.test(reason)) throw new Error(`write_file blocked without a plan-mode reason: ${reason}`);
      await shot(page, '03-sidebar-blocked');
    });

    await check(page, 'plan draft appears in the PLAN.md editor', async () => {
      await waitFor('PLAN.md to be the active editor', async () => (await activeTabTitle(page)) === 'PLAN.md');
      const firstLine = PLAN_TEXT.split('\n')[0];
      await waitFor('the plan text in the editor', async () => (await activeEditorText(page)).includes(firstLine));
      await waitFor('plan status "submitted" in the sidebar', async () =>
        /submitted/.test(await chat.locator('[data-testid=plan-status]').innerText()));
      const text = await activeEditorText(page);
      for (const line of PLAN_TEXT.trim().split('\n').filter(Boolean)) {
        if (!text.includes(line)) throw new Error(`editor lacks plan line ${JSON.stringify(line)}; has ${JSON.stringify(text)}`);
      }
      await shot(page, '04-plan-in-editor');
    });

    await check(page, 'Approve code lens switches to Build and the Do edit lands in the editor', async () => {
      // "ask before edits": the Do run's edit_file must come back as an inline permission card.
      const lens = page.locator('.editor-group-container.active .codelens-decoration a', { hasText: 'Approve (ask before edits)' });
      await lens.first().waitFor({ timeout: STEP_MS });
      await shot(page, '05-approve-lens');
      await lens.first().click();
      await waitFor('status bar "Build"', async () => (await statusText(page)).startsWith('Build'));
      await shot(page, '06-status-build-after-approve');
      const allow = chat.locator('[data-testid=permission-card] button', { hasText: 'Allow once' });
      await allow.first().waitFor({ timeout: STEP_MS });
      const waiting = await chat.locator('[data-testid=tool-card][data-status=waiting][data-tool=edit_file]').count();
      if (waiting !== 1) throw new Error(`expected the edit_file card to wait for permission, found ${waiting}`);
      if (readFileSync(join(ws, 'hello.py'), 'utf8').includes('hello, world')) throw new Error('the edit ran before permission');
      await shot(page, '06b-permission-inline');
      await allow.first().click();
      await waitFor('the Do run to finish', async () =>
        /approved/.test(await chat.locator('[data-testid=plan-status]').innerText()) &&
        readFileSync(join(ws, 'hello.py'), 'utf8').includes('hello, world'), STEP_MS);
      // Open hello.py in the editor: the edit must be what the editor shows.
      await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
      await page.keyboard.press('Control+P');
      const quick = page.locator('.quick-input-widget input');
      await quick.waitFor({ timeout: STEP_MS });
      await quick.fill('hello.py');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'hello.py' }).first().waitFor({ timeout: STEP_MS });
      await page.keyboard.press('Enter');
      await waitFor('hello.py to be the active editor', async () => (await activeTabTitle(page)) === 'hello.py');
      await waitFor("the editor to show print('hello, world')", async () =>
        (await activeEditorText(page)).includes("print('hello, world')"));
      await shot(page, '07-do-edit-in-editor');
    });

    await check(page, 'sidebar state survives hiding and re-showing the view', async () => {
      const before = await chat.locator('[data-testid=tool-card]').count();
      // The "unsaved files" badge overlays the label; click its action item.
      await page.locator('.activitybar .action-item:has(.action-label[aria-label^="Explorer"])').first().click({ position: { x: 8, y: 8 } });
      await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: STEP_MS });
      await page.locator('.activitybar .action-label[aria-label^="Plan LSP"]').first().click();
      await waitFor('the same tool cards after re-showing', async () =>
        (await chat.locator('[data-testid=tool-card]').count()) === before &&
        (await chat.locator('[data-testid=tool-card][data-status=blocked]').count()) >= 2);
      await waitFor('the chat to show Build mode', async () =>
        (await chat.locator('[data-testid=mode-build]').getAttribute('aria-pressed')) === 'true');
      await shot(page, '08-sidebar-after-reshow');
    });
  } finally {
    await browser?.close().catch(() => undefined);
    try {
      process.kill(-cs.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    writeFileSync(serverLog, Buffer.concat(out));
    if (existsSync(transcript)) writeFileSync(join(ARTIFACTS, 'transcript.jsonl'), readFileSync(transcript));
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
    writeFileSync(join(ARTIFACTS, 'results.json'), JSON.stringify({ seconds: (Date.now() - started) / 1000, results }, null, 2));
    log(`${passed} passed, ${failed} failed`);
    process.exitCode = failed === 0 && passed > 0 ? 0 : 1;
  });
