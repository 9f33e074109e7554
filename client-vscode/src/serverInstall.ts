/**
 * How the first start installs the server from what the vsix carries (`server/bundle.json`,
 * its wheels), and the failure texts with a fix that works offline. No `vscode` import:
 * tested in plain Node.
 */
import * as path from 'node:path';
import { ISOLATED, SOURCE_TEXT, isSupportedVersion } from './serverLaunch';
import type { InterpreterChoice, InterpreterProbe } from './serverLaunch';

/** What the vsix carries in `server/` (from its `bundle.json`), with absolute paths. */
export interface ServerBundle {
  /** The plan-lsp wheel. */
  wheel: string;
  /** Its sha256: the private venv is rebuilt when it changes. */
  id: string;
  /** The dependencies' wheels, when the build bundled them. */
  wheels?: BundledWheels;
}

export interface BundledWheels {
  /** The folder (`server/wheels`). */
  dir: string;
  /** The CPython versions ("3.12") whose whole install resolves from `dir` alone. */
  pythons: string[];
  /** The platform they are for, as the probe names it ("linux-x86_64"). */
  platform: string | null;
  /** The oldest glibc they run on (Linux), or null. */
  glibc: string | null;
  /** pip's own wheel in `dir`, when bundled (pip runs from it: the venv needs no pip). */
  pip: string | null;
}

/** Reads `server/bundle.json` (its text, `serverDir` the folder it is in). `undefined` when it
 * names no wheel; an older bundle.json without a `wheels` record counts its wheels as covering
 * nothing known (the index install, with them as a preferred source). */
export function parseBundle(text: string, serverDir: string, exists: (file: string) => boolean): ServerBundle | undefined {
  let meta: {
    wheel?: unknown;
    sha256?: unknown;
    wheels?: { dir?: unknown; pythons?: unknown; platform?: unknown; glibc?: unknown; pip?: unknown };
  };
  try {
    meta = JSON.parse(text) as typeof meta;
  } catch {
    return undefined;
  }
  if (typeof meta.wheel !== 'string' || typeof meta.sha256 !== 'string') return undefined;
  const wheel = path.join(serverDir, path.basename(meta.wheel));
  if (!exists(wheel)) return undefined;
  const bundle: ServerBundle = { wheel, id: meta.sha256 };
  const w = meta.wheels ?? {};
  const dir = path.join(serverDir, typeof w.dir === 'string' ? path.basename(w.dir) : 'wheels');
  if (!exists(dir)) return bundle;
  const pip = typeof w.pip === 'string' ? path.join(dir, path.basename(w.pip)) : null;
  bundle.wheels = {
    dir,
    pythons: Array.isArray(w.pythons) ? w.pythons.filter((v): v is string => typeof v === 'string') : [],
    platform: typeof w.platform === 'string' ? w.platform : null,
    glibc: typeof w.glibc === 'string' ? w.glibc : null,
    pip: pip && exists(pip) ? pip : null,
  };
  return bundle;
}

