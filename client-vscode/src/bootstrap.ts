/**
 * Finds the Python that runs the server, and when none can import `plan_lsp`, creates a
 * private venv in the extension's global storage and installs the server wheel the extension
 * carries (`server/` inside the vsix). Every step is reported to the sidebar and the log, and
 * the log names the interpreter actually used.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  abiPins,
  ServerBundle,
  cannotStartMessage,
  installPlan,
  noBundleMessage,
  offlineFix,
  otherPythonFix,
  parseBundle,
  pipFailureMessage,
  venvFailureMessage,
  venvPython,
} from './serverInstall';
import {
  InterpreterChoice,
  InterpreterProbe,
  chooseInterpreter,
  interpreterReport,
  isSupportedVersion,
  probeInterpreter,
} from './serverLaunch';
import type { ClientSettings } from './settings';
import type { StartupStep } from './webview/chatState';

export class StartError extends Error {}

export interface StartupReporter {
  (step: StartupStep, detail?: string | null, progress?: number): void;
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: { getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined } };
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!extension) return undefined;
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (api.environments) {
      const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
      if (env?.executable.uri) return env.executable.uri.fsPath;
    }
    return api.settings?.getExecutionDetails(resource).execCommand?.[0];
  } catch {
    return undefined;
  }
}

const WINDOWS = process.platform === 'win32';

/** An executable `name` on PATH, or null. */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    for (const file of WINDOWS ? [`${name}.exe`, name] : [name]) {
      const candidate = path.join(dir, file);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return null;
}

