// Builds the Python server (../plan_lsp, ../pyproject.toml) into a wheel under server/ so the
// vsix carries it, together with every dependency as a wheel (server/wheels/) for this
// platform and each supported CPython, and pip's own wheel: on first start the extension
// installs from these alone (`pip install --no-index --find-links`), reaching no package index.
// server/bundle.json names the wheel, its sha256 (the venv is rebuilt when it changes) and what
// the wheels cover (Python versions, platform, glibc floor), which the extension checks against
// the interpreter it found before choosing the offline install.
// The sources are copied to a temporary directory first so the build leaves nothing in the
// checkout. PLAN_LSP_BUILD_PYTHON picks the interpreter (default python3).
//
// Dependencies: fetched with `pip download --only-binary=:all:` for each Python version in
// PLAN_LSP_BUNDLE_PYTHONS (default 3.11,3.12,3.13,3.14: pydantic_core, jiter, cffi, rpds_py and
// tree_sitter ship one wheel per CPython version) and this platform's wheel tags (Linux:
// manylinux up to glibc 2.28). A build that cannot get them all fails: it never ships a vsix
// that would go to a package index on first start. PLAN_LSP_BUNDLE_WHEELS: a folder of wheels
// to take instead of fetching (the e2e's, made offline-ready by install-e2e.sh); the versions
// it covers are checked the same way and recorded.
//
// `node scripts/stage-server.mjs --fetch-wheels DIR`: only fetch the dependency wheels (and pip)
// into DIR, for a later PLAN_LSP_BUNDLE_WHEELS=DIR build that needs no network.
//
// PLAN_LSP_STAGE_REV: build the server as committed at that git revision (e.g. HEAD) instead
// of the working tree.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { devNull, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = resolve(here, '..');
const target = join(here, 'server');
const python = process.env.PLAN_LSP_BUILD_PYTHON ?? 'python3';
const pythons = (process.env.PLAN_LSP_BUNDLE_PYTHONS ?? '3.11,3.12,3.13,3.14')
  .split(',')
  .map((v) => v.trim())
  .filter(Boolean);
for (const v of pythons) if (!/^3\.\d+$/.test(v)) throw new Error(`PLAN_LSP_BUNDLE_PYTHONS: "${v}" is not a version like 3.12`);

/** The wheel platform tags per interpreter platform (`sys.platform-machine`, as the extension's
 * probe reports it) and the glibc floor those tags imply. */
const PLATFORMS = {
  'linux-x86_64': { tags: ['manylinux_2_28_x86_64', 'manylinux_2_17_x86_64', 'manylinux2014_x86_64'], glibc: '2.28' },
  'linux-aarch64': { tags: ['manylinux_2_28_aarch64', 'manylinux_2_17_aarch64', 'manylinux2014_aarch64'], glibc: '2.28' },
  'darwin-arm64': { tags: ['macosx_11_0_arm64', 'macosx_11_0_universal2'], glibc: null },
  'darwin-x86_64': { tags: ['macosx_10_13_x86_64', 'macosx_10_13_universal2'], glibc: null },
  'win32-amd64': { tags: ['win_amd64'], glibc: null },
};

function pythonPlatform() {
  return execFileSync(python, ['-I', '-c', 'import platform, sys; print(f"{sys.platform}-{platform.machine().lower()}")'], {
    encoding: 'utf8',
  }).trim();
}

function platformTags(key) {
  const known = PLATFORMS[key];
  if (!known) {
    throw new Error(
      `no wheel tags known for the platform ${key}: add it to PLATFORMS in scripts/stage-server.mjs ` +
        '(a vsix without its dependencies would install them from a package index on first start)',
    );
  }
  return known;
}

/** pip's options that select wheels for CPython `version` on `tags`. */
function targetOptions(version, tags) {
  const abi = `cp${version.replace('.', '')}`;
  return ['--only-binary=:all:', '--python-version', version, '--implementation', 'cp', '--abi', abi, ...tags.flatMap((t) => ['--platform', t])];
}

