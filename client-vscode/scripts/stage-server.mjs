// Copies the Python server package (../plan_lsp, ../pyproject.toml) into server/ so the vsix
// carries it; the extension pip-installs it into a private venv on first start.
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = resolve(here, '..');
const target = join(here, 'server');

rmSync(target, { recursive: true, force: true });
mkdirSync(target, { recursive: true });
cpSync(join(repo, 'pyproject.toml'), join(target, 'pyproject.toml'));
cpSync(join(repo, 'plan_lsp'), join(target, 'plan_lsp'), {
  recursive: true,
  filter: (src) => !/(__pycache__|\.pyc$|\.mypy_cache)/.test(src),
});
const readme = join(repo, 'README.md');
if (existsSync(readme)) cpSync(readme, join(target, 'README.md'));
else writeFileSync(join(target, 'README.md'), '# plan-lsp\n');
console.log(`staged the server package into ${target}`);
