import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import {
  CancellationToken,
  CancellationTokenSource,
  MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from 'vscode-jsonrpc/node';
import {
  AskUserParams,
  Methods,
  PlanLspSession,
  PlanLspUpdate,
  RequestPermissionParams,
  SessionState,
  SessionUi,
  fillPlanLspCapabilities,
  permissionOptions,
} from '../protocol';

const baseState: SessionState = {
  sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none',
  outcome: 'never_planned', todos: [], running: false,
};

/** A connected client/server pair over in-memory streams (real JSON-RPC framing). */
function pair(): { client: MessageConnection; server: MessageConnection; close(): void } {
  const a = new PassThrough();
  const b = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(a), new StreamMessageWriter(b));
  const server = createMessageConnection(new StreamMessageReader(b), new StreamMessageWriter(a));
  return {
    client,
    server,
    close() {
      client.dispose();
      server.dispose();
    },
  };
}

class RecordingUi implements SessionUi {
  updates: PlanLspUpdate[] = [];
  states: SessionState[] = [];
  permissionAnswer = 'allow_once';
  permissionAsked: RequestPermissionParams[] = [];
  questionsAsked: AskUserParams[] = [];
  onUpdate(update: PlanLspUpdate): void {
    this.updates.push(update);
  }
  onState(state: SessionState): void {
    this.states.push(state);
  }
  async askPermission(params: RequestPermissionParams): Promise<{ optionId: string }> {
    this.permissionAsked.push(params);
    return { optionId: this.permissionAnswer };
  }
  async askUser(params: AskUserParams): Promise<{ answers: Record<string, string[]> }> {
    this.questionsAsked.push(params);
    return { answers: { [params.questions[0].id]: [params.questions[0].options[1]] } };
  }
}

/** A fake server holding a mode, answering the state methods like DESIGN.md §7. */
function fakeServer(server: MessageConnection): { state: SessionState; calls: string[] } {
  const box = { state: { ...baseState }, calls: [] as string[] };
  server.onRequest(Methods.state, () => {
    box.calls.push('state');
    return box.state;
  });
  server.onRequest(Methods.toggleMode, () => {
    box.calls.push('toggleMode');
    box.state = { ...box.state, mode: box.state.mode === 'plan' ? 'build' : 'plan' };
    return box.state;
  });
  server.onRequest(Methods.setMode, (p) => {
    box.calls.push(`setMode:${p.mode}`);
    box.state = { ...box.state, mode: p.mode };
    return box.state;
  });
  server.onRequest(Methods.setPermissionMode, (p) => {
    box.calls.push(`setPermissionMode:${p.permissionMode}`);
    box.state = { ...box.state, permissionMode: p.permissionMode };
    return box.state;
  });
  server.onRequest(Methods.executeCommand, (p) => {
    box.calls.push(`exec:${p.command}:${JSON.stringify(p.arguments)}`);
    if (p.command === 'planLsp.approvePlan') box.state = { ...box.state, mode: 'build', planStatus: 'approved' };
    return null;
  });
  return box;
}

test('capabilities: experimental.planLsp declares permission requests and questions, keeping others', () => {
  const caps: { experimental?: unknown } = { experimental: { other: 1 } };
  fillPlanLspCapabilities(caps);
  assert.deepEqual(caps.experimental, { other: 1, planLsp: { permissionRequests: true, questions: true } });
  const empty: { experimental?: unknown } = {};
  fillPlanLspCapabilities(empty);
  assert.deepEqual(empty.experimental, { planLsp: { permissionRequests: true, questions: true } });
});

test('permission options: ids, objects and the default set', () => {
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's', options: ['allow_once', 'reject_once'] }), [
    { optionId: 'allow_once', label: 'Allow once' },
    { optionId: 'reject_once', label: 'Deny' },
  ]);
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's', options: [{ optionId: 'allow_always', name: 'Always' }, { bogus: 1 }] }), [
    { optionId: 'allow_always', label: 'Always' },
  ]);
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's' }).map((o) => o.optionId), [
    'allow_once', 'allow_always', 'reject_once', 'reject_always',
  ]);
});

test('state methods round-trip and every result reaches the UI', async () => {
  const { client, server, close } = pair();
  const box = fakeServer(server);
  const ui = new RecordingUi();
  const session = new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    assert.equal((await session.refresh())?.mode, 'plan');
    assert.equal((await session.toggleMode()).mode, 'build');
    assert.equal((await session.setMode('plan')).mode, 'plan');
    assert.equal((await session.setPermissionMode('auto_edit')).permissionMode, 'auto_edit');
    assert.deepEqual(ui.states.map((s) => `${s.mode}/${s.permissionMode}`), ['plan/ask', 'build/ask', 'plan/ask', 'plan/auto_edit']);
    assert.deepEqual(box.calls, ['state', 'toggleMode', 'setMode:plan', 'setPermissionMode:auto_edit']);
  } finally {
    close();
  }
});