function run(
  command: string,
  args: string[],
  cwd: string,
  output: vscode.OutputChannel,
  onLine?: (line: string) => void,
): Promise<{ code: number; log: string }> {
  return new Promise((resolve) => {
    output.appendLine(`$ ${command} ${args.join(' ')}`);
    let log = '';
    let partial = '';
    const child = spawn(command, args, { cwd, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
    const collect = (data: Buffer): void => {
      const text = data.toString();
      log += text;
      output.append(text);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) onLine?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (err) => resolve({ code: -1, log: log + String(err) }));
    child.on('close', (code) => resolve({ code: code ?? -1, log }));
  });
}

/** What this build of the extension carries in `server/` (bundle.json), or undefined. */
function readBundle(context: vscode.ExtensionContext): ServerBundle | undefined {
  const dir = context.asAbsolutePath('server');
  try {
    return parseBundle(fs.readFileSync(path.join(dir, 'bundle.json'), 'utf8'), dir, (file) => fs.existsSync(file));
  } catch {
    return undefined;
  }
}

/** The source checkout this extension runs from (a development host), or null. */
function sourceCheckout(context: vscode.ExtensionContext): string | null {
  const root = path.dirname(context.extensionPath);
  return fs.existsSync(path.join(root, 'pyproject.toml')) && fs.existsSync(path.join(root, 'plan_lsp')) ? root : null;
}

/** Where the offline fix in a failure message builds the server's environment. */
function manualVenv(): string {
  return path.join(os.homedir(), '.plan-lsp', 'venv');
}

function usable(probe: InterpreterProbe): boolean {
  return probe.ok && probe.hasPlanLsp && isSupportedVersion(probe.version);
}

function probeLine(choice: InterpreterChoice, probe: InterpreterProbe): string {
  if (!probe.ok) return `Checked ${choice.python}: did not run (${probe.error ?? 'unknown error'})`;
  return `Checked ${choice.python}: Python ${probe.version?.join('.')}, plan_lsp ${probe.hasPlanLsp ? 'importable' : 'not importable'}`;
}

export interface ResolvedServer {
  python: string;
  /** One log line naming the interpreter and where it came from. */
  report: string;
}

/**
 * The interpreter to launch `python -I -m plan_lsp serve` with, bootstrapping if needed.
 * `cwd` is outside every workspace folder; every Python run here runs there, isolated.
 */
export async function resolveServerPython(
  context: vscode.ExtensionContext,
  output: vscode.OutputChannel,
  settings: ClientSettings,
  cwd: string,
  report: StartupReporter,
): Promise<ResolvedServer> {
  report('probe', null, 0.02);
  const trusted = vscode.workspace.isTrusted;
  const fromExtension = settings.python || !trusted ? undefined : await pythonExtensionInterpreter();
  const choice = chooseInterpreter(settings.python, fromExtension, trusted);
  const probe = await probeInterpreter(choice.python, cwd);
  if (usable(probe)) return { python: choice.python, report: interpreterReport(choice, probe) };
  output.appendLine(probeLine(choice, probe));
  const bundle = readBundle(context);
  const fixFor = (base: string, found: InterpreterProbe) => offlineFix(bundle, base, found, manualVenv(), WINDOWS);
  const other = otherPythonFix(bundle, manualVenv(), WINDOWS);
  // An explicit setting is the user's choice: report, never replace it.
  if (choice.source === 'setting' || !settings.bootstrap) {
    throw new StartError(cannotStartMessage(choice, probe, fixFor(choice.python, probe), other));
  }
  if (!bundle) throw new StartError(noBundleMessage(choice.python, sourceCheckout(context), WINDOWS));
  const venvDir = path.join(context.globalStorageUri.fsPath, 'venv');
  const python = venvPython(venvDir, WINDOWS);
  const marker = path.join(venvDir, '.plan-lsp-bundle');
  const venvChoice: InterpreterChoice = { python, source: 'private-venv' };
  if (fs.existsSync(python) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === bundle.id) {
    const existing = await probeInterpreter(python, cwd);
    if (usable(existing)) return { python, report: interpreterReport(venvChoice, existing) };
    output.appendLine(probeLine(venvChoice, existing));
  }
  if (!probe.ok || !isSupportedVersion(probe.version)) throw new StartError(cannotStartMessage(choice, probe, null, other));
  const prefetchDir = path.join(context.globalStorageUri.fsPath, 'downloaded-wheels');
  const pins = bundle.wheels ? abiPins(fs.readdirSync(bundle.wheels.dir)) : [];
  const plan = installPlan(bundle, probe, venvDir, { windows: WINDOWS, uv: onPath('uv'), prefetch: { dir: prefetchDir, pins } });
  const fix = fixFor(choice.python, probe);
  output.appendLine(
    plan.source === 'bundled'
      ? `First run: installing from the wheels this extension carries, no package index (${plan.reason}); installer: ${plan.install.tool}`
      : `First run: installing from the package index, with the bundled wheels as an extra source (${plan.reason})`,
  );
  const step = plan.source === 'bundled' ? 'install' : 'download';
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Plan LSP: installing the server' },
    async (progress) => {
      report('venv', `${choice.python} ${plan.venv.join(' ')}`, 0.05);
      progress.report({ message: 'creating a virtual environment' });
      fs.mkdirSync(context.globalStorageUri.fsPath, { recursive: true });
      const venv = await run(choice.python, plan.venv, cwd, output);
      if (venv.code !== 0) throw new StartError(venvFailureMessage(choice.python, fix));
      progress.report({ message: 'installing plan-lsp and its dependencies' });
      let fraction = 0.2;
      report(step, plan.source === 'bundled' ? path.basename(bundle.wheel) : plan.reason, fraction);
      const onLine = (line: string): void => {
        if (/^(Collecting|Processing|Downloading|Using cached|Saved)\b/.test(line)) fraction = Math.min(0.8, fraction + 0.02);
        else if (/^(Installing collected packages|Prepared|Installed)\b/.test(line)) fraction = 0.85;
        else return;
        report(step, line.length > 120 ? `${line.slice(0, 117)}…` : line, fraction);
      };
      let installed: { code: number; log: string } = { code: -1, log: '' };
      if (plan.prefetch) {
        // Only the wheels specific to this Python and platform come from the index.
        fs.rmSync(prefetchDir, { recursive: true, force: true });
        const fetched = await run(plan.prefetch.command, plan.prefetch.args, cwd, output, onLine);
        if (fetched.code === 0) installed = await run(plan.install.command, plan.install.args, cwd, output, onLine);
        else installed = fetched;
        if (installed.code !== 0 && plan.fallback) {
          output.appendLine('The bundled versions do not all have wheels for this Python: installing from the package index.');
          installed = await run(plan.fallback.command, plan.fallback.args, cwd, output, onLine);
        }
        fs.rmSync(prefetchDir, { recursive: true, force: true });
      } else {
        installed = await run(plan.install.command, plan.install.args, cwd, output, onLine);
      }
      let used = plan;
      if (installed.code !== 0 && plan.install.tool === 'uv') {
        // uv failed where pip may not: the same install with pip before giving up.
        output.appendLine('uv could not install the server; trying pip.');
        used = installPlan(bundle, probe, venvDir, { windows: WINDOWS, uv: null });
        installed = await run(used.install.command, used.install.args, cwd, output);
      }
      if (installed.code !== 0) throw new StartError(pipFailureMessage(installed.log, used, fix, other));
      fs.writeFileSync(marker, bundle.id);
      const result = await probeInterpreter(python, cwd);
      if (!usable(result)) throw new StartError(cannotStartMessage(venvChoice, result, fix, other));
      return { python, report: interpreterReport(venvChoice, result) };
    },
  );
}
