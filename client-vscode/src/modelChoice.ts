/**
 * The order of the model set-up, as a user expects it: the key first when the server wants
 * one (a service that always does, or a server whose model list answered 401/403, which the
 * key box then says), then the model from the server's list, typed only when there is no
 * list (the box says why). The UI is passed in: tested in Node (setup.ts gives VS Code's).
 */
import { ModelListAnswer, ModelListRequest, wantsKey } from './modelList';
import type { Preset } from './presets';

export interface ModelChoiceUi {
  listModels(req: ModelListRequest): Promise<ModelListAnswer>;
  /** Asks for the API key, saying `why`; stores it and gives it (undefined: cancelled). */
  askKey(why: string): Promise<string | undefined>;
  /** Offers `models`; a model, null for "another model…" (typed), undefined: cancelled. */
  pickModel(models: string[], current: string): Promise<string | null | undefined>;
  /** Asks for the model's name, `current` filled in; `why` says why there is no list (null:
   * the user asked to type it). Undefined: cancelled. */
  typeModel(why: string | null, current: string): Promise<string | undefined>;
}

export interface ModelChoice {
  model: string;
  /** The key now stored (undefined: none). */
  apiKey: string | undefined;
}

/** Where the server is, in words, for the boxes. */
export function serverName(preset: Preset, baseUrl: string): string {
  return preset.askBaseUrl || baseUrl ? `The server at ${baseUrl}` : preset.label;
}

/** Why the model is typed: what the list request got, in words. */
export function noListReason(preset: Preset, baseUrl: string, answer: ModelListAnswer, keyGiven: boolean): string {
  const who = serverName(preset, baseUrl);
  if (wantsKey(answer)) {
    return keyGiven
      ? `${who} refused the API key (HTTP ${answer.status}), so it gave no model list: type the model's name; set the right key afterwards (Set API Key).`
      : `${who} wants an API key (HTTP ${answer.status}) and none was given: type the model's name; set the key afterwards (Set API Key).`;
  }
  if (answer.status === null) return `${who} did not answer the request for its models: type the model's name.`;
  if (answer.models === null) return `${who} gave no model list (HTTP ${answer.status}): type the model's name.`;
  return `${who} lists no models: type the model's name.`;
}

/** The set-up's key and model, in that order. `apiKey`: the key stored now. Undefined when
 * the user cancelled. */
export async function chooseModel(
  ui: ModelChoiceUi,
  preset: Preset,
  baseUrl: string,
  apiKey: string | undefined,
  current: string,
): Promise<ModelChoice | undefined> {
  let key = apiKey;
  const asked = preset.needsKey && !key;
  if (asked) {
    key = await ui.askKey(`${preset.label} needs an API key: it is asked first, so that the model can be picked from the list ${preset.label} gives with it.`);
    if (key === undefined) return undefined;
  }
  const request = (): ModelListRequest => ({ provider: preset.provider, baseUrl, apiKey: key || undefined });
  let answer = await ui.listModels(request());
  if (wantsKey(answer) && !asked) {
    // Asked once here: a server that refuses the key again gets the model typed (and the
    // connection test says the key was refused).
    const who = serverName(preset, baseUrl);
    const why = key
      ? `${who} refused the stored API key when asked for its models (HTTP ${answer.status}): enter the right key, then pick the model.`
      : `${who} answered HTTP ${answer.status} when asked for its models: it needs an API key. Enter it, then pick the model.`;
    // Escape here: no key; the model is typed, and the box says why there is no list.
    const given = await ui.askKey(why);
    if (given !== undefined) {
      key = given;
      answer = await ui.listModels(request());
    }
  }
  const models = answer.models ?? [];
  if (models.length) {
    const picked = await ui.pickModel(models, current);
    if (picked === undefined) return undefined;
    if (picked !== null) return { model: picked, apiKey: key };
  }
  const typed = await ui.typeModel(models.length ? null : noListReason(preset, baseUrl, answer, Boolean(key)), current);
  return typed === undefined ? undefined : { model: typed, apiKey: key };
}
