/**
 * The chat's cards as HTML: one renderer for each kind of conversation item. Pure: what it
 * needs of the chat beyond the item comes in an `ItemView`.
 */
import type { ChatItem, ToolItem } from './chatState';
import { escapeHtml, renderMarkdown } from './markdown';
import { CardAction, errorHint, fixAction } from './setupCard';
import { argumentsHtml, checklistHtml, todoChecklist } from './toolCards';
import { compactionTitle } from './usage';
import { timelineHtml } from './timeline';
import { planFileName } from '../plansList';

/** What a card shows beyond its item: whether a run is going, the approved plan's path, and
 * whether an API key was set when an error was shown (its hint says what was true then). */
export interface ItemView {
  busy: boolean;
  planPath: string | null;
  keySetWhenShown(id: number): boolean | null;
}

const attr = (value: string): string => escapeHtml(value);

function toolBadge(status: string): string {
  const labels: Record<string, string> = {
    running: 'running', waiting: 'waiting for permission', done: 'allowed', failed: 'failed', blocked: 'blocked',
  };
  return `<span class="badge badge-${status}">${labels[status] ?? status}</span>`;
}

/** A button for a card action; its data attributes become the message to the host. */
export function actionButton(a: CardAction, primary = false): string {
  const data = [`data-action="card"`, `data-card-action="${attr(a.action)}"`];
  if (a.action === 'preset') data.push(`data-preset="${attr(a.preset)}"`);
  if (a.action === 'openSetting') data.push(`data-setting="${attr(a.setting)}"`);
  if (a.action === 'command') data.push(`data-command="${attr(a.command)}"`);
  return `<button class="${primary ? '' : 'secondary'}" data-testid="card-action" ${data.join(' ')}>${escapeHtml(a.label)}</button>`;
}

function stringArg(tool: ToolItem, key: string): string | null {
  const value = tool.input?.[key];
  return typeof value === 'string' ? value : null;
}

/** The body of a tool card: what the call does, shown for what it is. */
function toolBody(item: ToolItem): string {
  const path = stringArg(item, 'path');
  switch (item.name) {
    case 'plan_write': {
      const content = stringArg(item, 'content');
      if (content !== null) return `<div class="plan-preview markdown" data-testid="plan-markdown">${renderMarkdown(content)}</div>`;
      break;
    }
    case 'write_file':
    case 'edit_file': {
      if (path === null) break;
      const links = [`<button class="link" data-action="openFile" data-path="${attr(path)}">open</button>`];
      if (item.runId && item.status === 'done') {
        links.push(`<button class="link" data-action="diffRun" data-run="${attr(item.runId)}" data-path="${attr(path)}" data-testid="run-diff">changes</button>`);
      }
      const detail = item.name === 'edit_file'
        ? `<pre class="tool-args diff"><span class="del">${escapeHtml(stringArg(item, 'old_text') ?? '')}</span>\n<span class="ins">${escapeHtml(stringArg(item, 'new_text') ?? '')}</span></pre>`
        : `<details><summary>content</summary><pre>${escapeHtml(stringArg(item, 'content') ?? '')}</pre></details>`;
      return `<div class="file-line" data-testid="file-card"><code>${escapeHtml(path)}</code> ${links.join(' · ')}</div>${detail}`;
    }
    case 'todo_write': {
      const list = todoChecklist(item);
      if (list) return checklistHtml(list);
      break;
    }
    case 'bash': {
      const command = stringArg(item, 'command');
      if (command !== null) return `<pre class="tool-args">$ ${escapeHtml(command)}</pre>`;
      break;
    }
    case 'read_file':
    case 'list_dir':
      if (path !== null) return `<div class="file-line"><code>${escapeHtml(path)}</code></div>`;
      break;
  }
  return argumentsHtml(item);
}

