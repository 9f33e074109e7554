/**
 * The checkpoints of a Do run in the chat: one card per run, updated in place as the run
 * records them (`checkpoint` updates), with what each step and each tool call changed (the
 * host reads `planLsp/checkpoints` for the files) and, per step, *Revert to here*; after a
 * revert the card says what it restored, kept or could not restore, and offers *Redo*.
 * No DOM and no `vscode` here: tested in plain Node.
 */
import type { PlanLspUpdate, Wire } from '../wireTypes';
import { ChatItem, ChatState, append, replaceAt, str } from './chatTypes';
import { escapeHtml } from './markdown';

type CheckpointFile = Wire.CheckpointFile;
type RevertResult = Wire.RevertResult;

/** A checkpoint the run recorded: before a step starts, or before a side-effect call. */
export interface TimelineEntry {
  id: string;
  step: number | null;
  stepText: string | null;
  kind: 'step' | 'tool';
  /** The tool the call is to (null: a step's start). */
  tool: string | null;
  toolCallId: string | null;
  /** When (ISO 8601). */
  at: string;
}

/** The last revert or redo done to the run's checkpoints. */
export interface TimelineOutcome {
  action: 'reverted' | 'redone';
  result: RevertResult | null;
  message: string;
}

export interface TimelineItem {
  type: 'checkpoints';
  id: number;
  runId: string | null;
  entries: TimelineEntry[];
  /** What each tool call changed, by the id of the checkpoint before it (from
   * `planLsp/checkpoints`: the `after` checkpoint that follows it). */
  files: Record<string, CheckpointFile[]>;
  /** The steps a revert undid (a redo brings them back). */
  reverted: number[];
  canRedo: boolean;
  last: TimelineOutcome | null;
  /** Changes the user refused, undone at once. */
  denied: string[];
}

/** The event the host dispatches with `planLsp/checkpoints`' answer. */
export interface CheckpointListEvent {
  type: 'checkpointList';
  result: Wire.CheckpointsResult;
}

function isCard(item: ChatItem): item is TimelineItem {
  return item.type === 'checkpoints';
}

function entryOf(info: unknown): TimelineEntry | null {
  if (!info || typeof info !== 'object') return null;
  const c = info as Record<string, unknown>;
  const id = str(c.id);
  if (id === null || (c.kind !== 'step' && c.kind !== 'tool')) return null;
  const label = str(c.label) ?? '';
  return {
    id,
    step: typeof c.step === 'number' ? c.step : null,
    stepText: str(c.stepText),
    kind: c.kind,
    tool: c.kind === 'tool' ? label.replace(/^before /, '') || 'tool' : null,
    toolCallId: str(c.toolCallId),
    at: str(c.at) ?? '',
  };
}

function resultOf(value: unknown): RevertResult | null {
  if (!value || typeof value !== 'object') return null;
  const r = value as Record<string, unknown>;
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
  const whys = (v: unknown): Wire.PathWhy[] =>
    Array.isArray(v) ? v.filter((k) => k && typeof k.path === 'string').map((k) => ({ path: k.path, why: String(k.why ?? '') })) : [];
  return {
    checkpointId: str(r.checkpointId) ?? '',
    restored: strings(r.restored),
    merged: strings(r.merged),
    kept: whys(r.kept),
    notRestorable: whys(r.notRestorable),
    stepsReverted: Array.isArray(r.stepsReverted) ? r.stepsReverted.filter((n): n is number => typeof n === 'number') : [],
  };
}

/** The newest card for which `match` holds (-1: none). */
function findCard(state: ChatState, match: (card: TimelineItem) => boolean): number {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (isCard(item) && match(item)) return i;
  }
  return -1;
}

function newCard(runId: string | null): Omit<TimelineItem, 'id'> {
  return { type: 'checkpoints', runId, entries: [], files: {}, reverted: [], canRedo: false, last: null, denied: [] };
}

