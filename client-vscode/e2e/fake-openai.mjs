// A loopback OpenAI-compatible model server for the end-to-end test (the same wire format as
// tests/fake_model_servers.py): POST /v1/chat/completions answers in chat-completions SSE
// (or plain JSON when `stream` is false), GET /v1/models lists one model. It needs
// `Authorization: Bearer <key>` (401 otherwise, like a real service).
//
// Agent requests (those offering tools) take the next scripted turn; any other request (a
// connection test) gets a one-word answer and takes nothing. Tool-call ids are numbered from
// zero in every response, as several real providers do. Every request is recorded.
import { createServer } from 'node:http';

function sse(res, chunks) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  res.end('data: [DONE]\n\n');
}

function pieces(text, size) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The chat-completions chunks of one turn `{text?, tool_calls?: [{name, arguments}]}`. */
export function turnChunks(turn, model, size = 24) {
  const chunk = (delta, finish = null) => ({
    id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(turn.text ?? '', size)) chunks.push(chunk({ content: piece }));
  (turn.tool_calls ?? []).forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(JSON.stringify(call.arguments ?? {}), size)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, turn.tool_calls?.length ? 'tool_calls' : 'stop'));
  chunks.push({ id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model, choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });
  return chunks;
}

export class FakeOpenAI {
  constructor({ key, model, turns }) {
    this.key = key;
    this.model = model;
    this.turns = [...turns];
    this.requests = [];
    this.server = createServer((req, res) => this.handle(req, res));
  }

  listen() {
    return new Promise((resolve) => {
      this.server.listen(0, '127.0.0.1', () => {
        this.baseUrl = `http://127.0.0.1:${this.server.address().port}/v1`;
        resolve(this.baseUrl);
      });
    });
  }

  close() {
    this.server.closeAllConnections?.();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Agent requests recorded so far (those that offered tools). */
  get agentRequests() {
    return this.requests.filter((r) => r.agent);
  }

  handle(req, res) {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      let json = null;
      try {
        json = body ? JSON.parse(body) : null;
      } catch {
        /* recorded as null */
      }
      const authorized = req.headers.authorization === `Bearer ${this.key}`;
      const agent = Array.isArray(json?.tools) && json.tools.length > 0;
      this.requests.push({ method: req.method, path: req.url, authorized, agent, body: json });
      if (!authorized) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } }));
        return;
      }
      if (req.method === 'GET' && req.url.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: this.model, object: 'model', owned_by: 'e2e' }] }));
        return;
      }
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      if (json?.model !== this.model) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `The model '${json?.model}' does not exist`, type: 'invalid_request_error', code: 'model_not_found' } }));
        return;
      }
      const turn = agent ? this.turns.shift() ?? { text: '(end of script)' } : { text: 'ok' };
      if (json?.stream) {
        sse(res, turnChunks(turn, this.model));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-e2e', object: 'chat.completion', created: 0, model: this.model,
        choices: [{ index: 0, message: { role: 'assistant', content: turn.text ?? '' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }));
    });
  }
}
