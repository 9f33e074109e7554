import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchModelList, modelIds, modelListRequest, wantsKey } from '../modelList';

/** A loopback server the test starts; `handle` answers each request. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ base: string; seen: IncomingMessage[]; server: Server }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const close = (server: Server): Promise<void> => new Promise((resolve) => {
  server.closeAllConnections();
  server.close(() => resolve());
});

test('an OpenAI-compatible server lists its models (GET <baseUrl>/models, the key as a bearer token)', async () => {
  const { base, seen, server } = await serve((req, res) => {
    if (req.headers.authorization !== 'Bearer sk-1') {
      res.writeHead(401).end('{"error":{"message":"no key"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ id: 'qwen' }, { id: 'llama' }, { id: 'qwen' }, { x: 1 }] }));
  });
  try {
    assert.deepEqual(await fetchModelList({ provider: 'openai', baseUrl: `${base}/v1/`, apiKey: 'sk-1' }), { models: ['llama', 'qwen'], status: 200 });
    assert.equal(seen[0].url, '/v1/models');
    // Without the key the server refuses: no list, and the status says a key is wanted.
    const refused = await fetchModelList({ provider: 'openai', baseUrl: `${base}/v1` });
    assert.deepEqual(refused, { models: null, status: 401 });
    assert.equal(wantsKey(refused), true);
  } finally {
    await close(server);
  }
});

test('Anthropic lists at /v1/models with x-api-key and a version', async () => {
  const { base, seen, server } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ id: 'claude-b' }, { id: 'claude-a' }] }));
  });
  try {
    assert.deepEqual((await fetchModelList({ provider: 'anthropic', baseUrl: base, apiKey: 'ak' })).models, ['claude-a', 'claude-b']);
    assert.equal(seen[0].url, '/v1/models?limit=1000');
    assert.equal(seen[0].headers['x-api-key'], 'ak');
    assert.ok(seen[0].headers['anthropic-version']);
  } finally {
    await close(server);
  }
  assert.equal(modelListRequest({ provider: 'anthropic', baseUrl: '' }).url, 'https://api.anthropic.com/v1/models?limit=1000');
  assert.equal(modelListRequest({ provider: 'openai', baseUrl: '' }).url, 'https://api.openai.com/v1/models');
  assert.deepEqual(modelListRequest({ provider: 'openai', baseUrl: 'http://h/v1' }).headers, {});
});

test('a server that is down, answers something else or never answers gives no list (never a hang)', async () => {
  const { base, server } = await serve((req, res) => {
    if (req.url === '/v1/models') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not an API</html>');
    // /hang/...: never answered
  });
  try {
    assert.deepEqual(await fetchModelList({ provider: 'openai', baseUrl: `${base}/v1` }), { models: null, status: 200 });
    assert.deepEqual(await fetchModelList({ provider: 'openai', baseUrl: `${base}/hang` }, 200), { models: null, status: null });
  } finally {
    await close(server);
  }
  // Nothing listens there any more: connection refused.
  const down = await fetchModelList({ provider: 'openai', baseUrl: `${base}/v1` });
  assert.deepEqual(down, { models: null, status: null });
  assert.equal(wantsKey(down), false);
  assert.equal(modelIds({ data: 'x' }), null);
  assert.equal(modelIds(null), null);
});
