/** Messages between the extension host and the chat webview. */
import type { ChatEvent } from './chatState';
import type { PermissionMode, WorkMode } from '../wireTypes';
import type { SelectionContext } from './promptContext';

export type HostToWebview =
  | { type: 'event'; event: ChatEvent }
  | { type: 'focusInput' }
  /** The workspace's files, for `@` mentions. */
  | { type: 'mentionFiles'; files: string[] }
  /** Where the active editor's selection is (null: none). */
  | { type: 'editorSelection'; selection: { path: string; startLine: number; endLine: number } | null }
  /** The selection the user added to the prompt, with its text. */
  | { type: 'attachment'; selection: SelectionContext };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'prompt'; text: string }
  | { type: 'retryRun' }
  | { type: 'cancel' }
  | { type: 'setMode'; mode: WorkMode }
  | { type: 'setPermissionMode'; permissionMode: PermissionMode }
  | { type: 'permissionAnswer'; requestId: string; optionId: string }
  | { type: 'questionAnswer'; requestId: string; answers: Record<string, string[]> | null }
  | { type: 'approve' }
  | { type: 'reject' }
  | { type: 'feedback' }
  | { type: 'openPlan' }
  /** The chat's frame gained or lost the focus. */
  | { type: 'inputFocus'; focused: boolean }
  | { type: 'newSession' }
  | { type: 'compact' }
  | { type: 'testConnection' }
  | { type: 'applyPreset'; preset: string }
  | { type: 'openSetting'; setting: string }
  | { type: 'runCommand'; command: string }
  | { type: 'showLog' }
  | { type: 'retryStart' }
  | { type: 'openWalkthrough' }
  | { type: 'openFile'; path: string }
  | { type: 'diffRun'; runId: string; path: string }
  /** The checkpoints card: revert to the checkpoint before a step, or redo. */
  | { type: 'revertTo'; checkpointId: string }
  | { type: 'redo' }
  | { type: 'showProposal'; requestId: string }
  | { type: 'mentionFiles' }
  | { type: 'attachSelection' };
