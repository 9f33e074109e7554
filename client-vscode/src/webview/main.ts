/**
 * The chat webview's script: renders `ChatState` and turns clicks and keys into messages
 * for the extension host. Bundled for the browser (scripts/bundle-webview.mjs).
 */
import { ChatEvent, ChatItem, ChatState, initialChatState, reduce, todoProgress } from './chatState';
import { escapeHtml, renderMarkdown } from './markdown';
import type { HostToWebview, WebviewToHost } from './messages';
import { PERMISSION_MODES } from '../wireTypes';
import type { PermissionMode } from '../wireTypes';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
let state: ChatState = (vscode.getState() as ChatState | undefined) ?? initialChatState();

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const messages = $<HTMLDivElement>('messages');
const input = $<HTMLTextAreaElement>('prompt');
const sendButton = $<HTMLButtonElement>('send');
const stopButton = $<HTMLButtonElement>('stop');
const planButton = $<HTMLButtonElement>('mode-plan');
const buildButton = $<HTMLButtonElement>('mode-build');
const permissionSelect = $<HTMLSelectElement>('permission-mode');
const planPanel = $<HTMLDivElement>('plan-panel');
const todosPanel = $<HTMLDivElement>('todos');
const serverLine = $<HTMLDivElement>('server-status');

for (const mode of PERMISSION_MODES) {
  const option = document.createElement('option');
  option.value = mode;
  option.textContent = mode;
  permissionSelect.appendChild(option);
}

const post = (message: WebviewToHost): void => vscode.postMessage(message);

function toolBadge(status: string): string {
  const labels: Record<string, string> = {
    running: 'running', waiting: 'waiting for permission', done: 'allowed', failed: 'failed', blocked: 'blocked',
  };
  return `<span class="badge badge-${status}">${labels[status] ?? status}</span>`;
}

function renderItem(item: ChatItem): string {
  switch (item.type) {
    case 'user':
      return `<div class="msg msg-user" data-testid="user-message">${escapeHtml(item.text)}</div>`;
    case 'assistant':
      return `<div class="msg msg-assistant markdown" data-testid="assistant-message">${renderMarkdown(item.text)}</div>`;
    case 'tool': {
      const reason = item.reason ? `<div class="tool-reason" data-testid="tool-reason">${escapeHtml(item.reason)}</div>` : '';
      const args = item.args ? `<pre class="tool-args">${escapeHtml(item.args)}</pre>` : '';
      const result = item.result ? `<details><summary>result</summary><pre>${escapeHtml(item.result)}</pre></details>` : '';
      return `<div class="tool tool-${item.status}" data-testid="tool-card" data-status="${item.status}" data-tool="${escapeHtml(item.name)}">
        <div class="tool-head"><span class="tool-name">${escapeHtml(item.name)}</span>${toolBadge(item.status)}</div>
        ${reason}${args}${result}</div>`;
    }
    case 'permission': {
      const head = `<div class="perm-head">Allow <b>${escapeHtml(item.tool)}</b>?</div><div class="perm-summary">${escapeHtml(item.summary)}</div>`;
      if (item.answer !== undefined) {
        const chosen = item.options.find((o) => o.optionId === item.answer)?.label ?? item.answer;
        return `<div class="perm answered" data-testid="permission-card">${head}<div class="perm-answer">${escapeHtml(chosen)}</div></div>`;
      }
      const buttons = item.options
        .map((o) => `<button class="${o.optionId.startsWith('reject') ? 'secondary' : ''}" data-action="permission" data-request="${escapeHtml(item.requestId)}" data-option="${escapeHtml(o.optionId)}">${escapeHtml(o.label)}</button>`)
        .join('');
      return `<div class="perm" data-testid="permission-card">${head}<div class="buttons">${buttons}</div></div>`;
    }
    case 'question': {
      const answered = item.answers !== undefined;
      const body = item.questions
        .map((q) => {
          const type = q.multiple ? 'checkbox' : 'radio';
          const chosen = item.answers?.[q.id] ?? [];
          const opts = q.options
            .map((o) => `<label><input type="${type}" name="q-${escapeHtml(item.requestId)}-${escapeHtml(q.id)}" value="${escapeHtml(o)}" data-question="${escapeHtml(q.id)}" ${chosen.includes(o) ? 'checked' : ''} ${answered ? 'disabled' : ''}> ${escapeHtml(o)}</label>`)
            .join('');
          return `<fieldset><legend>${escapeHtml(q.text)}</legend>${opts}</fieldset>`;
        })
        .join('');
      const buttons = answered
        ? `<div class="perm-answer">${item.answers === null ? 'dismissed' : 'answered'}</div>`
        : `<div class="buttons"><button data-action="answer" data-request="${escapeHtml(item.requestId)}">Answer</button><button class="secondary" data-action="dismiss" data-request="${escapeHtml(item.requestId)}">Dismiss</button></div>`;
      return `<div class="question" data-testid="question-card" data-request="${escapeHtml(item.requestId)}">${body}${buttons}</div>`;
    }
    case 'planDraft':
      return `<div class="notice" data-testid="plan-draft">Plan draft${item.chars !== null ? ` (${item.chars} characters)` : ''} — <span class="link" data-action="openPlan">open PLAN.md</span></div>`;
    case 'notice':
      return `<div class="notice notice-${item.level}">${escapeHtml(item.text)}</div>`;
  }
}