/** A `checkpoint` update: a checkpoint recorded lands on its run's card (made at the run's
 * first); a revert on the card holding the checkpoint it went back to, a redo on the card of
 * the last revert (both come after the run, with no run id). */
export function applyCheckpointUpdate(state: ChatState, update: PlanLspUpdate): ChatState {
  const runId = str(update.runId);
  const action = str(update.action);
  const message = str(update.message) ?? '';
  if (action === 'recorded') {
    const entry = entryOf(update.checkpoint);
    if (entry === null) return state;
    const index = findCard(state, (c) => c.runId === runId);
    if (index < 0) return append(state, { ...newCard(runId), entries: [entry] });
    const card = state.items[index] as TimelineItem;
    if (card.entries.some((e) => e.id === entry.id)) return state;
    // A new checkpoint ends what can be redone.
    return replaceAt(state, index, { ...card, entries: [...card.entries, entry], canRedo: false });
  }
  if (action === 'denied') {
    const index = findCard(state, (c) => runId === null || c.runId === runId);
    if (index < 0) return append(state, { ...newCard(runId), denied: [message] });
    const card = state.items[index] as TimelineItem;
    return replaceAt(state, index, { ...card, denied: [...card.denied, message] });
  }
  if (action !== 'reverted' && action !== 'redone') return state;
  const result = resultOf(update.result);
  const target = result?.checkpointId ?? '';
  let index = action === 'reverted' ? findCard(state, (c) => c.entries.some((e) => e.id === target)) : -1;
  if (index < 0) index = findCard(state, (c) => c.last !== null);
  if (index < 0) index = findCard(state, () => true);
  if (index < 0) {
    state = append(state, newCard(runId));
    index = state.items.length - 1;
  }
  const card = state.items[index] as TimelineItem;
  const steps = result?.stepsReverted ?? [];
  const reverted = action === 'reverted'
    ? [...new Set([...card.reverted, ...steps])].sort((a, b) => a - b)
    : card.reverted.filter((n) => !steps.includes(n));
  // The host's next `planLsp/checkpoints` says whether more can be redone.
  return replaceAt(state, index, { ...card, reverted, canRedo: action === 'reverted', last: { action, result, message } });
}

/** `planLsp/checkpoints`' answer: what each call changed, and whether a redo is possible
 * (offered on the card of the last revert). */
export function applyCheckpointList(state: ChatState, list: Wire.CheckpointsResult): ChatState {
  // A call's files are those of the `after` checkpoint that follows the one before it, with
  // the same call id (providers that number calls from zero in each request reuse ids).
  const after = new Map<string, CheckpointFile[]>();
  const open = new Map<string, string>();
  for (const cp of Array.isArray(list?.checkpoints) ? list.checkpoints : []) {
    if (!cp || typeof cp.toolCallId !== 'string') continue;
    if (cp.kind === 'tool') open.set(cp.toolCallId, cp.id);
    const before = cp.kind === 'after' ? open.get(cp.toolCallId) : undefined;
    if (before === undefined) continue;
    after.set(before, Array.isArray(cp.files) ? cp.files : []);
    open.delete(cp.toolCallId);
  }
  const redoOn = list?.canRedo === true ? findCard(state, (c) => c.last !== null) : -1;
  const items = state.items.map((item, index) => {
    if (!isCard(item)) return item;
    const files: Record<string, CheckpointFile[]> = { ...item.files };
    for (const e of item.entries) {
      const changed = after.get(e.id);
      if (changed) files[e.id] = changed;
    }
    return { ...item, files, canRedo: index === redoOn };
  });
  return { ...state, items };
}

// -- what the card shows ---------------------------------------------------------------------------

export interface TimelineCall {
  entry: TimelineEntry;
  files: CheckpointFile[] | null;
}

