/**
 * The chat webview's script: renders `ChatState` and turns clicks and keys into messages
 * for the extension host. Bundled for the browser (scripts/bundle-webview.mjs). It keeps no
 * state of its own: a (re)created view starts from the host's snapshot, which after a window
 * reload is rebuilt from the server's history.
 */
import {
  ChatEvent, ChatState, canSend, failedPromptText, initialChatState, isBusy, newlyFailedPrompts, planPanel, reduce,
  todoProgress, visibleTodos,
} from './chatState';
import { escapeHtml } from './markdown';
import type { HostToWebview, WebviewToHost } from './messages';
import { setupCardView, sidebarWarnings } from './setupCard';
import { checklistHtml } from './toolCards';
import { ItemView, actionButton, renderItem } from './items';
import {
  MentionQuery, SelectionContext, insertMention, matchFiles, mentionAt, promptWithContext, selectionLabel,
} from './promptContext';
import { contextFill, isUsage, usageLine } from './usage';
import { FocusNow, FocusTarget, focusOnChange, focusOnOpen } from './focus';
import { PromptTyping, focusInChat, moveFocus } from './focusControls';
import { PERMISSION_MODES } from '../wireTypes';
import { permissionModeDetail, permissionModeLabel } from '../permissionText';
import { planFileName } from '../plansList';
import type { PermissionMode } from '../wireTypes';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
let state: ChatState = initialChatState();

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const messages = $<HTMLDivElement>('messages');
const input = $<HTMLTextAreaElement>('prompt');
const sendButton = $<HTMLButtonElement>('send');
const stopButton = $<HTMLButtonElement>('stop');
const planButton = $<HTMLButtonElement>('mode-plan');
const buildButton = $<HTMLButtonElement>('mode-build');
const newSessionButton = $<HTMLButtonElement>('new-session');
const permissionSelect = $<HTMLSelectElement>('permission-mode');
const setupCard = $<HTMLDivElement>('setup-card');
const warningsPanel = $<HTMLDivElement>('warnings');
const planPanelEl = $<HTMLDivElement>('plan-panel');
const todosPanel = $<HTMLDivElement>('todos');
const usageBar = $<HTMLDivElement>('usage-bar');
const usageText = $<HTMLSpanElement>('usage');
const compactButton = $<HTMLButtonElement>('compact');
const mentionList = $<HTMLDivElement>('mentions');
const contextBar = $<HTMLDivElement>('context-bar');
// Focusable by script only: it keeps the focus while it changes and has no action (testing).
setupCard.tabIndex = -1;

// The composer's own state (not the conversation's): the `@` suggestions and the editor
// selections added to the next prompt.
let mentionFiles: string[] | null = null;
let mention: MentionQuery | null = null;
let suggestions: string[] = [];
let chosen = 0;
let editorSelection: { path: string; startLine: number; endLine: number } | null = null;
let attachments: SelectionContext[] = [];

for (const mode of PERMISSION_MODES) {
  const option = document.createElement('option');
  option.value = mode;
  option.textContent = permissionModeLabel(mode);
  option.title = permissionModeDetail(mode);
  permissionSelect.appendChild(option);
}

const post = (message: WebviewToHost): void => vscode.postMessage(message);
const attr = (value: string): string => escapeHtml(value);

const itemView = (): ItemView => ({
  busy: isBusy(state), planPath: state.session?.approvedPlan?.path ?? null, keySetWhenShown,
});

/** Whether an API key was set when an error arrived: its hint says what was true then (a key
 * set afterwards does not turn "no key is set" into "the key was refused"); an error a
 * history brings back gets the hint that holds either way. */
const keySetAtError = new Map<number, boolean>();
function keySetWhenShown(id: number): boolean | null {
  return keySetAtError.get(id) ?? null;
}

