// Bundles the extension (vscode-languageclient included, so the vsix needs no node_modules)
// and the webview script (for the browser, markdown-it included, minified) with esbuild.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync('dist', { recursive: true, force: true });

await build({
  entryPoints: ['src/extension.ts'],
  outfile: 'dist/extension.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['vscode'],
  sourcemap: false,
  logLevel: 'warning',
});
await build({
  entryPoints: ['src/webview/main.ts'],
  outfile: 'dist/webview.js',
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
});
