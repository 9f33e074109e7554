/**
 * Where the keyboard focus goes in the chat, so that a keyboard user never hunts for the
 * control that matters. A card that asks for an answer (a permission or question request, a
 * set-up card that needs an action) takes the focus on its first action when it appears while
 * the chat has the focus, unless the user is typing in the prompt; the chat opened or shown
 * puts the focus in the prompt, or on the card that waits for an answer. Pure: computed from
 * `ChatState` and where the focus is, tested in Node; the webview moves the focus.
 */
import { ChatState, canSend, pendingRequests } from './chatState';
import { CardKind, setupCardView } from './setupCard';

export type FocusTarget =
  /** The first action of the permission or question card of this request. */
  | { to: 'request'; requestId: string }
  /** The first action of the set-up card. */
  | { to: 'setupAction' }
  /** The set-up card itself: it has no action to offer for now (starting, testing). */
  | { to: 'setupCard' }
  | { to: 'prompt' };

/** Where the focus is in the chat. */
export interface FocusNow {
  /** The prompt, the set-up card, a card that waits for an answer, another control, none. */
  in: 'prompt' | 'setup' | 'request' | 'elsewhere' | 'nothing';
  /** The user is typing in the prompt: its text changed since another control of the chat
   * had the focus (or since the last send), and it is not empty. Never taken the focus from. */
  typing: boolean;
}

/** Set-up cards that ask the user to act before the agent can work. */
const ASKING: ReadonlySet<CardKind> = new Set<CardKind>(['unconfigured', 'problem', 'startFailed']);

/** Which set-up card is shown (its kind and title), or null. */
function cardShown(state: ChatState): string | null {
  const card = setupCardView(state);
  return card ? `${card.kind}\u0000${card.title}` : null;
}

function asksForAction(state: ChatState): boolean {
  const card = setupCardView(state);
  return card !== null && ASKING.has(card.kind) && card.actions.length > 0;
}

/** The chat opened or shown (Open Chat, its icon, a keybinding): a request that waits for an
 * answer takes the focus (the run waits on it); else the set-up card when nothing can be sent
 * before it is acted on (no model set up, the server not running); else the prompt. */
export function focusOnOpen(state: ChatState): FocusTarget {
  const waiting = pendingRequests(state)[0];
  if (waiting !== undefined) return { to: 'request', requestId: waiting };
  if (asksForAction(state) && !canSend(state)) return { to: 'setupAction' };
  return { to: 'prompt' };
}

/** Where the focus goes after the state changed from `before` to `after`, the focus having
 * been as `now` says (while the chat had it); null: it stays. A new request takes it; a new
 * set-up card that asks for an action takes it; a set-up card that had it and changed keeps
 * it (on its first action, or on the card while it has none), or gives it to the prompt once
 * the model is connected. Text typed in the prompt keeps the focus there. */
export function focusOnChange(before: ChatState, after: ChatState, now: FocusNow): FocusTarget | null {
  const typing = now.in === 'prompt' && now.typing;
  const asked = new Set(pendingRequests(before));
  const fresh = pendingRequests(after).find((id) => !asked.has(id));
  if (fresh !== undefined && !typing && now.in !== 'request') return { to: 'request', requestId: fresh };
  if (cardShown(before) === cardShown(after)) return null;
  const card = setupCardView(after);
  if (now.in === 'setup') {
    if (card === null || card.kind === 'connected') return { to: 'prompt' };
    return asksForAction(after) ? { to: 'setupAction' } : { to: 'setupCard' };
  }
  return asksForAction(after) && !typing ? { to: 'setupAction' } : null;
}
