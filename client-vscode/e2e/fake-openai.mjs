// A loopback OpenAI-compatible model server for the end-to-end test (the same wire format as
// tests/fake_model_servers.py): POST /v1/chat/completions answers in chat-completions SSE
// (or plain JSON when `stream` is false), GET /v1/models lists one model. It needs
// `Authorization: Bearer <key>` (401 otherwise, like a real service).
//
// Agent requests (streamed, offering tools) take the next scripted turn; any other request (a
// connection test) takes nothing: a non-streamed one offering tools (the test that the model
// calls tools) gets a call of the first tool offered, else a one-word answer. Tool-call ids are numbered from
// zero in every response, as several real providers do. Every request is recorded.
//
// A turn with a `pace` (the scripted provider's: chars_per_second, chunk, jitter,
// pause_every_chars, pause_ms, seed) streams like a real model: deltas of a random size, at
// about that speed, with pauses; `timeline` (a file) then receives one JSON line per delta,
// {t, turn, call, kind, sent}, as the scripted provider writes it, and `scriptFor()` gives the
// script those lines refer to (tests/e2e/model_speed.py reads both).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A seeded generator of floats in [0, 1) (mulberry32 over the string's FNV-1a hash). */
export function seeded(key) {
  let h = 0x811c9dc5;
  for (const ch of String(key)) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  return () => {
    h = (h + 0x6d2b79f5) >>> 0;
    let x = h;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** `[seconds to wait before it, delta]` for each delta of `text` at `pace` (as the scripted
 * provider's Pace.pieces). */
export function pacedPieces(text, pace, random) {
  const range = ([a, b]) => (a <= b ? [a, b] : [b, a]);
  const int = ([a, b]) => Math.max(1, a) + Math.floor(random() * (Math.max(1, b) - Math.max(1, a) + 1));
  const uniform = ([a, b]) => a + random() * (b - a);
  const chunk = range(pace.chunk ?? [1, 40]);
  const every = range(pace.pause_every_chars ?? [300, 700]);
  const pauseMs = range(pace.pause_ms ?? [400, 1200]);
  const jitter = pace.jitter ?? 0.5;
  const out = [];
  let untilPause = int(every);
  for (let start = 0; start < text.length;) {
    const piece = text.slice(start, start + int(chunk));
    start += piece.length;
    let wait = (piece.length / (pace.chars_per_second ?? 1000)) * (1 + uniform([-jitter, jitter]));
    untilPause -= piece.length;
    if (untilPause <= 0) {
      wait += uniform(pauseMs) / 1000;
      untilPause = int(every);
    }
    out.push([Math.max(0, wait), piece]);
  }
  return out;
}

function argumentText(call) {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
}

function chunkOf(model, delta, finish = null) {
  return {
    id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

function sse(res, chunks) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** Streams turn number `number` at its pace, recording each delta in `timeline`. */
async function pacedSse(res, turn, number, model, timeline) {
  const random = seeded(`${turn.pace.seed ?? 1}:${number}`);
  const record = (call, kind, sent) => {
    if (timeline) appendFileSync(timeline, `${JSON.stringify({ t: Date.now() / 1000, turn: number, call, kind, sent })}\n`);
  };
  const send = (chunk) => !res.destroyed && res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  send(chunkOf(model, { role: 'assistant', content: '' }));
  let sent = 0;
  for (const [wait, piece] of pacedPieces(turn.text ?? '', turn.pace, random)) {
    if (wait) await sleep(wait * 1000);
    sent += piece.length;
    record(null, 'text', sent);
    send(chunkOf(model, { content: piece }));
  }
  for (const [index, call] of (turn.tool_calls ?? []).entries()) {
    send(chunkOf(model, { tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
    sent = 0;
    for (const [wait, piece] of pacedPieces(argumentText(call), turn.pace, random)) {
      if (wait) await sleep(wait * 1000);
      if (res.destroyed) return;
      sent += piece.length;
      record(index, 'args', sent);
      send(chunkOf(model, { tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  send(chunkOf(model, {}, turn.tool_calls?.length ? 'tool_calls' : 'stop'));
  send({ id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model, choices: [], usage: usageOf(turn) });
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

/** The usage a streamed answer reports: the request's size as a model would count it (about
 * four characters a token), so the server's context fill is what a real model would give. */
function usageOf(turn) {
  const prompt = turn.promptTokens ?? 11;
  return { prompt_tokens: prompt, completion_tokens: 7, total_tokens: prompt + 7 };
}

function pieces(text, size) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The chat-completions chunks of one turn `{text?, tool_calls?: [{name, arguments}]}`. */
export function turnChunks(turn, model, size = 24) {
  const chunk = (delta, finish = null) => chunkOf(model, delta, finish);
  const chunks = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(turn.text ?? '', size)) chunks.push(chunk({ content: piece }));
  (turn.tool_calls ?? []).forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(argumentText(call), size)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, turn.tool_calls?.length ? 'tool_calls' : 'stop'));
  chunks.push({ id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model, choices: [], usage: usageOf(turn) });
  return chunks;
}

export class FakeOpenAI {
  constructor({ key, model, turns, timeline }) {
    this.key = key;
    this.model = model;
    this.script = turns;
    this.turns = [...turns];
    this.taken = 0;
    this.timeline = timeline;
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

  /** The turns as a scripted provider's script (arguments as the exact text sent): what
   * the timeline's `turn` and `call` numbers refer to. */
  scriptFor() {
    const turns = this.script.map((turn) => ({
      ...(turn.text !== undefined ? { text: turn.text } : {}),
      tool_calls: (turn.tool_calls ?? []).map((call) => ({ name: call.name, arguments: argumentText(call) })),
      ...(turn.pace ? { pace: turn.pace } : {}),
    }));
    return { chunk: 24, timeline: this.timeline ?? null, turns };
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
      const tools = Array.isArray(json?.tools) ? json.tools : [];
      const agent = tools.length > 0 && json?.stream === true;
      // keyGiven: a key was sent (a wrong one when not authorized); the key itself is not kept.
      const keyGiven = /^Bearer \S/.test(req.headers.authorization ?? '');
      this.requests.push({ method: req.method, path: req.url, authorized, keyGiven, agent, body: json });
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
      const next = agent ? this.turns.shift() ?? { text: '(end of script)' } : { text: 'ok' };
      const turn = { ...next, promptTokens: Math.ceil(body.length / 4) };
      const number = agent ? ++this.taken : 0;
      if (json?.stream && turn.pace) {
        // Turns added while the test runs stream at their pace too, outside the timeline
        // (which refers to the script's turns).
        const timeline = number <= this.script.length ? this.timeline : undefined;
        pacedSse(res, turn, number, this.model, timeline).catch(() => res.destroy());
        return;
      }
      if (json?.stream) {
        sse(res, turnChunks(turn, this.model));
        return;
      }
      const offered = tools[0]?.function?.name;
      const message = offered
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: offered, arguments: '{}' } }] }
        : { role: 'assistant', content: turn.text ?? '' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-e2e', object: 'chat.completion', created: 0, model: this.model,
        choices: [{ index: 0, message, finish_reason: offered ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }));
    });
  }
}
