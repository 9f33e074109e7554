import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatState, initialChatState, reduce } from '../webview/chatState';
import { CARD_COMMANDS, CardAction, describeProvider, fixAction, setupCardView, sidebarWarnings } from '../webview/setupCard';
import { PRESETS, baseUrlProblem, presetById, presetSettings } from '../presets';
import type { ProviderStatus, SessionState } from '../wireTypes';

const provider: ProviderStatus = { name: 'openai', model: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1', configured: true, problem: null };

function withSession(p: ProviderStatus | undefined, base: ChatState = initialChatState()): ChatState {
  const state: SessionState = {
    sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none', outcome: 'never_planned',
    todos: [], running: false, ...(p ? { provider: p } : {}),
  };
  return reduce(reduce(base, { type: 'serverStatus', status: 'running' }), { type: 'state', state });
}

const labels = (actions: CardAction[]): string[] => actions.map((a) => a.label);

test('starting: says what the first run is doing, with progress and the log', () => {
  let s = reduce(initialChatState(), { type: 'startup', step: 'venv', detail: 'python3 -m venv /x', progress: 0.05 });
  let card = setupCardView(s);
  assert.equal(card?.kind, 'starting');
  assert.match(card?.lines[0] ?? '', /private Python environment/);
  assert.equal(card?.progress, 0.05);
  assert.deepEqual(labels(card?.actions ?? []), ['Show Log']);
  s = reduce(s, { type: 'startup', step: 'install', detail: 'Collecting pygls', progress: 0.3 });
  card = setupCardView(s);
  assert.match(card?.lines[0] ?? '', /installing plan-lsp/);
  assert.equal(card?.lines[1], 'Collecting pygls');
});

test('a failed start offers Retry and the log, with the reason', () => {
  const s = reduce(initialChatState(), { type: 'serverStatus', status: 'error', message: 'pip could not reach a package index' });
  const card = setupCardView(s);
  assert.equal(card?.kind, 'startFailed');
  assert.deepEqual(card?.lines, ['pip could not reach a package index']);
  assert.deepEqual(card?.actions.map((a) => a.action), ['retryStart', 'showLog']);
  assert.equal(setupCardView(reduce(initialChatState(), { type: 'serverStatus', status: 'stopped' }))?.kind, 'startFailed');
});

test('no model configured: presets for every kind of server, the settings, the key and a test', () => {
  const unconfigured = { ...provider, configured: false, problem: 'no API key for https://api.openai.com/v1' };
  // Nothing chosen yet: no "Using OpenAI, model gpt-4o-mini" (the server's default is no choice).
  let card = setupCardView(withSession(unconfigured));
  assert.equal(card?.kind, 'unconfigured');
  assert.deepEqual(card?.lines, ['Plan LSP needs a model to work with. Pick where yours runs; you can change it later.']);
  card = setupCardView(reduce(withSession(unconfigured), { type: 'setupChoice', setup: { chosen: true, keySet: false } }));
  assert.equal(card?.lines[0], 'no API key for https://api.openai.com/v1');
  assert.equal(card?.lines[1], 'Using OpenAI, model gpt-4o-mini.');
  assert.deepEqual(
    labels(card?.actions ?? []),
    ['OpenAI', 'Anthropic', 'Ollama', 'vLLM', 'LM Studio', 'Change Server URL', 'Change Model', 'Set API Key', 'Test Connection'],
  );
  for (const line of [...(card?.lines ?? []), ...labels(card?.actions ?? [])]) assert.doesNotMatch(line, /planLsp\.|baseUrl/);
  assert.ok(card?.actions.some((a) => a.action === 'openSetting' && a.setting === 'planLsp.baseUrl'));
  assert.ok(card?.actions.some((a) => a.action === 'command' && a.command === CARD_COMMANDS.setApiKey));
});

test('configured and no problem: no card; an older server without provider: no card', () => {
  assert.equal(setupCardView(withSession(provider)), null);
  assert.equal(setupCardView(withSession(undefined)), null);
});

test('a problem the server reports keeps the card up with the settings to fix it', () => {
  const card = setupCardView(withSession({ ...provider, problem: 'cannot reach http://localhost:11434/v1' }));
  assert.equal(card?.kind, 'problem');
  assert.equal(card?.lines[0], 'cannot reach http://localhost:11434/v1');
  assert.ok(labels(card?.actions ?? []).includes('Test Connection'));
});

test('connection test: testing, failed with the fixing action first, then connected until the next prompt', () => {
  let s = withSession(provider);
  s = reduce(s, { type: 'connectionTest', testing: true, result: null });
  assert.equal(setupCardView(s)?.kind, 'testing');
  s = reduce(s, { type: 'connectionTest', testing: false, result: { ok: false, code: 'provider_auth', message: 'HTTP 401: bad key' } });
  let card = setupCardView(s);
  assert.equal(card?.kind, 'problem');
  assert.equal(card?.lines[1], 'The server said: HTTP 401: bad key');
  assert.deepEqual(card?.actions[0], { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Set API Key' });
  assert.equal(labels(card?.actions ?? []).filter((l) => l === 'Set API Key').length, 1, 'the fix is not offered twice');
  s = reduce(s, { type: 'connectionTest', testing: false, result: { ok: true, code: null, message: 'gpt-4o-mini answered' } });
  card = setupCardView(s);
  assert.equal(card?.kind, 'connected');
  assert.equal(card?.lines[0], 'gpt-4o-mini answered');
  assert.deepEqual(labels(card?.actions ?? []), ['Change Model', 'Change Key', 'Test Again']);
  assert.deepEqual(card?.actions[0], { action: 'command', command: CARD_COMMANDS.changeModel, label: 'Change Model' });
  s = reduce(s, { type: 'userPrompt', text: 'go' });
  assert.equal(setupCardView(s), null);
});

test('errors name what fixes them: the server\'s fix first, else the code', () => {
  assert.deepEqual(fixAction('provider_unreachable'), { action: 'openSetting', setting: 'planLsp.baseUrl', label: 'Check the Server URL' });
  assert.deepEqual(fixAction('provider_model'), { action: 'openSetting', setting: 'planLsp.model', label: 'Choose the Model' });
  assert.deepEqual(fixAction('provider_no_tools'), { action: 'openSetting', setting: 'planLsp.model', label: 'Choose the Model' });
  assert.deepEqual(fixAction('provider_auth'), { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Set API Key' });
  assert.deepEqual(fixAction('provider_unconfigured'), { action: 'command', command: CARD_COMMANDS.setupModel, label: 'Set Up Model' });
  assert.equal(fixAction('provider_rate_limited'), null);
  assert.equal(fixAction(null), null);
  assert.deepEqual(fixAction('provider_failed', { setting: 'provider' }), { action: 'openSetting', setting: 'planLsp.provider', label: 'Choose the Model Service' });
  assert.deepEqual(fixAction('provider_unreachable', { command: 'planLsp.client.setApiKey' }), { action: 'command', command: 'planLsp.client.setApiKey', label: 'Set API Key' });
  assert.deepEqual(fixAction(null, { setting: 'apiKey' }), { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Set API Key' });
});

test('presets: Ollama needs a model and no key; OpenAI and Anthropic need a key; local servers ask for the URL', () => {
  const ollama = presetById('ollama');
  assert.equal(ollama?.baseUrl, 'http://localhost:11434/v1');
  assert.equal(ollama?.modelRequired, true);
  assert.equal(ollama?.needsKey, false);
  assert.deepEqual(PRESETS.filter((p) => p.needsKey).map((p) => p.id), ['openai', 'anthropic']);
  assert.deepEqual(PRESETS.filter((p) => p.askBaseUrl).map((p) => p.id), ['ollama', 'vllm', 'lmstudio']);
  assert.deepEqual(presetSettings(presetById('vllm')!, ' http://gpu:8000/v1 ', ' qwen '), { provider: 'openai', baseUrl: 'http://gpu:8000/v1', model: 'qwen' });
  assert.deepEqual(presetSettings(presetById('anthropic')!, 'http://ignored', ''), { provider: 'anthropic', baseUrl: '', model: '' });
  assert.equal(baseUrlProblem('http://localhost:8000/v1'), null);
  assert.match(baseUrlProblem('localhost:8000') ?? '', /http/);
  assert.match(baseUrlProblem('') ?? '', /base URL/);
  assert.match(baseUrlProblem('ftp://x') ?? '', /http/);
});

test('warnings: ignored workspace settings (client and server) and failed MCP servers', () => {
  let s = reduce(initialChatState(), { type: 'clientWarnings', warnings: ['Plan LSP ignored planLsp.python'] });
  s = reduce(s, {
    type: 'state',
    state: {
      sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none', outcome: 'never_planned', todos: [], running: false,
      configWarnings: ['.plan-lsp/config.toml: plan_shell is ignored'],
      mcpServers: [
        { name: 'git', status: 'ready', error: null, tools: ['git_log'] },
        { name: 'db', status: 'failed', error: 'exited with code 1', tools: [] },
      ],
    },
  });
  assert.deepEqual(sidebarWarnings(s), [
    'Plan LSP ignored planLsp.python',
    '.plan-lsp/config.toml: plan_shell is ignored',
    'MCP server db failed: exited with code 1; its tools are unavailable.',
  ]);
});

test('a failed connection is told apart: no key, a refused key, a server that is down, a wrong URL, a missing model', () => {
  const local: ProviderStatus = { name: 'openai', model: 'qwen', baseUrl: 'http://localhost:8000/v1', configured: true, problem: null };
  const failed = (code: string | null, message: string, keySet: boolean | null) =>
    setupCardView(reduce(reduce(withSession(local), { type: 'setupChoice', setup: { chosen: true, keySet: keySet ?? false } }),
      { type: 'connectionTest', testing: false, result: { ok: false, code, message } }));
  const noKey = failed('provider_auth', 'the model server at http://localhost:8000/v1/ rejected the credentials (HTTP 401): no key', false);
  assert.equal(noKey?.title, 'This model server needs an API key');
  assert.match(noKey?.lines[0] ?? '', /No API key is set/);
  assert.equal(noKey?.actions[0].label, 'Set API Key');
  const wrongKey = failed('provider_auth', 'rejected the credentials (HTTP 403): forbidden', true);
  assert.equal(wrongKey?.title, 'The model server refused the API key');
  assert.equal(wrongKey?.actions[0].label, 'Set API Key');
  const down = failed('provider_unreachable', 'cannot reach http://localhost:8000/v1/: Connection refused', true);
  assert.equal(down?.title, 'The model server does not answer');
  assert.match(down?.lines[0] ?? '', /Nothing answers at http:\/\/localhost:8000\/v1\. Start the server .* or check the server URL\./);
  assert.equal(down?.actions[0].label, 'Check the Server URL');
  const wrongUrl = failed('provider_not_found', 'the model server at http://localhost:8000/ has no such API (HTTP 404): Not Found', true);
  assert.equal(wrongUrl?.title, 'Wrong server URL');
  assert.match(wrongUrl?.lines[0] ?? '', /usually ends in \/v1/);
  assert.equal(wrongUrl?.actions[0].label, 'Check the Server URL');
  const model = failed('provider_model', "does not serve the model 'qwen'; it offers: llama", true);
  assert.equal(model?.title, 'The model server does not have this model');
  assert.equal(model?.actions[0].label, 'Choose the Model');
  assert.equal(model?.lines.at(-1), 'Using the model server at http://localhost:8000/v1, model qwen.');
  for (const card of [noKey, wrongKey, down, wrongUrl, model]) {
    for (const text of [card?.title ?? '', ...(card?.lines.slice(0, 1) ?? []), ...labels(card?.actions ?? [])]) {
      assert.doesNotMatch(text, /planLsp\./, text);
    }
  }
});

test('what is set up, in words', () => {
  assert.equal(describeProvider({ ...provider, baseUrl: '' }), 'Using OpenAI, model gpt-4o-mini.');
  assert.equal(describeProvider({ name: 'anthropic', model: 'claude-x', baseUrl: '', configured: true, problem: null }), 'Using Anthropic, model claude-x.');
  assert.equal(describeProvider({ name: 'openai', model: '', baseUrl: 'http://h:1/v1', configured: false, problem: null }), 'Using the model server at http://h:1/v1, no model chosen yet.');
});

test('the install card says which install runs and how long it takes', () => {
  const card = (step: 'install' | 'download') =>
    setupCardView(reduce(initialChatState(), { type: 'startup', step, detail: null, progress: 0.2 }))?.lines[0] ?? '';
  assert.match(card('install'), /installing plan-lsp .*from the wheels this extension carries, no download \(usually under 10 s\)/);
  assert.match(card('download'), /installing plan-lsp .*downloads the ones it lacks from the package index \(usually under 30 s, longer on a slow network\)/);
  for (const step of ['install', 'download'] as const) assert.doesNotMatch(card(step), /about 20 s/);
});
