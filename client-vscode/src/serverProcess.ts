/**
 * The server process, started by the extension itself (not by vscode-languageclient) so that
 * its working directory and argv are ours and its exit is reported honestly: a stop we asked
 * for, or exit code 0, is not an error.
 */
import { ChildProcess, spawn } from 'node:child_process';

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The extension asked the server to stop. */
  requested: boolean;
}

/** One line for the log about how the server ended; `error` when the user should look. */
export function describeExit(exit: ServerExit): { level: 'info' | 'error'; text: string } {
  if (exit.requested || exit.code === 0) {
    const how = exit.code !== null ? `exit code ${exit.code}` : `signal ${exit.signal}`;
    return { level: 'info', text: `Server stopped (${how}).` };
  }
  const how = exit.code !== null ? `with exit code ${exit.code}` : `on signal ${exit.signal}`;
  return { level: 'error', text: `The server exited unexpectedly ${how}; its last output is above.` };
}

export class ServerProcess {
  private child: ChildProcess | undefined;
  private stopRequested = false;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly command: string,
    private readonly args: string[],
    private readonly cwd: string,
    private readonly onExit: (exit: ServerExit) => void,
  ) {}

  /** `ServerOptions` for vscode-languageclient: spawns and hands over the process. */
  start(): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.command, this.args, { cwd: this.cwd, stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
      this.child = child;
      this.exited = new Promise((done) => {
        child.once('exit', (code, signal) => {
          if (this.child === child) this.child = undefined;
          this.onExit({ code, signal, requested: this.stopRequested });
          done();
        });
      });
      child.once('error', (err) => reject(err));
      child.once('spawn', () => resolve(child));
    });
  }

  /** Marks the coming exit as requested (call before stopping the client). */
  expectStop(): void {
    this.stopRequested = true;
  }

  /** Waits for the process to end after the client's shutdown/exit; kills it after `graceMs`. */
  async ensureStopped(graceMs = 3000): Promise<void> {
    this.stopRequested = true;
    const child = this.child;
    if (!child) return;
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
