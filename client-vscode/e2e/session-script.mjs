// The scripted session the end-to-end test runs (the same story as tests/e2e/scripts.py):
// read, two blocked side-effect calls in plan mode, the plan, exit_plan_mode, then the Do run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PLAN_TEXT =
  '# Plan: greet politely\n\n' +
  "1. Change the greeting in `hello.py` from `hi` to `hello, world`.\n" +
  '2. Run nothing else; the change is one line.\n';

export const SCRIPT_TURNS = [
  { text: 'Reading first.', tool_calls: [{ name: 'read_file', arguments: { path: 'hello.py' } }] },
  {
    text: 'Let me just fix it now.',
    tool_calls: [
      { name: 'write_file', arguments: { path: 'hello.py', content: 'oops' } },
      { name: 'bash', arguments: { command: 'rm -rf .' } },
    ],
  },
  { tool_calls: [{ name: 'plan_write', arguments: { content: PLAN_TEXT } }] },
  { tool_calls: [{ name: 'exit_plan_mode', arguments: {} }] },
  {
    tool_calls: [
      { name: 'edit_file', arguments: { path: 'hello.py', old_text: "print('hi')", new_text: "print('hello, world')" } },
    ],
  },
  { text: 'Done: the greeting is updated.' },
];

export function sampleProject(root) {
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'hello.py'), "print('hi')\n");
  writeFileSync(join(root, 'README.md'), '# sample\n');
  return root;
}