test('approve and reject go through workspace/executeCommand with the §6 ids, then refresh the state', async () => {
  const { client, server, close } = pair();
  const box = fakeServer(server);
  const ui = new RecordingUi();
  const session = new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    await session.approvePlan({ permissionMode: 'auto_edit' });
    await session.rejectPlan({ feedback: 'smaller steps' });
    assert.deepEqual(box.calls, [
      'exec:planLsp.approvePlan:[{"permissionMode":"auto_edit"}]',
      'state',
      'exec:planLsp.rejectPlan:[{"feedback":"smaller steps"}]',
      'state',
    ]);
    assert.equal(ui.states[0].mode, 'build');
    assert.equal(session.current?.planStatus, 'approved');
  } finally {
    close();
  }
});

test('server→client: updates forwarded; modeChanged refreshes state; permission and askUser answered', async () => {
  const { client, server, close } = pair();
  const box = fakeServer(server);
  const ui = new RecordingUi();
  ui.permissionAnswer = 'reject_always';
  const session = new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    await session.refresh();
    await server.sendNotification(Methods.update, { runId: 'r', kind: 'text', text: 'hi' });
    box.state = { ...box.state, mode: 'build' };
    await server.sendNotification(Methods.update, { runId: 'r', kind: 'modeChanged', mode: 'build' });
    const permission = await server.sendRequest(Methods.requestPermission, {
      runId: 'r', tool: 'bash', summary: 'rm -rf build', options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
    });
    assert.deepEqual(permission, { optionId: 'reject_always' });
    const answers = await server.sendRequest(Methods.askUser, {
      runId: 'r', questions: [{ id: 'q', text: 'Which?', options: ['a', 'b'], multiple: false }],
    });
    assert.deepEqual(answers, { answers: { q: ['b'] } });
    // The state refresh triggered by modeChanged has landed by now (requests are ordered).
    await session.refresh();
    assert.deepEqual(ui.updates.map((u) => u.kind), ['text', 'modeChanged']);
    assert.equal(ui.permissionAsked[0].summary, 'rm -rf build');
    assert.equal(session.current?.mode, 'build');
    assert.ok(ui.states.some((s) => s.mode === 'build'));
  } finally {
    close();
  }
});

test('a failing UI answers permission as reject_once and questions as unanswered', async () => {
  const { client, server, close } = pair();
  fakeServer(server);
  const ui = new RecordingUi();
  ui.askPermission = async () => {
    throw new Error('view gone');
  };
  ui.askUser = async () => {
    throw new Error('view gone');
  };
  new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    assert.deepEqual(await server.sendRequest(Methods.requestPermission, { tool: 'bash', summary: 'x', options: [] }), { optionId: 'reject_once' });
    assert.deepEqual(await server.sendRequest(Methods.askUser, { questions: [] }), { answers: {} });
  } finally {
    close();
  }
});

test('prompt stays open for the run; cancelling the token cancels the server request', async () => {
  const { client, server, close } = pair();
  fakeServer(server);
  const ui = new RecordingUi();
  const session = new PlanLspSession(client, ui);
  let started!: () => void;
  const runStarted = new Promise<void>((r) => (started = r));
  let sawCancel = false;
  server.onRequest(Methods.prompt, (params, token: CancellationToken) =>
    new Promise((resolve) => {
      assert.equal(params.text, 'do it');
      token.onCancellationRequested(() => {
        sawCancel = true;
        resolve({ runId: 'r1', stopReason: 'cancelled' });
      });
      started();
    }),
  );
  server.listen();
  client.listen();
  // In-memory streams do not keep the event loop alive on their own.
  const keepAlive = setTimeout(() => undefined, 5000);
  try {
    const source = new CancellationTokenSource();
    const pending = session.prompt('do it', source.token);
    await runStarted;
    source.cancel();
    assert.deepEqual(await pending, { runId: 'r1', stopReason: 'cancelled' });
    assert.equal(sawCancel, true);
  } finally {
    clearTimeout(keepAlive);
    close();
  }
});

test('cancel sends planLsp/cancel with the run id when given', async () => {
  const { client, server, close } = pair();
  fakeServer(server);
  const seen: unknown[] = [];
  server.onRequest(Methods.cancel, (p) => {
    seen.push(p);
    return {};
  });
  const session = new PlanLspSession(client, new RecordingUi());
  server.listen();
  client.listen();
  try {
    await session.cancel('r9');
    await session.cancel();
    assert.deepEqual(seen, [{ runId: 'r9' }, {}]);
  } finally {
    close();
  }
});
