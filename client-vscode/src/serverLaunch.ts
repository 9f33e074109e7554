/**
 * How the server process is started: its argv, its initialization options and the probing
 * of Python interpreters. No `vscode` import: tested in plain Node.
 */
import { execFile } from 'node:child_process';

export interface LaunchSettings {
  provider: string;
  model: string;
  baseUrl: string;
  permissionMode: string;
  plansDir: string;
  planShell: string;
}

/** `initializationOptions` sent to the server; empty settings are left out so the server's
 * defaults apply. */
export function initializationOptions(settings: LaunchSettings, apiKey: string | undefined): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  const text: [keyof LaunchSettings, string][] = [
    ['provider', settings.provider],
    ['model', settings.model],
    ['baseUrl', settings.baseUrl],
    ['permissionMode', settings.permissionMode],
    ['plansDir', settings.plansDir],
    ['planShell', settings.planShell],
  ];
  for (const [key, value] of text) if (value && value.trim()) options[key] = value.trim();
  if (apiKey) options.apiKey = apiKey;
  return options;
}

/** Arguments after the interpreter; vscode-languageclient appends `--stdio`. */
export function serverArguments(extra: readonly string[]): string[] {
  return ['-m', 'plan_lsp', 'serve', ...extra];
}

export interface InterpreterProbe {
  ok: boolean;
  version: [number, number] | null;
  hasPlanLsp: boolean;
  error?: string;
}

const PROBE_SCRIPT =
  'import importlib.util, json, sys; ' +
  'print(json.dumps({"version": list(sys.version_info[:2]), "planLsp": importlib.util.find_spec("plan_lsp") is not None}))';

/** Runs the interpreter once to learn its version and whether `plan_lsp` is importable. */
export function probeInterpreter(python: string, timeoutMs = 15000): Promise<InterpreterProbe> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE_SCRIPT], { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) {
        resolve({ ok: false, version: null, hasPlanLsp: false, error: (stderr || error.message).trim() });
        return;
      }
      try {
        const parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '') as { version: [number, number]; planLsp: boolean };
        resolve({ ok: true, version: parsed.version, hasPlanLsp: parsed.planLsp });
      } catch {
        resolve({ ok: false, version: null, hasPlanLsp: false, error: `unexpected output: ${stdout.slice(0, 200)}` });
      }
    });
  });
}

export const MIN_PYTHON: [number, number] = [3, 11];

export function isSupportedVersion(version: [number, number] | null): boolean {
  if (!version) return false;
  return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterChoice {
  python: string;
  source: InterpreterSource;
}

/** `planLsp.python`, then the Python extension's active interpreter, then `python3`. */
export function chooseInterpreter(configured: string | undefined, fromPythonExtension: string | undefined): InterpreterChoice {
  if (configured && configured.trim()) return { python: configured.trim(), source: 'setting' };
  if (fromPythonExtension && fromPythonExtension.trim()) return { python: fromPythonExtension.trim(), source: 'python-extension' };
  return { python: 'python3', source: 'default' };
}

/** Whether pip's output says it could not reach a package index (as opposed to a build error). */
export function isNetworkFailure(pipOutput: string): boolean {
  return /(Could not fetch URL|Failed to establish a new connection|Max retries exceeded|Temporary failure in name resolution|Name or service not known|Network is unreachable|ProxyError|SSLError|ConnectTimeoutError|ReadTimeoutError|No matching distribution found|Could not find a version that satisfies)/i.test(
    pipOutput,
  );
}

/** User-facing text for a pip failure, with the fix. */
export function pipFailureMessage(pipOutput: string, python: string): string {
  if (isNetworkFailure(pipOutput)) {
    return (
      'Plan LSP could not install its server: pip could not reach a package index. ' +
      'Fix: check the network or proxy (pip honours PIP_INDEX_URL / `pip config set global.index-url URL`), ' +
      `or install it yourself (\`${python} -m pip install plan-lsp\`) and set "planLsp.python" to that interpreter.`
    );
  }
  return (
    'Plan LSP could not install its server with pip (see the "Plan LSP" output for the log). ' +
    'Fix: install it yourself into a Python ≥ 3.11 environment and set "planLsp.python" to that interpreter.'
  );
}

/** User-facing text when the interpreter cannot run the server at all. */
export function cannotStartMessage(choice: InterpreterChoice, probe: InterpreterProbe): string {
  const where = choice.source === 'setting' ? ' (from "planLsp.python")' : choice.source === 'python-extension' ? ' (the Python extension\'s interpreter)' : '';
  if (!probe.ok) {
    return `Plan LSP cannot start: "${choice.python}"${where} did not run (${probe.error ?? 'unknown error'}). Fix: set "planLsp.python" to a Python ≥ 3.11 interpreter.`;
  }
  if (!isSupportedVersion(probe.version)) {
    return `Plan LSP needs Python ≥ 3.11; "${choice.python}"${where} is ${probe.version?.join('.')}. Fix: set "planLsp.python" to a newer interpreter.`;
  }
  return `Plan LSP cannot start: "${choice.python}"${where} cannot import plan_lsp. Fix: run \`${choice.python} -m pip install plan-lsp\`, or clear "planLsp.python" and enable "planLsp.bootstrap" to let the extension install its bundled server.`;
}
