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
  sameWorkspace,
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
  saveDocument?: (uri: string) => Promise<boolean>;
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

/** A fake server holding a mode, answering the state methods as docs/protocol.md says. */
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
    return box.state;
  });
  return box;
}

test('capabilities: experimental.planLsp declares permission requests and questions, keeping others', () => {
  const caps: { experimental?: unknown } = { experimental: { other: 1 } };
  fillPlanLspCapabilities(caps);
  const declared = { permissionRequests: true, questions: true, saveDocuments: true };
  assert.deepEqual(caps.experimental, { other: 1, planLsp: declared });
  const empty: { experimental?: unknown } = {};
  fillPlanLspCapabilities(empty);
  assert.deepEqual(empty.experimental, { planLsp: declared });
});

test('permission options: ids, objects and the default set, labelled in words', () => {
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's', options: ['allow_once', 'reject_once'] }).map((o) => [o.optionId, o.label]), [
    ['allow_once', 'Allow'],
    ['reject_once', 'Deny'],
  ]);
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's', options: [{ optionId: 'allow_always', name: 'Always' }, { bogus: 1 }] }).map((o) => [o.optionId, o.label]), [
    ['allow_always', 'Always'],
  ]);
  assert.deepEqual(permissionOptions({ tool: 't', summary: 's' }).map((o) => o.optionId), [
    'allow_once', 'allow_always', 'reject_once', 'reject_always',
  ]);
});

test('state methods round-trip and every result reaches the UI, without asking planLsp/state again', async () => {
  const { client, server, close } = pair();
  const box = fakeServer(server);
  const ui = new RecordingUi();
  const session = new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    assert.equal((await session.fetchState())?.mode, 'plan');
    assert.equal((await session.toggleMode()).mode, 'build');
    assert.equal((await session.setMode('plan')).mode, 'plan');
    assert.equal((await session.setPermissionMode('auto_edit')).permissionMode, 'auto_edit');
    assert.deepEqual(ui.states.map((s) => `${s.mode}/${s.permissionMode}`), ['plan/ask', 'build/ask', 'plan/ask', 'plan/auto_edit']);
    assert.deepEqual(box.calls, ['state', 'toggleMode', 'setMode:plan', 'setPermissionMode:auto_edit']);
  } finally {
    close();
  }
});

test('approve and reject go through workspace/executeCommand with the §6 ids; a state answer is rendered', async () => {
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
      'exec:planLsp.rejectPlan:[{"feedback":"smaller steps"}]',
    ]);
    assert.equal(ui.states.at(-1)?.planStatus, 'approved');
    assert.equal(session.current?.mode, 'build');
  } finally {
    close();
  }
});

test('server→client: pushed state is rendered, other updates are forwarded and never rebuild it; no polling', async () => {
  const { client, server, close } = pair();
  const box = fakeServer(server);
  const ui = new RecordingUi();
  ui.permissionAnswer = 'reject_always';
  const session = new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    await server.sendNotification(Methods.update, { runId: 'r', kind: 'text', delta: 'hi' });
    await server.sendNotification(Methods.update, { runId: 'r', kind: 'modeChanged', mode: 'build', planStatus: 'approved' });
    await server.sendNotification(Methods.update, { runId: 'r', kind: 'planDraft', uri: 'file:///w/PLAN.md', chars: 3 });
    await server.sendNotification(Methods.update, { runId: null, kind: 'state', state: { ...baseState, planStatus: 'drafting', running: true } });
    const permission = await server.sendRequest(Methods.requestPermission, {
      runId: 'r', tool: 'bash', summary: 'rm -rf build', options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
    });
    assert.deepEqual(permission, { optionId: 'reject_always' });
    const answers = await server.sendRequest(Methods.askUser, {
      runId: 'r', questions: [{ id: 'q', text: 'Which?', options: ['a', 'b'], multiple: false }],
    });
    assert.deepEqual(answers, { answers: { q: ['b'] } });
    assert.deepEqual(ui.updates.map((u) => u.kind), ['text', 'modeChanged', 'planDraft']);
    assert.equal(ui.permissionAsked[0].summary, 'rm -rf build');
    assert.deepEqual(ui.states.map((s) => `${s.mode}/${s.planStatus}/${s.running}`), ['plan/drafting/true']);
    assert.equal(session.current?.planStatus, 'drafting');
    assert.deepEqual(box.calls, [], 'the client asked nothing');
  } finally {
    close();
  }
});