function renderHeader(): void {
  const session = state.session;
  const mode = session?.mode ?? 'plan';
  planButton.setAttribute('aria-pressed', String(mode === 'plan'));
  buildButton.setAttribute('aria-pressed', String(mode === 'build'));
  if (session) permissionSelect.value = session.permissionMode;
  const serverText: Record<string, string> = {
    starting: 'Starting the plan-lsp server…', running: '', stopped: 'Server stopped.', error: 'Server error.',
  };
  const text = state.serverMessage ?? serverText[state.serverStatus] ?? '';
  serverLine.textContent = state.serverStatus === 'running' && !state.serverMessage ? '' : text;
  serverLine.className = `server-status ${state.serverStatus}`;

  const planStatus = session?.planStatus ?? 'none';
  if (planStatus === 'none') {
    planPanel.hidden = true;
  } else {
    planPanel.hidden = false;
    // Same rule as the server's code lens: no decision while the draft is still being written.
    const canDecide = planStatus === 'submitted' || (planStatus === 'drafting' && !state.running && !session?.running);
    planPanel.innerHTML = `<span class="plan-status" data-testid="plan-status">Plan: ${escapeHtml(planStatus)}</span>
      <span class="link" data-action="openPlan">open</span>
      ${canDecide ? '<div class="buttons"><button data-action="approve" data-testid="approve">Approve</button><button class="secondary" data-action="reject">Reject</button><button class="secondary" data-action="feedback">Feedback…</button></div>' : ''}`;
  }

  const todos = session?.todos ?? [];
  if (todos.length === 0) {
    todosPanel.hidden = true;
  } else {
    const { done, total } = todoProgress(todos);
    const marks: Record<string, string> = { completed: '☑', in_progress: '◐', pending: '☐' };
    todosPanel.hidden = false;
    todosPanel.innerHTML = `<div class="todo-head">Todos ${done}/${total}<progress max="${total}" value="${done}"></progress></div>
      <ul>${todos.map((t) => `<li class="todo-${t.status}">${marks[t.status] ?? '☐'} ${escapeHtml(t.content)}</li>`).join('')}</ul>`;
  }
  stopButton.disabled = !state.running;
  sendButton.disabled = state.running || state.serverStatus !== 'running';
}

function render(): void {
  const atBottom = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
  renderHeader();
  messages.innerHTML = state.items.length
    ? state.items.map(renderItem).join('')
    : '<div class="empty">Describe a task. In Plan mode the agent researches read-only and writes a plan to PLAN.md for you to approve.</div>';
  if (atBottom) messages.scrollTop = messages.scrollHeight;
}

function dispatch(event: ChatEvent): void {
  state = reduce(state, event);
  vscode.setState(state);
  render();
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
  if (!text || state.running) return;
  input.value = '';
  post({ type: 'prompt', text });
}

document.addEventListener('click', (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>('[data-action]');
  if (!target) return;
  const requestId = target.dataset.request ?? '';
  switch (target.dataset.action) {
    case 'permission':
      post({ type: 'permissionAnswer', requestId, optionId: target.dataset.option as string });
      break;
    case 'answer':
      post({ type: 'questionAnswer', requestId, answers: collectAnswers(requestId) });
      break;
    case 'dismiss':
      post({ type: 'questionAnswer', requestId, answers: null });
      break;
    case 'approve':
      post({ type: 'approve' });
      break;
    case 'reject':
      post({ type: 'reject' });
      break;
    case 'feedback':
      post({ type: 'feedback' });
      break;
    case 'openPlan':
      post({ type: 'openPlan' });
      break;
  }
});

sendButton.addEventListener('click', send);
stopButton.addEventListener('click', () => post({ type: 'cancel' }));
planButton.addEventListener('click', () => post({ type: 'setMode', mode: 'plan' }));
buildButton.addEventListener('click', () => post({ type: 'setMode', mode: 'build' }));
permissionSelect.addEventListener('change', () =>
  post({ type: 'setPermissionMode', permissionMode: permissionSelect.value as PermissionMode }),
);
input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  } else if (e.key === 'Tab' && e.shiftKey) {
    // The workbench keybinding (shift+tab while planLsp.chatInputFocused) toggles the mode;
    // keep the focus in the box.
    e.preventDefault();
  }
});
input.addEventListener('focus', () => post({ type: 'inputFocus', focused: true }));
input.addEventListener('blur', () => post({ type: 'inputFocus', focused: false }));

window.addEventListener('message', (e: MessageEvent<HostToWebview>) => {
  const message = e.data;
  if (message.type === 'event') dispatch(message.event);
  else if (message.type === 'focusInput') input.focus();
});

render();
post({ type: 'ready' });