function renderSetupCard(): void {
  const card = setupCardView(state);
  if (!card) {
    setupCard.hidden = true;
    setupCard.removeAttribute('data-kind');
    return;
  }
  setupCard.hidden = false;
  setupCard.dataset.kind = card.kind;
  setupCard.className = `card card-${card.kind}`;
  const progress = card.progress !== undefined ? `<progress data-testid="startup-progress" max="100" value="${Math.round(card.progress * 100)}"></progress>` : '';
  const presets = card.actions.filter((a) => a.action === 'preset');
  const others = card.actions.filter((a) => a.action !== 'preset');
  setupCard.innerHTML = `<div class="card-title">${escapeHtml(card.title)}</div>
    ${card.lines.map((l) => `<div class="card-line">${escapeHtml(l)}</div>`).join('')}
    ${progress}
    ${presets.length ? `<div class="buttons presets">${presets.map((a) => actionButton(a, true)).join('')}</div>` : ''}
    ${others.length ? `<div class="buttons">${others.map((a) => actionButton(a)).join('')}</div>` : ''}`;
}

function renderWarnings(): void {
  const warnings = sidebarWarnings(state);
  warningsPanel.hidden = warnings.length === 0;
  warningsPanel.innerHTML = warnings.map((w) => `<div class="warning">⚠ ${escapeHtml(w)}</div>`).join('');
}

function renderHeader(): void {
  const session = state.session;
  const busy = isBusy(state);
  const mode = session?.mode ?? 'plan';
  planButton.setAttribute('aria-pressed', String(mode === 'plan'));
  buildButton.setAttribute('aria-pressed', String(mode === 'build'));
  if (session) permissionSelect.value = session.permissionMode;

  const panel = planPanel(state);
  if (!panel) {
    planPanelEl.hidden = true;
  } else {
    planPanelEl.hidden = false;
    // Same rule as the server's code lens: no decision while a run writes the plan, and
    // from every other status a way forward.
    const buttons = panel.decisions
      .map((d) => `<button${d.secondary ? ' class="secondary"' : ''} data-action="${d.action}" data-testid="${d.action}">${escapeHtml(d.label)}</button>`)
      .join('');
    // Each round has its own file (PLAN.md, PLAN-2.md, …): the card names this one.
    const file = panel.uri ? planFileName(panel.uri) : 'PLAN.md';
    planPanelEl.innerHTML = `<span class="plan-status" data-testid="plan-status">Plan ${escapeHtml(file)}: ${escapeHtml(panel.status)}</span>
      <button class="link" data-action="openPlan">open</button>
      ${buttons ? `<div class="buttons">${buttons}</div>` : ''}`;
  }

  const todos = visibleTodos(state);
  if (todos.length === 0) {
    todosPanel.hidden = true;
  } else {
    const { done, total } = todoProgress(todos);
    todosPanel.hidden = false;
    todosPanel.innerHTML = `<div class="todo-head">Todos ${done}/${total}<progress max="${total}" value="${done}"></progress></div>
      ${checklistHtml({ items: todos, notes: [], kept: true })}`;
  }
  renderUsage(busy);
  stopButton.disabled = !busy;
  sendButton.disabled = !canSend(state);
  sendButton.title = state.session?.provider?.configured === false ? 'Set up a model first (the card above)' : '';
  newSessionButton.disabled = state.serverStatus !== 'running';
}

/** Context fill and session tokens, with the Compact button; shown once the server reports
 * usage (an older server does not, and has no planLsp/compact either). */
function renderUsage(busy: boolean): void {
  const usage = state.session?.usage;
  if (!isUsage(usage)) {
    usageBar.hidden = true;
    return;
  }
  usageBar.hidden = false;
  const { percent, warning } = contextFill(usage);
  usageText.textContent = usageLine(usage);
  usageText.classList.toggle('usage-warning', warning);
  usageText.dataset.fill = percent === null ? '' : String(percent);
  usageText.dataset.compactions = String(usage.compactions ?? 0);
  compactButton.disabled = busy || state.serverStatus !== 'running';
  compactButton.title = busy
    ? 'Compact: wait for the run to end (or Stop it)'
    : 'Compact: summarise the conversation so far and prune old tool outputs, freeing context';
}

const EMPTY = `<div class="empty" data-testid="empty">Describe a task. In <b>Plan</b> mode the agent researches read-only and
  writes a plan to PLAN.md; you approve it (here or on PLAN.md), then it builds.
  <div><button class="link" data-action="openWalkthrough">Get started: a four-step walkthrough</button></div></div>`;