function pip(args, env = process.env) {
  execFileSync(python, ['-I', '-m', 'pip', ...args], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
}

/** Fetches the server's dependencies for every version in `pythons`, and pip, into `dir`. */
function fetchWheels(requirement, dir, tags) {
  mkdirSync(dir, { recursive: true });
  for (const version of pythons) {
    console.log(`fetching the server's dependencies as wheels for CPython ${version} (${tags[0]})`);
    try {
      pip(['download', '--quiet', ...targetOptions(version, tags), '-d', dir, requirement]);
    } catch (err) {
      throw new Error(
        `could not fetch the dependency wheels for CPython ${version}: ${err.message}\n` +
          'The vsix must carry them (else its first start goes to a package index). Fix the network or ' +
          'the pip index settings, set PLAN_LSP_BUNDLE_PYTHONS to the versions that have wheels, or give ' +
          'PLAN_LSP_BUNDLE_WHEELS=<folder of wheels>.',
      );
    }
  }
  pip(['download', '--quiet', '--only-binary=:all:', '--no-deps', '-d', dir, 'pip>=23.1']);
  for (const name of readdirSync(dir)) if (/^plan_lsp-/.test(name)) rmSync(join(dir, name));
}

/** The versions in `pythons` whose complete install resolves from `dir` alone (no index). */
function coveredVersions(wheel, dir, tags) {
  const isolated = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIP_')));
  const covered = [];
  for (const version of pythons) {
    const scratch = mkdtempSync(join(tmpdir(), 'plan-lsp-cover-'));
    try {
      pip(['download', '--quiet', '--no-index', '--find-links', dir, ...targetOptions(version, tags), '-d', scratch, wheel], {
        ...isolated,
        PIP_CONFIG_FILE: devNull,
      });
      covered.push(version);
    } catch {
      console.error(`WARNING: the bundled wheels do not cover CPython ${version}: it will install from a package index`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  return covered;
}

function buildWheel(work) {
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
  const out = join(work, 'dist');
  mkdirSync(out);
  pip(['wheel', '--no-deps', '--quiet', '-w', out, src]);
  const wheel = readdirSync(out).find((name) => name.endsWith('.whl'));
  if (!wheel) throw new Error(`no wheel was built into ${out}`);
  return { path: join(out, wheel), name: wheel, rev };
}

const work = mkdtempSync(join(tmpdir(), 'plan-lsp-stage-'));
try {
  const key = pythonPlatform();
  const { tags, glibc } = platformTags(key);
  const built = buildWheel(work);
  const fetchOnly = process.argv.indexOf('--fetch-wheels');
  if (fetchOnly >= 0) {
    const dir = process.argv[fetchOnly + 1];
    if (!dir) throw new Error('--fetch-wheels needs a folder');
    fetchWheels(built.path, resolve(dir), tags);
    console.log(`fetched the dependency wheels for CPython ${pythons.join(', ')} on ${key} into ${dir}`);
  } else {
    rmSync(target, { recursive: true, force: true });
    mkdirSync(join(target, 'wheels'), { recursive: true });
    cpSync(built.path, join(target, built.name));
    const sha256 = createHash('sha256').update(readFileSync(built.path)).digest('hex');
    const wheels = join(target, 'wheels');
    const given = process.env.PLAN_LSP_BUNDLE_WHEELS;
    if (given) {
      const names = readdirSync(given).filter((name) => name.endsWith('.whl') && !/^plan_lsp-/.test(name));
      if (names.length === 0) throw new Error(`PLAN_LSP_BUNDLE_WHEELS=${given} holds no wheels`);
      for (const name of names) cpSync(join(given, name), join(wheels, name));
    } else {
      fetchWheels(built.path, wheels, tags);
    }
    const covered = coveredVersions(built.path, wheels, tags);
    if (covered.length === 0) {
      throw new Error(`the bundled wheels cover none of CPython ${pythons.join(', ')} on ${key}: no vsix without its dependencies`);
    }
    const pipWheel = readdirSync(wheels).find((name) => /^pip-.*\.whl$/.test(name)) ?? null;
    const deps = readdirSync(wheels).filter((name) => name.endsWith('.whl')).length;
    const bundle = { wheel: built.name, sha256, wheels: { dir: 'wheels', pythons: covered, platform: key, glibc, pip: pipWheel } };
    writeFileSync(join(target, 'bundle.json'), JSON.stringify(bundle, null, 2));
    console.log(`staged ${built.name} (${sha256.slice(0, 12)}) into ${target}${built.rev ? ` from ${built.rev}` : ''}`);
    console.log(`bundled ${deps} wheels covering CPython ${covered.join(', ')} on ${key}${pipWheel ? ` (with ${pipWheel})` : ''}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
