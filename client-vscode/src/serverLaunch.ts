/**
 * How the server process is started: its argv, its initialization options and the probing
 * of Python interpreters. No `vscode` import: tested in plain Node.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import type { ClientSettings } from './settings';

/** `initializationOptions` sent to the server; empty settings are left out so the server's
 * defaults apply. The key comes from secret storage, never from a setting. */
export function initializationOptions(settings: ClientSettings, apiKey: string | undefined): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  const text: [string, string][] = [
    ['provider', settings.provider],
    ['model', settings.model],
    ['baseUrl', settings.baseUrl],
    ['permissionMode', settings.permissionMode],
    ['plansDir', settings.plansDir],
    ['planShell', settings.planShell],
    ['transcript', settings.transcript],
  ];
  for (const [key, value] of text) if (value && value.trim()) options[key] = value.trim();
  if (settings.planNetwork) options.planNetwork = true;
  if (settings.mcpServers.length > 0) options.mcp = { servers: settings.mcpServers };
  if (apiKey) options.apiKey = apiKey;
  return options;
}

/** Interpreter flags: `-I` (isolated) keeps the working directory, the script directory,
 * PYTHON* variables and the user site out of `sys.path`, so nothing a repository ships
 * (a `pygls.py` at its root, say) can be imported in place of the server's modules. */
export const ISOLATED = '-I';

/** The server's argv after the interpreter. The process is started by the extension itself,
 * so `--stdio` is added here. */
export function serverArguments(extra: readonly string[]): string[] {
  return [ISOLATED, '-m', 'plan_lsp', 'serve', ...extra, '--stdio'];
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The working directory of the server and of every Python the extension runs: its own
 * storage, unless that lies inside a workspace folder; then the system's temp directory. */
export function launchDirectory(storage: string, workspaceFolders: readonly string[], tmp: string): string {
  return workspaceFolders.some((folder) => isInside(storage, folder)) ? tmp : storage;
}

/** One line for the log: what the server will talk to. Never the key itself. */
export function describeModelSettings(settings: ClientSettings, hasKey: boolean): string {
  const or = (value: string, fallback: string): string => (value.trim() ? value.trim() : fallback);
  return (
    `Model settings (user): provider ${or(settings.provider, "(the server's default)")}, ` +
    `base URL ${or(settings.baseUrl, "(the provider's default)")}, model ${or(settings.model, "(the provider's default)")}, ` +
    `API key ${hasKey ? 'set (secret storage)' : 'not set'}`
  );
}

export interface InterpreterProbe {
  ok: boolean;
  version: [number, number] | null;
  hasPlanLsp: boolean;
  /** The installed plan-lsp distribution's version, when importable. */
  planLspVersion?: string | null;
  /** `sys.platform-machine` ("linux-x86_64", "darwin-arm64", "win32-amd64"). */
  platform?: string | null;
  /** `sys.implementation.name` ("cpython"). */
  implementation?: string | null;
  /** The C library: "glibc 2.36"; null where there is none to name (musl, macOS, Windows). */
  libc?: string | null;
  error?: string;
}

const PROBE_SCRIPT =
  'import importlib.util, json, os, platform, sys\n' +
  'found = importlib.util.find_spec("plan_lsp") is not None\n' +
  'version = None\n' +
  'if found:\n' +
  '    try:\n' +
  '        from importlib.metadata import version as v; version = v("plan-lsp")\n' +
  '    except Exception:\n' +
  '        pass\n' +
  'try:\n' +
  '    libc = os.confstr("CS_GNU_LIBC_VERSION")\n' +
  'except (AttributeError, ValueError, OSError):\n' +
  '    libc = None\n' +
  'print(json.dumps({"version": list(sys.version_info[:2]), "planLsp": found, "planLspVersion": version,\n' +
  '    "platform": sys.platform + "-" + platform.machine().lower(), "implementation": sys.implementation.name, "libc": libc}))';

/** Runs the interpreter once, isolated like the server, to learn its version and whether
 * `plan_lsp` is importable. */
export function probeInterpreter(python: string, cwd?: string, timeoutMs = 15000): Promise<InterpreterProbe> {
  return new Promise((resolve) => {
    execFile(python, [ISOLATED, '-c', PROBE_SCRIPT], { timeout: timeoutMs, cwd }, (error, stdout, stderr) => {
      if (error) {
        resolve({ ok: false, version: null, hasPlanLsp: false, error: (stderr || error.message).trim() });
        return;
      }
      try {
        const parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '') as {
          version: [number, number];
          planLsp: boolean;
          planLspVersion: string | null;
          platform?: string;
          implementation?: string;
          libc?: string | null;
        };
        resolve({
          ok: true,
          version: parsed.version,
          hasPlanLsp: parsed.planLsp,
          planLspVersion: parsed.planLspVersion,
          platform: parsed.platform ?? null,
          implementation: parsed.implementation ?? null,
          libc: parsed.libc ?? null,
        });
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

export type InterpreterSource = 'setting' | 'python-extension' | 'default' | 'private-venv';

export interface InterpreterChoice {
  python: string;
  source: InterpreterSource;
}

/** `planLsp.python` (user settings), then the Python extension's active interpreter (only
 * in a trusted workspace: it may be a program the repository ships), then `python3`. */
export function chooseInterpreter(
  configured: string | undefined,
  fromPythonExtension: string | undefined,
  workspaceTrusted = true,
): InterpreterChoice {
  if (configured && configured.trim()) return { python: configured.trim(), source: 'setting' };
  if (workspaceTrusted && fromPythonExtension && fromPythonExtension.trim()) {
    return { python: fromPythonExtension.trim(), source: 'python-extension' };
  }
  return { python: 'python3', source: 'default' };
}

export const SOURCE_TEXT: Record<InterpreterSource, string> = {
  setting: 'from "planLsp.python"',
  'python-extension': "the Python extension's interpreter",
  default: 'python3 on PATH',
  'private-venv': "the extension's private environment",
};

/** The log line naming the interpreter the server actually runs with. */
export function interpreterReport(choice: InterpreterChoice, probe: InterpreterProbe): string {
  const version = probe.version ? `Python ${probe.version.join('.')}` : 'Python ?';
  const planLsp = probe.planLspVersion ? `plan-lsp ${probe.planLspVersion}` : 'plan-lsp';
  return `Server interpreter: ${choice.python} (${SOURCE_TEXT[choice.source]}; ${version}, ${planLsp})`;
}