test('history, new session and test connection; every request names the workspace', async () => {
  const { client, server, close } = pair();
  const ui = new RecordingUi();
  const seen: [string, unknown][] = [];
  server.onRequest(Methods.history, (p) => {
    seen.push(['history', p]);
    return { updates: [{ runId: 'r1', kind: 'prompt', text: 'hi' }, { runId: 'r1', kind: 'text', delta: 'Hello' }] };
  });
  server.onRequest(Methods.newSession, (p) => {
    seen.push(['newSession', p]);
    return { ...baseState, sessionId: 'fresh' };
  });
  server.onRequest(Methods.testConnection, (p) => {
    seen.push(['testConnection', p]);
    return { ok: false, code: 'provider_auth', message: 'HTTP 401' };
  });
  server.onRequest(Methods.prompt, (p) => {
    seen.push(['prompt', p]);
    return { runId: 'r2', stopReason: 'end_turn' };
  });
  const session = new PlanLspSession(client, ui, 'file:///work/ws');
  server.listen();
  client.listen();
  try {
    assert.deepEqual((await session.history()).map((u) => u.kind), ['prompt', 'text']);
    assert.equal((await session.newSession(true)).sessionId, 'fresh');
    assert.equal(session.current?.sessionId, 'fresh');
    assert.deepEqual(await session.testConnection(), { ok: false, code: 'provider_auth', message: 'HTTP 401' });
    await session.prompt('go');
    assert.deepEqual(seen, [
      ['history', { workspaceUri: 'file:///work/ws' }],
      ['newSession', { workspaceUri: 'file:///work/ws', keepApprovedPlan: true }],
      ['testConnection', { workspaceUri: 'file:///work/ws' }],
      ['prompt', { workspaceUri: 'file:///work/ws', text: 'go' }],
    ]);
  } finally {
    close();
  }
});

test('updates for another workspace folder are dropped; URIs compare as paths', async () => {
  const { client, server, close } = pair();
  const ui = new RecordingUi();
  new PlanLspSession(client, ui, 'file:///work/my%20ws');
  server.listen();
  client.listen();
  try {
    await server.sendNotification(Methods.update, { runId: 'a', kind: 'text', delta: 'x', workspaceUri: 'file:///work/other' });
    await server.sendNotification(Methods.update, { kind: 'state', state: baseState, workspaceUri: 'file:///work/other' });
    await server.sendNotification(Methods.update, { runId: 'b', kind: 'text', delta: 'y', workspaceUri: 'file:///work/my ws/' });
    await server.sendNotification(Methods.update, { runId: 'c', kind: 'text', delta: 'z' });
    await server.sendRequest(Methods.askUser, { questions: [{ id: 'q', text: 't', options: ['a', 'b'] }] });
    assert.deepEqual(ui.updates.map((u) => u.runId), ['b', 'c']);
    assert.deepEqual(ui.states, []);
  } finally {
    close();
  }
});

test('planLsp/saveDocument is answered by the UI; without one, or when it fails, nothing is saved', async () => {
  const { client, server, close } = pair();
  const ui = new RecordingUi();
  const saved: string[] = [];
  ui.saveDocument = async (uri: string) => {
    saved.push(uri);
    if (uri.endsWith('bad.py')) throw new Error('disk full');
    return true;
  };
  new PlanLspSession(client, ui);
  server.listen();
  client.listen();
  try {
    assert.deepEqual(await server.sendRequest(Methods.saveDocument, { uri: 'file:///w/a.py' }), { saved: true });
    assert.deepEqual(await server.sendRequest(Methods.saveDocument, { uri: 'file:///w/bad.py' }), { saved: false });
    assert.deepEqual(saved, ['file:///w/a.py', 'file:///w/bad.py']);
  } finally {
    close();
  }
  const other = pair();
  new PlanLspSession(other.client, new RecordingUi());
  other.server.listen();
  other.client.listen();
  try {
    assert.deepEqual(await other.server.sendRequest(Methods.saveDocument, { uri: 'file:///w/a.py' }), { saved: false });
  } finally {
    other.close();
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
    assert.equal(sameWorkspace('file:///a/b%20c/', 'file:///a/b c'), true);
    assert.equal(sameWorkspace('file:///a/b', 'file:///a/bc'), false);
  } finally {
    close();
  }
});