export function renderItem(item: ChatItem, view: ItemView): string {
  switch (item.type) {
    case 'user': {
      const failed = item.failed
        ? `<div class="failed-mark">Not sent: it failed before the model answered. <button class="secondary retry" data-action="retry" data-testid="retry-prompt" data-id="${item.id}" title="Send this prompt again">Retry</button></div>`
        : '';
      return `<div class="msg msg-user${item.failed ? ' failed' : ''}" data-testid="user-message" data-failed="${item.failed}">${escapeHtml(item.text)}${failed}</div>`;
    }
    case 'assistant':
      return `<div class="msg msg-assistant markdown" data-testid="assistant-message">${renderMarkdown(item.text)}</div>`;
    case 'tool': {
      const reason = item.reason ? `<div class="tool-reason" data-testid="tool-reason">${escapeHtml(item.reason)}</div>` : '';
      // A checklist made from the result shows it already.
      const shown = todoChecklist(item)?.kept === true;
      const result = item.result && !shown ? `<details><summary>result</summary><pre>${escapeHtml(item.result)}</pre></details>` : '';
      return `<div class="tool tool-${item.status}" data-testid="tool-card" data-status="${item.status}" data-tool="${attr(item.name)}" data-run="${attr(item.runId ?? '')}">
        <div class="tool-head"><span class="tool-name">${escapeHtml(item.name)}</span>${toolBadge(item.status)}</div>
        ${reason}${toolBody(item)}${result}</div>`;
    }
    case 'permission': {
      const preview = item.path && item.answer === undefined
        ? `<div class="perm-preview"><button class="link" data-action="showProposal" data-request="${attr(item.requestId)}" data-testid="show-proposal">show the change to ${escapeHtml(item.path)}</button></div>`
        : '';
      const head = `<div class="perm-head">Allow <b>${escapeHtml(item.tool)}</b>?</div><div class="perm-summary">${escapeHtml(item.summary)}</div>${preview}`;
      if (item.answer !== undefined) {
        const chosen = item.options.find((o) => o.optionId === item.answer)?.label ?? item.answer;
        return `<div class="perm answered" data-testid="permission-card">${head}<div class="perm-answer">${escapeHtml(chosen)}</div></div>`;
      }
      const buttons = item.options
        .map((o) => `<button class="${o.optionId.startsWith('reject') ? 'secondary' : ''}" data-action="permission" data-testid="permission-option" data-request="${attr(item.requestId)}" data-option="${attr(o.optionId)}" title="${attr(o.title ?? '')}">${escapeHtml(o.label)}</button>`)
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
            .map((o) => `<label><input type="${type}" name="q-${attr(item.requestId)}-${attr(q.id)}" value="${attr(o)}" data-question="${attr(q.id)}" ${chosen.includes(o) ? 'checked' : ''} ${answered ? 'disabled' : ''}> ${escapeHtml(o)}</label>`)
            .join('');
          return `<fieldset><legend>${escapeHtml(q.text)}</legend>${opts}</fieldset>`;
        })
        .join('');
      const buttons = answered
        ? `<div class="perm-answer">${item.answers === null ? 'dismissed' : 'answered'}</div>`
        : `<div class="buttons"><button data-action="answer" data-request="${attr(item.requestId)}">Answer</button><button class="secondary" data-action="dismiss" data-request="${attr(item.requestId)}">Dismiss</button></div>`;
      return `<div class="question" data-testid="question-card" data-request="${attr(item.requestId)}">${body}${buttons}</div>`;
    }
    case 'compaction': {
      const summary = item.summary
        ? `<details><summary>Summary</summary><div class="markdown" data-testid="compaction-summary">${renderMarkdown(item.summary)}</div></details>`
        : '';
      return `<div class="compaction" data-testid="compaction-card" data-trigger="${item.trigger}">
        <div class="compaction-title">${escapeHtml(compactionTitle(item))}</div>${summary}</div>`;
    }
    case 'checkpoints':
      return timelineHtml(item, { busy: view.busy, planPath: view.planPath });
    case 'planDraft':
      return `<div class="notice" data-testid="plan-draft">Plan draft${item.chars !== null ? ` (${item.chars} characters)` : ''} — <button class="link" data-action="openPlan">open ${escapeHtml(item.uri ? planFileName(item.uri) : 'PLAN.md')}</button></div>`;
    case 'notice': {
      const fix = item.level === 'error' ? fixAction(item.code, item.fix) : null;
      const again = item.level === 'error' && item.retryRun
        ? '<button class="secondary" data-action="retryRun" data-testid="retry-run" title="Go on from the last complete step">Retry</button>'
        : '';
      const button = fix || again ? `<div class="buttons">${fix ? actionButton(fix, true) : ''}${again}</div>` : '';
      const hint = item.level === 'error' ? errorHint(item.code, view.keySetWhenShown(item.id)) : null;
      const help = hint ? `<div class="notice-hint" data-testid="error-hint">${escapeHtml(hint)}</div>` : '';
      return `<div class="notice notice-${item.level}" data-testid="notice" data-code="${attr(item.code ?? '')}">${escapeHtml(item.text)}${help}${button}</div>`;
    }
  }
}
