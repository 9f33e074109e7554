/**
 * The models a model server offers, for the setup's model pick: `GET <baseUrl>/models` for
 * OpenAI-compatible servers (with the key as a bearer token, if any), `GET /v1/models` for
 * Anthropic. Bounded in time and size; any failure is `null` and the user types the name.
 */

/** At most this long for the list (a local server answers at once; the setup must not hang). */
export const LIST_TIMEOUT_MS = 5000;
/** At most this many models are offered. */
export const MAX_MODELS = 200;

export interface ModelListRequest {
  provider: 'openai' | 'anthropic';
  /** Empty: the provider's own endpoint. */
  baseUrl: string;
  apiKey?: string;
}

/** The URL and headers of the list request. */
export function modelListRequest(req: ModelListRequest): { url: string; headers: Record<string, string> } {
  if (req.provider === 'anthropic') {
    const base = (req.baseUrl || 'https://api.anthropic.com').replace(/\/+$/, '').replace(/\/v1$/, '');
    const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
    if (req.apiKey) headers['x-api-key'] = req.apiKey;
    return { url: `${base}/v1/models?limit=1000`, headers };
  }
  const base = (req.baseUrl || 'https://api.openai.com/v1').replace(/\/+$/, '');
  return { url: `${base}/models`, headers: req.apiKey ? { authorization: `Bearer ${req.apiKey}` } : {} };
}

/** The model ids in a list answer (`{data: [{id}]}`, as both APIs send), sorted; null when
 * the answer is not such a list. */
export function modelIds(body: unknown): string[] | null {
  if (!body || typeof body !== 'object') return null;
  const data = (body as { data?: unknown }).data;
  if (!Array.isArray(data)) return null;
  const ids = data.flatMap((m) => (m && typeof m === 'object' && typeof (m as { id?: unknown }).id === 'string' ? [(m as { id: string }).id] : []));
  return [...new Set(ids)].sort().slice(0, MAX_MODELS);
}

/** The server's answer to the list request: the models (null: no list), and the HTTP status
 * when it answered (null: it did not: down, slow, refused the connection). */
export interface ModelListAnswer {
  models: string[] | null;
  status: number | null;
}

/** Whether the answer says the server wants a key (or another one): 401 or 403. */
export function wantsKey(answer: ModelListAnswer): boolean {
  return answer.status === 401 || answer.status === 403;
}

/** Asks the server for its models; `models` is null on any failure (down, refused, not a
 * list, slow), `status` says how it answered. */
export async function fetchModelList(req: ModelListRequest, timeoutMs = LIST_TIMEOUT_MS): Promise<ModelListAnswer> {
  const { url, headers } = modelListRequest(req);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let status: number | null = null;
  try {
    const response = await fetch(url, { headers, signal: abort.signal, redirect: 'error' });
    status = response.status;
    if (!response.ok) return { models: null, status };
    return { models: modelIds(await response.json()), status };
  } catch {
    return { models: null, status };
  } finally {
    clearTimeout(timer);
  }
}