/** A step of the card: its checkpoint (null: calls before any step) and its calls. */
export interface TimelineStep {
  step: number | null;
  text: string | null;
  checkpoint: TimelineEntry | null;
  calls: TimelineCall[];
  /** What the step's calls changed, by path (the plan's checklist marks left out). */
  files: CheckpointFile[];
  reverted: boolean;
}

/** Files of several calls, one line per path with the lines added and removed summed. */
function merged(lists: CheckpointFile[][], skip: (path: string) => boolean): CheckpointFile[] {
  const byPath = new Map<string, CheckpointFile>();
  for (const file of lists.flat()) {
    if (skip(file.path)) continue;
    const seen = byPath.get(file.path);
    byPath.set(file.path, seen ? { ...seen, added: seen.added + file.added, removed: seen.removed + file.removed } : { ...file });
  }
  return [...byPath.values()];
}

/** The card's steps in the order the run went through them. `planPath`: the approved plan's
 * file, whose checklist marks are not a step's changes. */
export function timelineSteps(card: TimelineItem, planPath: string | null = null): TimelineStep[] {
  const isPlan = (path: string): boolean => planPath !== null && (planPath === path || planPath.endsWith(`/${path}`));
  const steps: TimelineStep[] = [];
  for (const entry of card.entries) {
    if (entry.kind === 'step') {
      steps.push({ step: entry.step, text: entry.stepText, checkpoint: entry, calls: [], files: [], reverted: false });
      continue;
    }
    let last = steps[steps.length - 1];
    if (!last || last.step !== entry.step) {
      last = { step: entry.step, text: entry.stepText, checkpoint: null, calls: [], files: [], reverted: false };
      steps.push(last);
    }
    last.calls.push({ entry, files: card.files[entry.id] ?? null });
  }
  for (const s of steps) {
    s.files = merged(s.calls.map((c) => c.files ?? []), isPlan);
    s.reverted = s.step !== null && card.reverted.includes(s.step);
  }
  return steps;
}

