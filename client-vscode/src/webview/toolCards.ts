/**
 * Tool cards shown for what they are, never as JSON. The arguments of a call without a card
 * of its own are a short list of fields (none for a call without arguments).
 *
 * A `todo_write` call is shown as the checklist it is, with the marks PLAN.md shows (`[ ]`
 * pending, `[~]` in progress, `[x]` done), never as its JSON. Once the call has run, the list
 * is the one the server kept (its observation: a step whose change was denied or failed is
 * not marked done there) with the server's notes; before that, the list the model asked for.
 * Pure: tested in Node.
 */
import { escapeHtml } from './markdown';
import type { ToolItem } from './chatTypes';

export type TodoStatus = 'pending' | 'in_progress' | 'completed';

export interface ChecklistItem {
  status: TodoStatus;
  content: string;
}

export interface Checklist {
  items: ChecklistItem[];
  /** The server's notes under the list (why a step is not marked done). */
  notes: string[];
  /** The list the server kept (after the call), not only the one the model asked for. */
  kept: boolean;
}

export const TODO_MARKS: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[~]', completed: '[x]' };

const STATUSES = new Set<string>(['pending', 'in_progress', 'completed']);
const MARK_LINE = /^\[( |~|x)\] (.*)$/;

/** The list the model asked for (the call's `todos` argument), or null. */
function requested(item: ToolItem): ChecklistItem[] | null {
  const todos = item.input?.todos;
  if (!Array.isArray(todos)) return null;
  const items: ChecklistItem[] = [];
  for (const todo of todos) {
    if (!todo || typeof todo !== 'object') continue;
    const { content, status } = todo as Record<string, unknown>;
    if (typeof content !== 'string') continue;
    items.push({ content, status: typeof status === 'string' && STATUSES.has(status) ? (status as TodoStatus) : 'pending' });
  }
  return items;
}

/** The list in the call's observation (`[x] step` lines, then notes), or null. */
function kept(result: string): { items: ChecklistItem[]; notes: string[] } | null {
  const items: ChecklistItem[] = [];
  const notes: string[] = [];
  for (const line of result.split('\n')) {
    const mark = MARK_LINE.exec(line);
    if (mark && notes.length === 0) {
      items.push({ content: mark[2], status: mark[1] === 'x' ? 'completed' : mark[1] === '~' ? 'in_progress' : 'pending' });
    } else if (line.trim() && line.trim() !== '(the todo list is empty)') {
      notes.push(line.trim());
    }
  }
  return items.length || result.includes('(the todo list is empty)') ? { items, notes } : null;
}

export function todoChecklist(item: ToolItem): Checklist | null {
  if (item.name !== 'todo_write') return null;
  if (item.result !== undefined && item.status === 'done') {
    const list = kept(item.result);
    if (list) return { ...list, kept: true };
  }
  const items = requested(item);
  return items ? { items, notes: [], kept: false } : null;
}

export function checklistHtml(list: Checklist): string {
  const rows = list.items
    .map((i) => `<li class="todo-${i.status}" data-status="${i.status}"><span class="task task-${i.status}">${TODO_MARKS[i.status]}</span> ${escapeHtml(i.content)}</li>`)
    .join('');
  const notes = list.notes.map((n) => `<div class="todo-note" data-testid="todo-note">${escapeHtml(n)}</div>`).join('');
  const empty = list.items.length === 0 ? '<div class="todo-note">The todo list is empty.</div>' : '';
  return `<ul class="checklist" data-testid="todo-checklist" data-kept="${list.kept}">${rows}</ul>${empty}${notes}`;
}

/** At most this many characters of one argument's value on a card. */
const FIELD_CHARS = 600;

/** A call's arguments as `name: value` lines (strings as they are, anything else as compact
 * JSON), or the raw text when they are not an object; empty for `{}`. */
export function argumentsHtml(item: Pick<ToolItem, 'args' | 'input'>): string {
  if (!item.input) return item.args ? `<pre class="tool-args">${escapeHtml(item.args)}</pre>` : '';
  const rows = Object.entries(item.input).map(([key, value]) => {
    const raw = typeof value === 'string' ? value : JSON.stringify(value);
    const text = raw.length > FIELD_CHARS ? `${raw.slice(0, FIELD_CHARS)}…` : raw;
    return `<div><span class="key">${escapeHtml(key)}:</span> ${escapeHtml(text)}</div>`;
  });
  return rows.length ? `<div class="tool-fields" data-testid="tool-fields">${rows.join('')}</div>` : '';
}
