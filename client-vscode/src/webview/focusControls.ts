/**
 * The chat's focus in the DOM: where it is (for `focusOnChange`) and moving it to what a
 * `FocusTarget` names. The rules are in focus.ts.
 */
import type { ChatState } from './chatState';
import type { FocusNow, FocusTarget } from './focus';

export interface FocusElements {
  input: HTMLTextAreaElement;
  setupCard: HTMLElement;
  messages: HTMLElement;
}

/** Follows whether the user is typing in the prompt (`FocusNow.typing`): its text changed
 * since another control of the chat had the focus, or since it was sent. The chat leaving
 * for the editor and coming back changes nothing. */
export class PromptTyping {
  private changed = false;

  constructor(private readonly input: HTMLTextAreaElement) {
    input.addEventListener('input', () => {
      this.changed = true;
    });
    document.addEventListener('focusin', (e) => {
      if (e.target !== input) this.changed = false;
    });
  }

  /** The prompt was sent. */
  sent(): void {
    this.changed = false;
  }

  get typing(): boolean {
    return this.changed && this.input.value.trim() !== '';
  }
}

/** Where the focus is: the prompt, the set-up card, a card that waits for an answer, another
 * control, nothing. */
export function focusInChat(state: ChatState, { input, setupCard }: FocusElements, typing: PromptTyping): FocusNow {
  const el = document.activeElement;
  const owner = el?.closest<HTMLElement>('[data-item]');
  const item = owner ? state.items.find((i) => String(i.id) === owner.dataset.item) : undefined;
  const waiting = (item?.type === 'permission' && item.answer === undefined) || (item?.type === 'question' && item.answers === undefined);
  const where: FocusNow['in'] = el === input ? 'prompt'
    : el === null || el === document.body ? 'nothing'
    : setupCard.contains(el) ? 'setup'
    : waiting ? 'request' : 'elsewhere';
  return { in: where, typing: where === 'prompt' && typing.typing };
}

/** A permission card's first option, a question card's first choice (or its Answer). */
const FIRST_ANSWER = '[data-testid=permission-option], input:not([disabled]), button[data-action=answer]';

/** Moves the focus to a card's first action, the set-up card or the prompt (the prompt when
 * the target is not shown). */
export function moveFocus(target: FocusTarget, { input, setupCard, messages }: FocusElements): void {
  let el: HTMLElement | null = input;
  if (target.to === 'setupCard') el = setupCard.hidden ? null : setupCard;
  else if (target.to === 'setupAction') el = setupCard.querySelector<HTMLElement>('button:not([disabled])');
  else if (target.to === 'request') {
    const card = messages.querySelector(`[data-request="${CSS.escape(target.requestId)}"]`)?.closest('[data-item]');
    el = card?.querySelector<HTMLElement>(FIRST_ANSWER) ?? null;
  }
  (el ?? input).focus();
}