function versionAtLeast(have: string, floor: string): boolean {
  const a = have.split('.').map(Number);
  const b = floor.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/** "3.11–3.14" (or "3.11, 3.13" when not contiguous). */
export function versionRange(pythons: readonly string[]): string {
  if (pythons.length === 0) return 'none';
  const minors = pythons.map((v) => Number(v.split('.')[1]));
  const contiguous = minors.every((m, i) => i === 0 || m === minors[i - 1] + 1);
  return contiguous && pythons.length > 1 ? `${pythons[0]}–${pythons[pythons.length - 1]}` : pythons.join(', ');
}

/** Whether the bundled wheels install the server into this interpreter with no package index,
 * and if not, why (in words, for the log and the card). */
export function bundleCovers(wheels: BundledWheels | undefined, probe: InterpreterProbe): { covered: boolean; reason: string } {
  if (!wheels) return { covered: false, reason: "this build of the extension carries no dependency wheels" };
  const version = probe.version ? probe.version.join('.') : '?';
  const platform = probe.platform ?? 'an unknown platform';
  if (probe.implementation && probe.implementation !== 'cpython') {
    return { covered: false, reason: `the bundled wheels are for CPython; this Python is ${probe.implementation}` };
  }
  if (!wheels.platform || wheels.platform !== probe.platform) {
    return { covered: false, reason: `the bundled wheels are for ${wheels.platform ?? 'another platform'}; this Python runs on ${platform}` };
  }
  if (!wheels.pythons.includes(version)) {
    return { covered: false, reason: `the bundled wheels are for Python ${versionRange(wheels.pythons)}; this one is ${version}` };
  }
  if (wheels.glibc) {
    const m = /^glibc (\d+(?:\.\d+)*)/.exec(probe.libc ?? '');
    if (!m || !versionAtLeast(m[1], wheels.glibc)) {
      return { covered: false, reason: `the bundled wheels need glibc ≥ ${wheels.glibc}; this system has ${m ? `glibc ${m[1]}` : 'another C library'}` };
    }
  }
  return { covered: true, reason: `the bundled wheels cover Python ${version} on ${platform}` };
}

export function venvPython(venvDir: string, windows: boolean): string {
  return windows ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
}

/** How the first start installs the server: the steps' argv, which path ("bundled": from the
 * wheels the vsix carries, no index; "index": the package index, the bundled wheels as an extra
 * source) and why. */
export interface InstallPlan {
  source: 'bundled' | 'index';
  reason: string;
  /** argv after the base interpreter: creates the venv. */
  venv: string[];
  /** The installer: its program and argv. */
  install: { command: string; args: string[]; tool: 'pip' | 'uv' };
  /** Index path only: first download just the platform- and version-specific wheels, at the
   * bundled versions, so that `install` takes everything else from the bundle (pip does not
   * prefer a --find-links folder over the index on its own)... */
  prefetch?: { command: string; args: string[] };
  /** ...and when that fails, the plain index install. */
  fallback?: { command: string; args: string[]; tool: 'pip' };
}

/** `name==version` for the bundled wheels that are specific to a Python version or platform
 * (not `py3-none-any`), from their file names; pip's own wheel left out. */
export function abiPins(fileNames: readonly string[]): string[] {
  const pins: string[] = [];
  for (const name of fileNames) {
    const m = /^([A-Za-z0-9_.]+)-([^-]+)-.+\.whl$/.exec(name);
    if (!m || /-none-any\.whl$/.test(name) || m[1].toLowerCase() === 'pip') continue;
    const pin = `${m[1]}==${m[2]}`;
    if (!pins.includes(pin)) pins.push(pin);
  }
  return pins.sort();
}

/** The first start's install. With the bundled pip wheel the venv is made `--without-pip`
 * (about 0.1 s instead of 2–3 s for ensurepip) and pip runs from its wheel; with `uv` on PATH
 * and everything bundled, uv installs (about 0.7 s instead of 2.6 s, measured). --no-compile:
 * Python compiles what the server imports, once, on first use. */
export function installPlan(
  bundle: ServerBundle,
  probe: InterpreterProbe,
  venvDir: string,
  options: { windows: boolean; uv?: string | null; prefetch?: { dir: string; pins: readonly string[] } },
): InstallPlan {
  const { covered, reason } = bundleCovers(bundle.wheels, probe);
  const python = venvPython(venvDir, options.windows);
  const pipWheel = bundle.wheels?.pip ?? null;
  const venv = [ISOLATED, '-m', 'venv', '--clear', ...(pipWheel ? ['--without-pip'] : []), venvDir];
  const links = bundle.wheels ? ['--find-links', bundle.wheels.dir] : [];
  const offline = covered ? ['--no-index'] : [];
  if (covered && options.uv) {
    return {
      source: 'bundled',
      reason,
      venv,
      install: {
        command: options.uv,
        args: ['pip', 'install', '--no-config', '--offline', '--python', python, ...offline, ...links, bundle.wheel],
        tool: 'uv',
      },
    };
  }
  const pip = pipWheel ? [ISOLATED, path.join(pipWheel, 'pip')] : [ISOLATED, '-m', 'pip'];
  const install = { command: python, args: [...pip, 'install', '--no-input', '--no-compile', ...offline, ...links, bundle.wheel], tool: 'pip' as const };
  if (covered || !bundle.wheels || !options.prefetch || options.prefetch.pins.length === 0) {
    return { source: covered ? 'bundled' : 'index', reason, venv, install };
  }
  const { dir, pins } = options.prefetch;
  return {
    source: 'index',
    reason,
    venv,
    prefetch: { command: python, args: [...pip, 'download', '--no-input', '--only-binary=:all:', '--no-deps', '-d', dir, ...pins] },
    install: {
      command: python,
      args: [...pip, 'install', '--no-input', '--no-compile', '--no-index', ...links, '--find-links', dir, bundle.wheel],
      tool: 'pip',
    },
    fallback: install,
  };
}

/** A path or word as a shell would need it (POSIX single quotes; Windows double quotes). */
export function shellQuote(word: string, windows: boolean): string {
  if (/^[\w@%+=:,./\\-]+$/.test(word)) return word;
  return windows ? `"${word.replace(/"/g, '""')}"` : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A fix that needs no network: the commands that build a venv from the wheels this extension
 * carries, and the interpreter to set "planLsp.python" to. Null when the wheels cannot cover
 * the interpreter (then no offline fix exists with it). */
export interface OfflineFix {
  command: string;
  python: string;
}

function offlineCommand(wheels: BundledWheels, wheel: string, base: string, venvDir: string, windows: boolean): OfflineFix {
  const q = (word: string): string => shellQuote(word, windows);
  const python = venvPython(venvDir, windows);
  const venv = `${base} -m venv ${wheels.pip ? '--without-pip ' : ''}${q(venvDir)}`;
  const install = `${q(python)} ${wheels.pip ? q(path.join(wheels.pip, 'pip')) : '-m pip'} install --no-index --find-links ${q(wheels.dir)} ${q(wheel)}`;
  return { command: `${venv} && ${install}`, python };
}

export function offlineFix(
  bundle: ServerBundle | undefined,
  basePython: string,
  probe: InterpreterProbe,
  venvDir: string,
  windows: boolean,
): OfflineFix | null {
  if (!bundle?.wheels || !bundleCovers(bundle.wheels, probe).covered) return null;
  return offlineCommand(bundle.wheels, bundle.wheel, shellQuote(basePython, windows), venvDir, windows);
}

/** The offline fix with another interpreter, one the bundled wheels cover (named by version:
 * `python3.14`, `py -3.14` on Windows), for when the one found is not such. */
export interface OtherFix extends OfflineFix {
  versions: string;
  platform: string;
  base: string;
}

export function otherPythonFix(bundle: ServerBundle | undefined, venvDir: string, windows: boolean): OtherFix | null {
  const wheels = bundle?.wheels;
  if (!bundle || !wheels || wheels.pythons.length === 0 || !wheels.platform) return null;
  const newest = wheels.pythons[wheels.pythons.length - 1];
  const base = windows ? `py -${newest}` : `python${newest}`;
  return { ...offlineCommand(wheels, bundle.wheel, base, venvDir, windows), versions: versionRange(wheels.pythons), platform: wheels.platform, base };
}

function fixText(fix: OfflineFix): string {
  return `Fix (works offline): run \`${fix.command}\`, then set "planLsp.python" in your user settings to "${fix.python}".`;
}

/** The offline fix with another interpreter, as a sentence (empty without one). */
function otherPythonText(other: OtherFix | null): string {
  if (!other) return '';
  return (
    ` Offline, the wheels this extension carries install the server into a CPython ${other.versions} on ${other.platform}` +
    ` (${other.base} below; use yours): run \`${other.command}\`, then set "planLsp.python" in your user settings to "${other.python}".`
  );
}

/** Whether pip's output says it could not reach a package index (as opposed to a build error). */
export function isNetworkFailure(pipOutput: string): boolean {
  return /(Could not fetch URL|Failed to establish a new connection|Max retries exceeded|Temporary failure in name resolution|Name or service not known|Network is unreachable|ProxyError|SSLError|ConnectTimeoutError|ReadTimeoutError|No matching distribution found|Could not find a version that satisfies|Failed to fetch|error sending request)/i.test(
    pipOutput,
  );
}

/** User-facing text for a failed install, with a fix: one that works offline when the bundled
 * wheels cover the interpreter; never `pip install plan-lsp` (it is on no package index). */
export function pipFailureMessage(pipOutput: string, plan: InstallPlan, fix: OfflineFix | null, other: OtherFix | null = null): string {
  const fixes = fix ? ` ${fixText(fix)}` : otherPythonText(other);
  if (plan.source === 'index' && isNetworkFailure(pipOutput)) {
    return (
      `Plan LSP could not install its server: ${plan.reason}, so pip needed a package index and could not reach one. ` +
      'Fix: check the network or proxy (pip honours PIP_INDEX_URL / `pip config set global.index-url URL`) and press Retry.' +
      fixes
    );
  }
  return `Plan LSP could not install its server with ${plan.install.tool} (see the "Plan LSP" output for the log).${fixes || ' Fix: set "planLsp.python" to a Python ≥ 3.11 interpreter that can import plan_lsp.'}`;
}

/** User-facing text when the venv could not be made. */
export function venvFailureMessage(python: string, fix: OfflineFix | null): string {
  return (
    `Plan LSP could not create a virtual environment with "${python}" (see the "Plan LSP" output). ` +
    'Fix: install the venv module (Debian/Ubuntu: `apt install python3-venv`) or set "planLsp.python" to an interpreter that has it.' +
    (fix ? ` Then, offline: run \`${fix.command}\` and set "planLsp.python" to "${fix.python}".` : '')
  );
}

/** User-facing text when this build of the extension carries no server wheel (it runs from a
 * source checkout, not from a packaged vsix). `source`: the checkout's root, when there is one. */
export function noBundleMessage(python: string, source: string | null, windows: boolean): string {
  const how = source
    ? `Fix: install the server from this checkout (\`${shellQuote(python, windows)} -m pip install ${shellQuote(source, windows)}\` into a Python ≥ 3.11 environment) and set "planLsp.python" in your user settings to that interpreter, or package the extension (\`npm run package\`) and install the vsix.`
    : 'Fix: install the packaged extension (plan-lsp.vsix, built with `npm run package`), which carries the server and its dependencies.';
  return `Plan LSP cannot start: "${python}" cannot import plan_lsp and this build of the extension carries no server package. ${how}`;
}

/** User-facing text when the interpreter cannot run the server at all. `fix`: the offline
 * install from the wheels this extension carries, when they cover the interpreter. */
export function cannotStartMessage(
  choice: InterpreterChoice,
  probe: InterpreterProbe,
  fix: OfflineFix | null = null,
  other: OtherFix | null = null,
): string {
  const where = choice.source === 'default' ? '' : ` (${SOURCE_TEXT[choice.source]})`;
  if (!probe.ok) {
    return `Plan LSP cannot start: "${choice.python}"${where} did not run (${probe.error ?? 'unknown error'}). Fix: set "planLsp.python" to a Python ≥ 3.11 interpreter.${otherPythonText(other)}`;
  }
  if (!isSupportedVersion(probe.version)) {
    return `Plan LSP needs Python ≥ 3.11; "${choice.python}"${where} is ${probe.version?.join('.')}. Fix: set "planLsp.python" to a newer interpreter.${otherPythonText(other)}`;
  }
  const bootstrap = choice.source === 'private-venv' ? '' : ' Or clear "planLsp.python" and enable "planLsp.bootstrap" to let the extension install its bundled server itself.';
  if (fix) return `Plan LSP cannot start: "${choice.python}"${where} cannot import plan_lsp. ${fixText(fix)}${bootstrap}`;
  return `Plan LSP cannot start: "${choice.python}"${where} cannot import plan_lsp.${otherPythonText(other) || ' Fix: set "planLsp.python" to an interpreter that can import plan_lsp.'}${bootstrap}`;
}
