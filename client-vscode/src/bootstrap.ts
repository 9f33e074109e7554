/**
 * Finds the Python that runs the server, and when none can import `plan_lsp`, creates a
 * private venv in the extension's global storage and installs the server wheel the extension
 * carries (`server/` inside the vsix). Every step is reported to the sidebar and the log, and
 * the log names the interpreter actually used.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  ISOLATED,
  InterpreterChoice,
  InterpreterProbe,
  cannotStartMessage,
  chooseInterpreter,
  interpreterReport,
  isSupportedVersion,
  pipFailureMessage,
  pipInstallArguments,
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

function venvPython(venvDir: string): string {
  return process.platform === 'win32' ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
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

/** The wheel this build of the extension carries, and its id (sha256), from `server/bundle.json`;
 * `wheelhouse`: the folder of its dependencies' wheels when the build bundles them. */
interface Bundle {
  wheel: string;
  id: string;
  wheelhouse?: string;
}

function readBundle(context: vscode.ExtensionContext): Bundle | undefined {
  const dir = context.asAbsolutePath('server');
  try {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'bundle.json'), 'utf8')) as { wheel?: string; sha256?: string };
    if (!meta.wheel || !meta.sha256) return undefined;
    const wheel = path.join(dir, path.basename(meta.wheel));
    if (!fs.existsSync(wheel)) return undefined;
    const wheelhouse = path.join(dir, 'wheels');
    const bundled = fs.existsSync(wheelhouse) && fs.readdirSync(wheelhouse).some((name) => name.endsWith('.whl'));
    return { wheel, id: meta.sha256, ...(bundled ? { wheelhouse } : {}) };
  } catch {
    return undefined;
  }
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
  // An explicit setting is the user's choice: report, never replace it.
  if (choice.source === 'setting' || !settings.bootstrap) throw new StartError(cannotStartMessage(choice, probe));

  const bundle = readBundle(context);
  if (!bundle) {
    throw new StartError(
      `Plan LSP cannot start: "${choice.python}" cannot import plan_lsp and this build of the extension carries no server package. ` +
        'Fix: install plan-lsp (`pip install plan-lsp`) and set "planLsp.python" in your user settings to that interpreter.',
    );
  }
  const venvDir = path.join(context.globalStorageUri.fsPath, 'venv');
  const python = venvPython(venvDir);
  const marker = path.join(venvDir, '.plan-lsp-bundle');
  const venvChoice: InterpreterChoice = { python, source: 'private-venv' };
  if (fs.existsSync(python) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === bundle.id) {
    const existing = await probeInterpreter(python, cwd);
    if (usable(existing)) return { python, report: interpreterReport(venvChoice, existing) };
    output.appendLine(probeLine(venvChoice, existing));
  }
  if (!probe.ok || !isSupportedVersion(probe.version)) throw new StartError(cannotStartMessage(choice, probe));
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Plan LSP: installing the server' },
    async (progress) => {
      report('venv', `${choice.python} -m venv ${venvDir}`, 0.05);
      progress.report({ message: 'creating a virtual environment' });
      fs.mkdirSync(context.globalStorageUri.fsPath, { recursive: true });
      const venv = await run(choice.python, [ISOLATED, '-m', 'venv', '--clear', venvDir], cwd, output);
      if (venv.code !== 0) {
        throw new StartError(
          `Plan LSP could not create a virtual environment with "${choice.python}" (see the "Plan LSP" output). ` +
            'Fix: install the venv module (Debian/Ubuntu: `apt install python3-venv`) or set "planLsp.python".',
        );
      }
      progress.report({ message: 'installing plan-lsp and its dependencies' });
      let fraction = 0.2;
      report('install', path.basename(bundle.wheel), fraction);
      const pip = await run(python, pipInstallArguments(bundle.wheel, bundle.wheelhouse), cwd, output, (line) => {
        if (/^(Collecting|Processing|Downloading|Using cached)\b/.test(line)) fraction = Math.min(0.8, fraction + 0.02);
        else if (/^Installing collected packages/.test(line)) fraction = 0.85;
        else return;
        report('install', line.length > 120 ? `${line.slice(0, 117)}…` : line, fraction);
      });
      if (pip.code !== 0) throw new StartError(pipFailureMessage(pip.log, python));
      fs.writeFileSync(marker, bundle.id);
      const installed = await probeInterpreter(python, cwd);
      if (!usable(installed)) throw new StartError(cannotStartMessage(venvChoice, installed));
      return { python, report: interpreterReport(venvChoice, installed) };
    },
  );
}