/** `HH:MM:SS` of an ISO time, in the local zone ('' when it is not one). */
export function clock(at: string): string {
  const date = new Date(at);
  if (!at || Number.isNaN(date.getTime())) return '';
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** `hello.py +1 −1` (with "new" or "deleted" when the file came or went). */
export function fileText(file: CheckpointFile): string {
  const status = file.status === 'added' ? ' new' : file.status === 'deleted' ? ' deleted' : '';
  return `${file.path}${status} +${file.added} −${file.removed}`;
}

function stepName(card: TimelineItem, checkpointId: string): string {
  const entry = card.entries.find((e) => e.id === checkpointId);
  if (entry?.kind === 'step' && entry.step !== null) return `before step ${entry.step}`;
  if (entry?.kind === 'tool') return `before ${entry.tool ?? 'a tool call'}${entry.step !== null ? ` (step ${entry.step})` : ''}`;
  return `checkpoint ${checkpointId}`;
}

function numbers(steps: number[]): string {
  if (steps.length <= 1) return `step ${steps.join('')}`;
  return `steps ${steps.slice(0, -1).join(', ')} and ${steps[steps.length - 1]}`;
}

/** What the last revert or redo did, in lines: a heading, then restored, merged, kept and
 * not restored paths with why. */
export function outcomeLines(card: TimelineItem): string[] {
  const last = card.last;
  if (!last) return [];
  const result = last.result;
  if (!result) return [last.message];
  const steps = result.stepsReverted;
  const head = last.action === 'reverted'
    ? `Reverted to ${stepName(card, result.checkpointId)}${steps.length ? `: ${numbers(steps)} undone` : ''}.`
    : `Redone: the last revert is undone${steps.length ? `, ${numbers(steps)} back` : ''}.`;
  const lines = [head];
  lines.push(result.restored.length ? `Restored: ${result.restored.join(', ')}.` : 'No file needed restoring.');
  if (result.merged.length) lines.push(`Merged with your changes: ${result.merged.join(', ')}.`);
  for (const k of result.kept) lines.push(`Kept as you have it: ${k.path} (${k.why}).`);
  for (const k of result.notRestorable) lines.push(`Could not restore: ${k.path} (${k.why}).`);
  return lines;
}

export interface TimelineView {
  /** A run is going: the server refuses reverts until it ends. */
  busy: boolean;
  planPath: string | null;
}

function filesHtml(files: CheckpointFile[] | null): string {
  if (files === null) return '';
  if (files.length === 0) return '<span class="cp-files cp-none">no file changes</span>';
  return `<span class="cp-files">${files.map((f) => `<span class="cp-file" data-testid="checkpoint-file" data-path="${escapeHtml(f.path)}">${escapeHtml(fileText(f))}</span>`).join(', ')}</span>`;
}

/** The card. Its buttons are `<button>`s (Tab reaches them, Enter and Space press them). */
export function timelineHtml(card: TimelineItem, view: TimelineView): string {
  const steps = timelineSteps(card, view.planPath);
  const off = view.busy ? ' disabled title="Wait for the run to end (or Stop it)"' : '';
  const rows = steps.map((s) => {
    const name = s.step !== null ? `Step ${s.step}` : 'Before the first step';
    const time = s.checkpoint ? `<span class="cp-time">${escapeHtml(clock(s.checkpoint.at))}</span>` : '';
    const badge = s.reverted ? '<span class="badge" data-testid="checkpoint-reverted">reverted</span>' : '';
    const button = s.checkpoint && s.step !== null
      ? `<button class="secondary cp-revert" data-action="revertTo" data-testid="checkpoint-revert" data-checkpoint="${escapeHtml(s.checkpoint.id)}" data-index="${s.step}"${off || ` title="Bring the workspace back to before step ${s.step}: this step and the later ones are undone"`} aria-label="Revert to before step ${s.step}">Revert to here</button>`
      : '';
    const calls = s.calls
      .map((c) => `<li data-testid="checkpoint-call" data-tool="${escapeHtml(c.entry.tool ?? '')}"><span class="cp-tool">${escapeHtml(c.entry.tool ?? 'tool')}</span> <span class="cp-time">${escapeHtml(clock(c.entry.at))}</span> ${filesHtml(c.files)}</li>`)
      .join('');
    const text = s.text ? ` <span class="cp-text">${escapeHtml(s.text)}</span>` : '';
    return `<li class="cp-step${s.reverted ? ' cp-reverted' : ''}" data-testid="checkpoint-step" data-step="${s.step ?? ''}">
      <div class="cp-row"><span class="cp-name">${name}</span>${text} ${time} ${badge}<span class="spacer"></span>${button}</div>
      <div class="cp-summary">${filesHtml(s.files.length || s.calls.some((c) => c.files !== null) ? s.files : null)}</div>
      ${calls ? `<ul class="cp-calls">${calls}</ul>` : ''}</li>`;
  }).join('');
  const denied = card.denied.map((d) => `<div class="cp-denied" data-testid="checkpoint-denied">Undone at once: ${escapeHtml(d)}</div>`).join('');
  const outcome = outcomeLines(card);
  const redo = card.canRedo
    ? `<button class="secondary" data-action="redo" data-testid="checkpoint-redo"${off || ' title="Undo the last revert"'}>Redo</button>`
    : '';
  const result = outcome.length || redo
    ? `<div class="cp-outcome" data-testid="checkpoint-outcome" data-action-done="${card.last?.action ?? ''}">${outcome.map((l) => `<div>${escapeHtml(l)}</div>`).join('')}${redo ? `<div class="buttons">${redo}</div>` : ''}</div>`
    : '';
  const count = card.entries.length;
  return `<div class="checkpoints" data-testid="checkpoint-card" data-run="${escapeHtml(card.runId ?? '')}">
    <div class="cp-title">Checkpoints <span class="cp-count">${count} recorded</span></div>
    <ul class="cp-steps">${rows}</ul>${denied}${result}</div>`;
}
