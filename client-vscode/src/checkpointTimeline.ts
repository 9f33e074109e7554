/**
 * The host's side of the chat's checkpoints card (webview/timeline.ts). It reads
 * `planLsp/checkpoints` — what each tool call changed, whether a revert can be redone — when
 * the run records a checkpoint, when a run that recorded some ends, after a revert or redo
 * and after a history is shown; one read at a time, and one more when asked meanwhile. It
 * carries out the card's buttons: *Revert to here* through the step lens's own command
 * (`planLsp.revert`, the same flow as the lens), *Redo* through `planLsp/redo`. Their results
 * come back as `checkpoint` updates. No `vscode` here: tested in plain Node.
 */
import type { CheckpointsResult } from './protocol.generated';
import type { ChatEvent } from './webview/chatState';
import type { PlanLspUpdate } from './wireTypes';

/** What the card needs of the session (`PlanLspSession`). */
export interface TimelineSession {
  checkpoints(): Promise<CheckpointsResult>;
  revert(checkpointId: string): Promise<unknown>;
  redo(): Promise<unknown>;
}

export class CheckpointTimeline {
  private reading: Promise<void> | null = null;
  private again = false;
  /** Runs that recorded a checkpoint: their end brings the last call's files. */
  private readonly runs = new Set<string>();

  /** `session`: the running session, if any; `requireSession`: it, or an error saying why not. */
  constructor(
    private readonly session: () => TimelineSession | undefined,
    private readonly requireSession: () => TimelineSession,
    private readonly dispatch: (event: ChatEvent) => void,
    private readonly log: (message: string) => void,
  ) {}

  /** Called with every update the chat gets. */
  noteUpdate(update: PlanLspUpdate): void {
    const runId = typeof update.runId === 'string' ? update.runId : null;
    if (update.kind === 'checkpoint') {
      if (runId !== null) this.runs.add(runId);
      void this.refresh();
    } else if (update.kind === 'done' && runId !== null && this.runs.delete(runId)) {
      void this.refresh();
    }
  }

  /** A history was shown: its cards get their files. */
  noteHistory(updates: PlanLspUpdate[]): void {
    if (updates.some((u) => u?.kind === 'checkpoint')) void this.refresh();
  }

  /** Reads the checkpoints and hands them to the chat. */
  refresh(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.read().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    do {
      this.again = false;
      const session = this.session();
      if (!session) return;
      try {
        this.dispatch({ type: 'checkpointList', result: await session.checkpoints() });
      } catch (err) {
        this.log(`planLsp/checkpoints failed: ${err instanceof Error ? err.message : String(err)}`);
        return;
      }
    } while (this.again);
  }

  /** *Revert to here*: the server's answer (or refusal) is the promise's. */
  async revert(checkpointId: string): Promise<void> {
    if (!checkpointId) throw new Error('This step has no checkpoint to revert to.');
    await this.requireSession().revert(checkpointId);
  }

  async redo(): Promise<void> {
    await this.requireSession().redo();
  }
}