/** What identifies a focused control across renders (the panels are rendered afresh). */
function focusKey(el: Element | null): string | null {
  if (!(el instanceof HTMLElement) || !el.dataset.action) return null;
  const owner = el.closest<HTMLElement>('[data-item]');
  const d = el.dataset;
  return [owner?.dataset.item ?? el.parentElement?.closest('[id]')?.id ?? '', d.action, d.cardAction, d.preset, d.setting, d.command, d.option, d.path, d.index]
    .map((v) => v ?? '').join('\u0000');
}

function render(): void {
  const atBottom = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
  // A control that had the focus keeps it when its panel is rendered again (a card updates
  // while the user tabs through its buttons); one that went away hands it to the prompt.
  // Only while the chat has the focus: a render never takes it from the editor.
  const focused = document.hasFocus() ? focusKey(document.activeElement) : null;
  renderHeader();
  renderSetupCard();
  renderWarnings();
  messages.innerHTML = state.items.length ? state.items.map((i) => renderItem(i, itemView()).replace(/^<div /, `<div data-item="${i.id}" `)).join('') : EMPTY;
  if (atBottom) messages.scrollTop = messages.scrollHeight;
  if (focused !== null && document.activeElement !== null && focusKey(document.activeElement) !== focused) {
    (controlFor(focused) ?? input).focus();
  }
}

/** The enabled control `focusKey` names, if it is shown. */
function controlFor(key: string | null): HTMLElement | undefined {
  const found = key === null ? undefined : Array.from(document.querySelectorAll<HTMLElement>('[data-action]')).find((el) => focusKey(el) === key);
  return found && !(found as HTMLButtonElement).disabled ? found : undefined;
}

const promptTyping = new PromptTyping(input);
const focusNow = (): FocusNow => focusInChat(state, { input, setupCard, messages }, promptTyping);
const focusTo = (target: FocusTarget): void => moveFocus(target, { input, setupCard, messages });

function dispatch(event: ChatEvent): void {
  const before = state;
  const now = focusNow();
  state = reduce(state, event);
  if (event.type === 'update' && event.update.kind === 'error' && typeof state.setup?.keySet === 'boolean') {
    const seen = new Set(before.items.map((i) => i.id));
    for (const item of state.items) if (item.type === 'notice' && !seen.has(item.id)) keySetAtError.set(item.id, state.setup.keySet);
  }
  render();
  // A card that asks for an answer takes the focus as it appears (never from the editor).
  const target = document.hasFocus() ? focusOnChange(before, state, now) : null;
  if (target) focusTo(target);
  // A prompt that failed comes back into an empty input, to edit or send again.
  const failed = newlyFailedPrompts(before, state, event);
  if (failed.length && !input.value.trim()) input.value = failed[failed.length - 1];
}

function retry(id: number): void {
  const text = failedPromptText(state, id);
  if (text === null || isBusy(state) || state.serverStatus !== 'running') return;
  if (input.value.trim() === text.trim()) input.value = '';
  post({ type: 'prompt', text });
  // Typing goes on in the input, not on the button.
  input.focus();
}

function collectAnswers(requestId: string): Record<string, string[]> {
  const answers: Record<string, string[]> = {};
  const card = messages.querySelector(`[data-testid="question-card"][data-request="${CSS.escape(requestId)}"]`);
  card?.querySelectorAll<HTMLInputElement>('input[data-question]').forEach((el) => {
    const id = el.dataset.question as string;
    answers[id] ??= [];
    if (el.checked) answers[id].push(el.value);
  });
  return answers;
}

function send(): void {
  const text = input.value.trim();
  if (!text || !canSend(state)) return;
  input.value = '';
  promptTyping.sent();
  post({ type: 'prompt', text: promptWithContext(text, attachments) });
  attachments = [];
  closeMentions();
  renderContextBar();
}

// -- @ mentions and the selection chip ----------------------------------------------------

function closeMentions(): void {
  mention = null;
  suggestions = [];
  mentionList.hidden = true;
  mentionList.innerHTML = '';
}

