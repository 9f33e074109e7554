// Builds the Python server (../plan_lsp, ../pyproject.toml) into a wheel under server/ so the
// vsix carries it; the extension pip-installs that wheel into a private venv on first start.
// server/bundle.json names the wheel and its sha256 (the venv is rebuilt when it changes).
// The sources are copied to a temporary directory first so the build leaves nothing in the
// checkout. PLAN_LSP_BUILD_PYTHON picks the interpreter (default python3).
//
// PLAN_LSP_STAGE_REV: build the server as committed at that git revision (e.g. HEAD) instead
// of the working tree. PLAN_LSP_BUNDLE_WHEELS: a folder of the server's dependencies as wheels
// (for this platform and Python); they go to server/wheels/ and the extension then installs
// from them alone (`pip install --no-index --find-links`), reaching no package index.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = resolve(here, '..');
const target = join(here, 'server');
const python = process.env.PLAN_LSP_BUILD_PYTHON ?? 'python3';

const work = mkdtempSync(join(tmpdir(), 'plan-lsp-stage-'));
try {
  const src = join(work, 'src');
  mkdirSync(src);
  const rev = process.env.PLAN_LSP_STAGE_REV;
  if (rev) {
    const archive = join(work, 'src.tar');
    execFileSync('git', ['-C', repo, 'archive', '--format=tar', '-o', archive, rev, 'pyproject.toml', 'plan_lsp', 'README.md']);
    execFileSync('tar', ['-xf', archive, '-C', src]);
  } else {
    cpSync(join(repo, 'pyproject.toml'), join(src, 'pyproject.toml'));
    cpSync(join(repo, 'plan_lsp'), join(src, 'plan_lsp'), {
      recursive: true,
      filter: (path) => !/(__pycache__|\.pyc$|\.mypy_cache)/.test(path),
    });
  }
  const readme = rev ? join(src, 'README.md') : join(repo, 'README.md');
  if (rev) {
    if (!existsSync(readme)) writeFileSync(readme, '# plan-lsp\n');
  } else if (existsSync(readme)) cpSync(readme, join(src, 'README.md'));
  else writeFileSync(join(src, 'README.md'), '# plan-lsp\n');

  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  execFileSync(python, ['-I', '-m', 'pip', 'wheel', '--no-deps', '--quiet', '-w', target, src], {
    cwd: work,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const wheel = readdirSync(target).find((name) => name.endsWith('.whl'));
  if (!wheel) throw new Error(`no wheel was built into ${target}`);
  const sha256 = createHash('sha256').update(readFileSync(join(target, wheel))).digest('hex');
  writeFileSync(join(target, 'bundle.json'), JSON.stringify({ wheel, sha256 }, null, 2));
  console.log(`staged ${wheel} (${sha256.slice(0, 12)}) into ${target}${rev ? ` from ${rev}` : ''}`);
  const wheelhouse = process.env.PLAN_LSP_BUNDLE_WHEELS;
  if (wheelhouse) {
    const deps = readdirSync(wheelhouse).filter((name) => name.endsWith('.whl') && !/^plan_lsp-/.test(name));
    if (deps.length === 0) throw new Error(`PLAN_LSP_BUNDLE_WHEELS=${wheelhouse} holds no wheels`);
    mkdirSync(join(target, 'wheels'));
    for (const name of deps) cpSync(join(wheelhouse, name), join(target, 'wheels', name));
    console.log(`bundled ${deps.length} dependency wheels from ${wheelhouse}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
