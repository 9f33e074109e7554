/**
 * The extension's settings, read so that a repository cannot configure the client.
 *
 * A workspace's `.vscode/settings.json` is as untrusted as the code next to it. Every setting
 * of this extension either runs a program (`python`, `serverArgs`, `bootstrap`, `transcript`,
 * `mcp.servers`), lowers plan-mode protection (`permissionMode`, `planShell`, `planNetwork`,
 * `plansDir`) or decides where the code is sent (`provider`, `baseUrl`, and `model`, which picks
 * the vendor behind a routing gateway), so all of them are read from the user's own settings
 * only; a value a workspace sets is ignored and named in a warning. The API key lives in
 * secret storage, which no workspace can reach, and goes only to the user's own base URL.
 * No `vscode` import: tested in plain Node.
 */

/** Keys under `planLsp.` read from user scope only (also `restrictedConfigurations`). */
export const USER_ONLY_SETTINGS = [
  'python',
  'serverArgs',
  'bootstrap',
  'provider',
  'model',
  'baseUrl',
  'permissionMode',
  'planShell',
  'planNetwork',
  'plansDir',
  'transcript',
  'mcp.servers',
] as const;

export type UserOnlySetting = (typeof USER_ONLY_SETTINGS)[number];

/** What `WorkspaceConfiguration.inspect` reports for one key (the parts used here). */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export interface ClientSettings {
  python: string;
  serverArgs: string[];
  bootstrap: boolean;
  provider: string;
  model: string;
  baseUrl: string;
  permissionMode: string;
  planShell: string;
  planNetwork: boolean;
  plansDir: string;
  transcript: string;
  mcpServers: unknown[];
}

export const DEFAULT_SETTINGS: ClientSettings = {
  python: '',
  serverArgs: [],
  bootstrap: true,
  provider: '',
  model: '',
  baseUrl: '',
  permissionMode: 'ask',
  planShell: '',
  planNetwork: false,
  plansDir: '',
  transcript: '',
  mcpServers: [],
};

export interface ReadSettings {
  settings: ClientSettings;
  /** `planLsp.*` keys a workspace or folder set, which were ignored. */
  ignored: string[];
  /** User values of the wrong type (the default is used). */
  invalid: string[];
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** Reads every setting from user scope; `inspect(key)` is `getConfiguration('planLsp').inspect`. */
export function readUserSettings(inspect: (key: UserOnlySetting) => Inspected | undefined): ReadSettings {
  const settings: ClientSettings = { ...DEFAULT_SETTINGS, serverArgs: [], mcpServers: [] };
  const ignored: string[] = [];
  const invalid: string[] = [];
  for (const key of USER_ONLY_SETTINGS) {
    const info = inspect(key);
    if (info?.workspaceValue !== undefined || info?.workspaceFolderValue !== undefined) ignored.push(`planLsp.${key}`);
    const value = info?.globalValue;
    if (value === undefined || value === null) continue;
    const field = key === 'mcp.servers' ? 'mcpServers' : key;
    const expected = DEFAULT_SETTINGS[field];
    let ok: boolean;
    if (Array.isArray(expected)) ok = field === 'serverArgs' ? isStringArray(value) : Array.isArray(value);
    else ok = typeof value === typeof expected;
    if (!ok) {
      invalid.push(`planLsp.${key}`);
      continue;
    }
    (settings as unknown as Record<string, unknown>)[field] = typeof value === 'string' ? value.trim() : value;
  }
  return { settings, ignored, invalid };
}

/** The warning for ignored workspace settings, naming every key. */
export function ignoredSettingsWarning(ignored: readonly string[]): string | null {
  if (ignored.length === 0) return null;
  return (
    `Plan LSP ignored ${ignored.join(', ')} from this workspace's settings: they can run programs, ` +
    'lower plan-mode protection or send your code elsewhere, so only your user settings count.'
  );
}

/** Whether a change of these settings needs a server restart (everything reaches the server
 * through its argv or initializationOptions). */
export function launchSettingsChanged(a: ClientSettings, b: ClientSettings): boolean {
  return JSON.stringify(a) !== JSON.stringify(b);
}