function renderMentions(): void {
  if (!mention) return closeMentions();
  suggestions = mentionFiles === null ? [] : matchFiles(mentionFiles, mention.query);
  chosen = Math.min(chosen, Math.max(0, suggestions.length - 1));
  mentionList.hidden = false;
  if (mentionFiles === null) {
    mentionList.innerHTML = '<div class="mention-empty">Listing the workspace\'s files…</div>';
    return;
  }
  mentionList.innerHTML = suggestions.length
    ? suggestions
        .map((file, i) => `<div class="mention${i === chosen ? ' chosen' : ''}" role="option" aria-selected="${i === chosen}" data-action="mention" data-testid="mention-item" data-path="${attr(file)}">${escapeHtml(file)}</div>`)
        .join('')
    : `<div class="mention-empty">No file matches “${escapeHtml(mention.query)}”.</div>`;
}

/** Follows the caret: opens, filters or closes the `@` suggestions. */
function updateMention(): void {
  const next = mentionAt(input.value, input.selectionStart ?? input.value.length);
  if (!next) return closeMentions();
  // A new mention asks for the files again (the workspace may have changed).
  if (!mention || next.start !== mention.start) {
    mentionFiles = null;
    chosen = 0;
    post({ type: 'mentionFiles' });
  }
  mention = next;
  renderMentions();
}

function pickMention(path: string): void {
  if (!mention) return;
  const result = insertMention(input.value, mention, input.selectionStart ?? input.value.length, path);
  input.value = result.text;
  input.setSelectionRange(result.caret, result.caret);
  closeMentions();
  input.focus();
}

function renderContextBar(): void {
  const chips = attachments.map((a, i) =>
    `<span class="chip attached" data-testid="attachment" title="${attr(`${a.totalLines} line(s)${a.truncated ? ', cut' : ''}: sent with the prompt`)}">${escapeHtml(selectionLabel(a))}<button class="chip-remove link" data-action="detach" data-index="${i}" title="Remove" aria-label="Remove ${attr(selectionLabel(a))}">×</button></span>`);
  const place = editorSelection;
  const attached = place !== null && attachments.some((a) => selectionLabel(a) === selectionLabel(place));
  if (place && !attached) {
    chips.push(`<button class="chip secondary" data-action="attachSelection" data-testid="selection-chip" title="Send the selected lines with the prompt">+ Selection ${escapeHtml(selectionLabel(place))}</button>`);
  }
  contextBar.hidden = chips.length === 0;
  contextBar.innerHTML = chips.join('');
}

function cardMessage(target: HTMLElement): WebviewToHost | null {
  switch (target.dataset.cardAction) {
    case 'preset':
      return { type: 'applyPreset', preset: target.dataset.preset ?? '' };
    case 'openSetting':
      return { type: 'openSetting', setting: target.dataset.setting ?? '' };
    case 'command':
      return { type: 'runCommand', command: target.dataset.command ?? '' };
    case 'testConnection':
      return { type: 'testConnection' };
    case 'showLog':
      return { type: 'showLog' };
    case 'retryStart':
      return { type: 'retryStart' };
    default:
      return null;
  }
}

document.addEventListener('click', (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>('[data-action]');
  if (!target) return;
  const requestId = target.dataset.request ?? '';
  const simple: Record<string, WebviewToHost> = {
    approve: { type: 'approve' }, reject: { type: 'reject' }, feedback: { type: 'feedback' },
    openPlan: { type: 'openPlan' }, openWalkthrough: { type: 'openWalkthrough' },
  };
  const action = target.dataset.action ?? '';
  if (simple[action]) {
    post(simple[action]);
    return;
  }
  switch (action) {
    case 'permission':
      post({ type: 'permissionAnswer', requestId, optionId: target.dataset.option as string });
      break;
    case 'answer':
      post({ type: 'questionAnswer', requestId, answers: collectAnswers(requestId) });
      break;
    case 'dismiss':
      post({ type: 'questionAnswer', requestId, answers: null });
      break;
    case 'showProposal':
      post({ type: 'showProposal', requestId });
      break;
    case 'retry':
      retry(Number(target.dataset.id));
      break;
    case 'retryRun':
      if (!isBusy(state) && state.serverStatus === 'running') post({ type: 'retryRun' });
      break;
    case 'mention':
      pickMention(target.dataset.path ?? '');
      break;
    case 'attachSelection':
      post({ type: 'attachSelection' });
      break;
    case 'detach':
      attachments = attachments.filter((_a, i) => i !== Number(target.dataset.index));
      renderContextBar();
      input.focus();
      break;
    case 'openFile':
      post({ type: 'openFile', path: target.dataset.path ?? '' });
      break;
    case 'diffRun':
      post({ type: 'diffRun', runId: target.dataset.run ?? '', path: target.dataset.path ?? '' });
      break;
    case 'revertTo':
      post({ type: 'revertTo', checkpointId: target.dataset.checkpoint ?? '' });
      break;
    case 'redo':
      post({ type: 'redo' });
      break;
    case 'card': {
      const message = cardMessage(target);
      if (message) post(message);
      break;
    }
  }
});

