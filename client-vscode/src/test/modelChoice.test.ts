import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ModelChoiceUi, chooseModel } from '../modelChoice';
import { fetchModelList } from '../modelList';
import { presetById, presetForSettings, type Preset } from '../presets';

const KEY = 'sk-right';

/** A loopback OpenAI-compatible server whose model list wants `Bearer sk-right` (401 else). */
async function keyedServer(): Promise<{ base: string; server: Server; asked: (string | undefined)[] }> {
  const asked: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    asked.push(req.headers.authorization);
    const ok = req.headers.authorization === `Bearer ${KEY}`;
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { data: [{ id: 'qwen' }, { id: 'llama' }] } : { error: { message: 'Incorrect API key provided.' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, asked };
}

const close = (server: Server): Promise<void> => new Promise((resolve) => {
  server.closeAllConnections();
  server.close(() => resolve());
});

/** The boxes the user is shown, in order, answered from `answers` (undefined: Escape). */
function scriptedUi(answers: { key?: string; pick?: string | null; typed?: string }): { ui: ModelChoiceUi; shown: string[] } {
  const shown: string[] = [];
  const ui: ModelChoiceUi = {
    listModels: async (req) => {
      const answer = await fetchModelList(req);
      shown.push(`list ${answer.status} ${answer.models?.join(',') ?? 'none'}`);
      return answer;
    },
    askKey: async (why) => {
      shown.push(`key: ${why}`);
      return answers.key;
    },
    pickModel: async (models, current) => {
      shown.push(`pick ${models.join(',')} (current ${current})`);
      return answers.pick;
    },
    typeModel: async (why, current) => {
      shown.push(`type (${why ?? 'asked'}) [${current}]`);
      return answers.typed;
    },
  };
  return { ui, shown };
}

const vllm = presetById('vllm') as Preset;

test('a keyed local server: the 401 on the model list asks for the key, saying why, then offers the list', async (t) => {
  const { base, server } = await keyedServer();
  t.after(() => close(server));
  const { ui, shown } = scriptedUi({ key: KEY, pick: 'qwen' });
  const choice = await chooseModel(ui, vllm, base, undefined, '');
  assert.deepEqual(choice, { model: 'qwen', apiKey: KEY });
  assert.equal(shown.length, 4, shown.join('\n'));
  assert.equal(shown[0], 'list 401 none');
  assert.match(shown[1], /^key: The server at http:\/\/127\.0\.0\.1:\d+\/v1 answered HTTP 401 when asked for its models: it needs an API key\./);
  assert.equal(shown[2], 'list 200 llama,qwen');
  assert.equal(shown[3], 'pick llama,qwen (current )');
});

test('a stored key the server refuses is asked again, saying it was refused', async (t) => {
  const { base, server, asked } = await keyedServer();
  t.after(() => close(server));
  const { ui, shown } = scriptedUi({ key: KEY, pick: 'llama' });
  assert.deepEqual(await chooseModel(ui, vllm, base, 'sk-wrong', 'qwen'), { model: 'llama', apiKey: KEY });
  assert.match(shown[1], /refused the stored API key when asked for its models \(HTTP 401\)/);
  assert.deepEqual(asked, ['Bearer sk-wrong', `Bearer ${KEY}`]);
});

test('Escape on the key box: the model is typed, and the box says the server wants a key', async (t) => {
  const { base, server } = await keyedServer();
  t.after(() => close(server));
  const { ui, shown } = scriptedUi({ typed: 'qwen' });
  assert.deepEqual(await chooseModel(ui, vllm, base, undefined, 'old'), { model: 'qwen', apiKey: undefined });
  assert.equal(shown.length, 3, shown.join('\n'));
  assert.match(shown[2], /^type \(The server at .* wants an API key \(HTTP 401\) and none was given: type the model's name; set the key afterwards \(Set API Key\)\.\) \[old\]$/);
});

test('a service that always needs a key asks for it before the list; Escape there cancels the set-up', async (t) => {
  const { base, server, asked } = await keyedServer();
  t.after(() => close(server));
  const openai = { ...(presetById('openai') as Preset), baseUrl: base };
  const first = scriptedUi({ key: KEY, pick: null, typed: 'my-model' });
  assert.deepEqual(await chooseModel(first.ui, openai, base, undefined, ''), { model: 'my-model', apiKey: KEY });
  assert.match(first.shown[0], /^key: OpenAI needs an API key: it is asked first/);
  assert.equal(first.shown[1], 'list 200 llama,qwen');
  assert.equal(first.shown[3], 'type (asked) []', 'Another model… types the name without a reason');
  const cancelled = scriptedUi({});
  assert.equal(await chooseModel(cancelled.ui, openai, base, undefined, ''), undefined);
  assert.equal(cancelled.shown.length, 1);
  assert.equal(asked.length, 1, 'no list is asked for once the key box is cancelled');
});

test('a server that does not answer: the model is typed, and the box says so', async () => {
  const { ui, shown } = scriptedUi({ typed: 'm' });
  // A port nothing listens on (the server just closed).
  const { base, server } = await keyedServer();
  await close(server);
  assert.deepEqual(await chooseModel(ui, vllm, base, undefined, ''), { model: 'm', apiKey: undefined });
  assert.match(shown.at(-1) ?? '', /did not answer the request for its models/);
});

test('Change Model finds the preset of the settings in use, or the server at their base URL', () => {
  assert.equal(presetForSettings({ provider: 'anthropic', baseUrl: '' }).id, 'anthropic');
  assert.equal(presetForSettings({ provider: 'openai', baseUrl: 'http://localhost:11434/v1' }).id, 'ollama');
  const custom = presetForSettings({ provider: 'openai', baseUrl: 'http://gpu:9000/v1' });
  assert.equal(custom.baseUrl, 'http://gpu:9000/v1');
  assert.equal(custom.label, 'The model server');
  assert.equal(custom.modelRequired, true);
});
