/**
 * Finds the Python that runs the server, and when none can import `plan_lsp`, creates a
 * private venv in the extension's global storage and installs the server package the
 * extension carries (`server/` inside the vsix).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  InterpreterChoice,
  cannotStartMessage,
  chooseInterpreter,
  isSupportedVersion,
  pipFailureMessage,
  probeInterpreter,
} from './serverLaunch';

export class StartError extends Error {}

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

function run(command: string, args: string[], output: vscode.OutputChannel): Promise<{ code: number; log: string }> {
  return new Promise((resolve) => {
    output.appendLine(`$ ${command} ${args.join(' ')}`);
    let log = '';
    const child = spawn(command, args, { env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
    const collect = (data: Buffer): void => {
      const text = data.toString();
      log += text;
      output.append(text);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (err) => resolve({ code: -1, log: log + String(err) }));
    child.on('close', (code) => resolve({ code: code ?? -1, log }));
  });
}

/** Returns the interpreter to launch `python -m plan_lsp serve` with, bootstrapping if needed. */
export async function resolveServerPython(context: vscode.ExtensionContext, output: vscode.OutputChannel): Promise<string> {
  const config = vscode.workspace.getConfiguration('planLsp');
  const configured = config.get<string>('python', '');
  const choice: InterpreterChoice = chooseInterpreter(
    configured,
    configured ? undefined : await pythonExtensionInterpreter(),
  );
  const probe = await probeInterpreter(choice.python);
  output.appendLine(
    `Interpreter ${choice.python} (${choice.source}): ${probe.ok ? `Python ${probe.version?.join('.')}, plan_lsp ${probe.hasPlanLsp ? 'importable' : 'missing'}` : probe.error}`,
  );
  if (probe.ok && probe.hasPlanLsp && isSupportedVersion(probe.version)) return choice.python;
  // An explicit setting is the user's choice: report, never replace it.
  if (choice.source === 'setting' || !config.get<boolean>('bootstrap', true)) {
    throw new StartError(cannotStartMessage(choice, probe));
  }
  if (!probe.ok || !isSupportedVersion(probe.version)) throw new StartError(cannotStartMessage(choice, probe));
  return bootstrapVenv(context, choice.python, output);
}

async function bootstrapVenv(context: vscode.ExtensionContext, basePython: string, output: vscode.OutputChannel): Promise<string> {
  const bundle = context.asAbsolutePath('server');
  if (!fs.existsSync(path.join(bundle, 'pyproject.toml'))) {
    throw new StartError(
      `Plan LSP cannot start: "${basePython}" cannot import plan_lsp and this build of the extension carries no server package. ` +
        'Fix: install plan-lsp (`pip install plan-lsp`) and set "planLsp.python" to that interpreter.',
    );
  }
  const storage = context.globalStorageUri.fsPath;
  const venvDir = path.join(storage, 'venv');
  const marker = path.join(venvDir, '.plan-lsp-bundle');
  const version = String((context.extension.packageJSON as { version?: string }).version ?? '0');
  const python = venvPython(venvDir);
  if (fs.existsSync(python) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === version) {
    const probe = await probeInterpreter(python);
    if (probe.ok && probe.hasPlanLsp) return python;
  }
  fs.mkdirSync(storage, { recursive: true });
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Plan LSP: installing the server', cancellable: false },
    async (progress) => {
      progress.report({ message: 'creating a virtual environment…' });
      const venv = await run(basePython, ['-m', 'venv', '--clear', venvDir], output);
      if (venv.code !== 0) {
        throw new StartError(
          `Plan LSP could not create a virtual environment with "${basePython}" (see the "Plan LSP" output). ` +
            'Fix: install the venv module (Debian/Ubuntu: `apt install python3-venv`) or set "planLsp.python".',
        );
      }
      progress.report({ message: 'installing plan-lsp and its dependencies with pip…' });
      const pip = await run(python, ['-m', 'pip', 'install', '--upgrade', bundle], output);
      if (pip.code !== 0) throw new StartError(pipFailureMessage(pip.log, python));
      fs.writeFileSync(marker, version);
      return python;
    },
  );
}