sendButton.addEventListener('click', send);
stopButton.addEventListener('click', () => post({ type: 'cancel' }));
newSessionButton.addEventListener('click', () => post({ type: 'newSession' }));
compactButton.addEventListener('click', () => post({ type: 'compact' }));
planButton.addEventListener('click', () => post({ type: 'setMode', mode: 'plan' }));
buildButton.addEventListener('click', () => post({ type: 'setMode', mode: 'build' }));
permissionSelect.addEventListener('change', () =>
  post({ type: 'setPermissionMode', permissionMode: permissionSelect.value as PermissionMode }),
);
input.addEventListener('keydown', (e) => {
  if (mention && !mentionList.hidden && !e.isComposing) {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const n = suggestions.length;
      if (n) chosen = (chosen + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      renderMentions();
      return;
    }
    if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey && suggestions.length) {
      e.preventDefault();
      pickMention(suggestions[chosen]);
      return;
    }
    if (e.key === 'Escape') {
      e.preventDefault();
      closeMentions();
      return;
    }
  }
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
// Alt+M is the workbench's keybinding that toggles Plan/Build while the chat has the focus
// (Tab and Shift+Tab move the focus, as everywhere): no character is typed for it.
document.addEventListener('keydown', (e) => {
  if (e.altKey && !e.ctrlKey && !e.metaKey && e.code === 'KeyM') e.preventDefault();
});
// The view shown or focused from the workbench (Open Chat, its icon, a keybinding): the
// focus goes to the prompt (or to the card that waits for an answer: focusOnOpen), not to the
// page. The host's focusInput never takes the focus from the editor: without it, that happens
// when the chat gets the focus.
let openOnFocus = false;
// The chat left for an input box, a dialog or the editor: what changed meanwhile moves the
// focus as it would have (a card that appeared), else it comes back to the control it left.
let away: { state: ChatState; now: FocusNow; key: string | null } | null = null;
window.addEventListener('blur', () => {
  away = { state, now: focusNow(), key: focusKey(document.activeElement) };
});
window.addEventListener('focus', () => {
  const target = openOnFocus ? focusOnOpen(state) : away ? focusOnChange(away.state, state, away.now) : null;
  if (target) focusTo(target);
  else if (document.activeElement === document.body || document.activeElement === null) (controlFor(away?.key ?? null) ?? input).focus();
  openOnFocus = false;
  away = null;
});
function focusOnOpenNow(): void {
  if (document.hasFocus()) focusTo(focusOnOpen(state));
  else openOnFocus = true;
}
input.addEventListener('input', updateMention);
input.addEventListener('click', updateMention);
// The chat (any of its controls) has the focus: the workbench's Alt+M toggles the mode.
window.addEventListener('focus', () => post({ type: 'inputFocus', focused: true }));
window.addEventListener('blur', () => post({ type: 'inputFocus', focused: false }));

window.addEventListener('message', (e: MessageEvent<HostToWebview>) => {
  const message = e.data;
  if (message.type === 'event') dispatch(message.event);
  else if (message.type === 'focusInput') focusOnOpenNow();
  else if (message.type === 'mentionFiles') {
    mentionFiles = message.files;
    renderMentions();
  } else if (message.type === 'editorSelection') {
    editorSelection = message.selection;
    renderContextBar();
  } else if (message.type === 'attachment') {
    attachments = [...attachments.filter((a) => selectionLabel(a) !== selectionLabel(message.selection)), message.selection];
    renderContextBar();
    input.focus();
  }
});

render();
post({ type: 'ready' });
