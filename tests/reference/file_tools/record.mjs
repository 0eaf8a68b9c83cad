#!/usr/bin/env node
// Records what Gemini CLI 0.61 (the reference) allows and refuses in the
// file-tool cases of tests/tests/file_reference.rs: sensitive paths,
// ignored targets, build files and editor configuration, through every
// file tool. The answers go to cases.json next to this script, so the test
// runs in CI without Node.
//
//   node tests/reference/file_tools/record.mjs [/path/to/peer]
//
// The peer directory (default /work/peer, or $PEER_DIR) holds the
// reference harness (harness.mjs) with @google/gemini-cli-core installed.

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PEER = process.argv[2] ?? process.env.PEER_DIR ?? '/work/peer';

// The workspace: every file holds "ORIGINAL <path>" so searches find it and
// edits have something to replace.
const FILES = [
  '.env', 'sub/.env', '.env.local', '.envrc', 'config/.env.production',
  'node_modules/dep/index.js', 'sub/node_modules/x.js',
  'gha-creds-abc.json', 'ci/gha-creds-1.json',
  '.gitignore', '.geminiignore',
  'x.log', 'logs/app.log', 'build/out.txt', 'dist/bundle.js',
  'private/key.txt', 'notes.secret',
  'src/main.rs', 'src/lib.rs', 'README.md', 'docs/guide.md',
  '.github/workflows/ci.yml', '.vscode/settings.json', '.idea/workspace.xml',
  'Cargo.toml', 'Cargo.lock', 'package.json', 'sub/package.json', 'Makefile',
  'sub/pom.xml', 'rules.mk', 'Dockerfile', 'Dockerfile.dev', 'CMakeLists.txt',
  'go.mod', 'pyproject.toml', 'BUILD.gn', 'cargo.toml', 'tsconfig.json',
  'settings.toml',
];
const CONTENT = {
  '.gitignore': '*.log\nbuild/\ndist/\n',
  '.geminiignore': 'private/\n*.secret\n',
};
const content = (rel) => CONTENT[rel] ?? `ORIGINAL ${rel}\n`;
const DIRS = [
  '', '.git', 'node_modules', 'src', 'sub', 'private', 'build', 'logs',
  '.github', '.vscode', 'ci', 'config',
];
const BUILD = [
  'Cargo.toml', 'package.json', 'sub/package.json', 'Makefile', 'sub/pom.xml',
  'rules.mk', 'Dockerfile.dev', 'CMakeLists.txt', 'go.mod', 'pyproject.toml',
];
const NOT_BUILD = ['src/main.rs', 'cargo.toml', 'BUILD.gn', 'tsconfig.json', 'settings.toml'];

// Calls in a neutral form; each side maps them to its own parameters.
const calls = [];
const cases = [];
const call = (c) => {
  calls.push({ id: calls.length, mode: 'yolo', ...c });
  return calls.length - 1;
};
const tcase = (what, callId, probe = null) =>
  cases.push({ id: cases.length, what, call: callId, probe });

// Reads and walks first: edits below change the files.
for (const rel of FILES) tcase(`read_file ${rel}`, call({ tool: 'read_file', path: rel }));
tcase('read_file .git/HEAD', call({ tool: 'read_file', path: '.git/HEAD' }));
tcase('read_file .git/config', call({ tool: 'read_file', path: '.git/config' }));
for (const dir of DIRS) {
  tcase(`list_directory ${dir || '.'}`, call({ tool: 'list_directory', path: dir }));
}
const rootList = call({ tool: 'list_directory', path: '' });
for (const name of [
  '.env', '.env.local', '.envrc', 'node_modules', '.git', 'gha-creds-abc.json',
  'x.log', 'private', 'notes.secret', '.github', '.vscode', 'Cargo.toml', 'src',
]) {
  tcase(`list_directory . shows ${name}`, rootList, { type: 'entry', name });
}
const globAll = call({ tool: 'glob', pattern: '**/*' });
for (const rel of FILES) tcase(`glob **/* finds ${rel}`, globAll, { type: 'hit', rel });
for (const dir of ['node_modules', '.git', 'private', 'src']) {
  tcase(`glob in ${dir}`, call({ tool: 'glob', pattern: '*', path: dir }));
}
const grepAll = call({ tool: 'grep', pattern: 'ORIGINAL' });
for (const rel of FILES) {
  if (CONTENT[rel]) continue;
  tcase(`grep ORIGINAL matches ${rel}`, grepAll, { type: 'match', rel });
}
for (const dir of ['node_modules', '.git', 'src']) {
  tcase(`grep in ${dir}`, call({ tool: 'grep', pattern: 'ORIGINAL', path: dir }));
}
const many = call({ tool: 'read_many_files', paths: ['**/*'] });
for (const rel of FILES) tcase(`read_many_files **/* reads ${rel}`, many, { type: 'content', rel });
for (const dir of ['', '.git', 'node_modules', 'src', 'private']) {
  tcase(`run_shell_command in ${dir || '.'}`, call({ tool: 'shell', path: dir }));
}
// Edits, each target edited once. yolo, then autoEdit, non-interactive.
for (const rel of FILES) {
  if (CONTENT[rel]) continue;
  tcase(`replace ${rel} (yolo)`, call({ tool: 'replace', path: rel }));
}
for (const rel of [...BUILD, ...NOT_BUILD, '.vscode/settings.json', '.idea/workspace.xml']) {
  tcase(`write_file new/${rel} (autoEdit)`, call({ tool: 'write_file', path: `new/${rel}`, mode: 'autoEdit' }));
}
for (const rel of [...BUILD.slice(0, 4), 'src/lib.rs', '.vscode/extra.json']) {
  tcase(`write_file new2/${rel} (default)`, call({ tool: 'write_file', path: `new2/${rel}`, mode: 'default' }));
}
for (const rel of ['.env', 'sub/.env', '.git/config', '.git/hooks/pre-commit', 'node_modules/dep/index.js',
  'gha-creds-new.json', '.gitignore', '.geminiignore', 'x.log', 'private/key.txt', '.github/workflows/ci.yml']) {
  tcase(`write_file ${rel} (yolo)`, call({ tool: 'write_file', path: rel }));
}
// Interactive decisions (the reference's policy engine; ours observed).
const decisions = [];
for (const mode of ['default', 'autoEdit', 'yolo']) {
  for (const rel of [...BUILD.slice(0, 5), 'src/new.rs', '.vscode/new.json']) {
    decisions.push({ id: decisions.length, tool: 'write_file', path: `p-${mode}/${rel}`, mode });
  }
}

// ------------------------------------------------------------------ run ---
const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'file-ref-')));
for (const rel of FILES) {
  fs.mkdirSync(path.join(ws, path.dirname(rel)), { recursive: true });
  fs.writeFileSync(path.join(ws, rel), content(rel));
}
execFileSync('git', ['init', '-q'], { cwd: ws });
fs.writeFileSync(path.join(ws, '.git/hooks/pre-commit'), 'ORIGINAL hook\n');
const abs = (rel) => (rel ? path.join(ws, rel) : ws);

function refRequest(c) {
  const base = { kind: 'tool', root: ws, approval_mode: c.mode, via: 'scheduler' };
  switch (c.tool) {
    case 'read_file': return { ...base, tool: 'read_file', args: { file_path: abs(c.path) } };
    case 'list_directory': return { ...base, tool: 'list_directory', args: { dir_path: abs(c.path) } };
    case 'glob': return { ...base, tool: 'glob', args: { pattern: c.pattern, ...(c.path !== undefined ? { dir_path: abs(c.path) } : {}) } };
    case 'grep': return { ...base, tool: 'grep_search', args: { pattern: c.pattern, ...(c.path !== undefined ? { dir_path: abs(c.path) } : {}) } };
    // Not registered by Config in 0.61: the harness builds it directly.
    case 'read_many_files': return { ...base, via: 'direct', tool: 'read_many_files', args: { include: c.paths } };
    case 'shell': return { ...base, tool: 'run_shell_command', args: { command: 'ls', dir_path: abs(c.path) } };
    case 'replace': return { ...base, tool: 'replace', args: { file_path: abs(c.path), instruction: 'edit', old_string: `ORIGINAL ${c.path}`, new_string: `CHANGED ${c.path}` } };
    case 'write_file': return { ...base, tool: 'write_file', args: { file_path: abs(c.path), content: 'WRITTEN\n' } };
    default: throw new Error(`unknown tool ${c.tool}`);
  }
}

const child = spawn('node', [path.join(PEER, 'harness.mjs')], {
  cwd: PEER,
  stdio: ['pipe', 'pipe', 'ignore'],
  env: { ...process.env, GEMINI_CLI_HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'file-ref-home-')) },
});
const lines = readline.createInterface({ input: child.stdout });
const pending = [];
lines.on('line', (line) => pending.shift()?.(JSON.parse(line)));
const ask = (req) => new Promise((resolve) => { pending.push(resolve); child.stdin.write(JSON.stringify(req) + '\n'); });

const outputs = [];
for (const c of calls) {
  const r = await ask(refRequest(c));
  const ok = c.tool === 'read_many_files' ? !r.error : r.status === 'success';
  const text = c.tool === 'read_many_files'
    ? String(r.llmContent ?? '')
    : (r.responseParts?.[0]?.functionResponse?.response?.output ?? '');
  const why = ok ? null : (r.error?.message ?? r.errorType ?? 'failed');
  outputs.push({ ok, text, why });
}
const decided = [];
for (const d of decisions) {
  const r = await ask({ kind: 'policy', tool: d.tool, args: { file_path: abs(d.path), content: 'x' }, approval_mode: d.mode, workspace: ws });
  decided.push({ ...d, reference: { decision: r.decision, source: r.rule?.source ?? null } });
}
child.stdin.end();

const lineOf = (text, want) => text.split('\n').some((l) => want(l));
function probe(p, text) {
  switch (p.type) {
    case 'entry': return lineOf(text, (l) => l === `[DIR] ${p.name}` || l.startsWith(`${p.name} (`));
    case 'hit': return lineOf(text, (l) => l === abs(p.rel));
    case 'match': return lineOf(text, (l) => l === `File: ${p.rel}`);
    case 'content': return text.includes(`--- ${abs(p.rel)} ---`);
    default: throw new Error(p.type);
  }
}
const recorded = cases.map((k) => {
  const out = outputs[k.call];
  const allowed = out.ok && (k.probe ? probe(k.probe, out.text) : true);
  const why = out.ok ? (k.probe && !allowed ? 'not in the output' : null) : out.why.replaceAll(ws, '$WS');
  return { ...k, reference: { allowed, why } };
});
const doc = {
  about: 'Gemini CLI 0.61 answers for tests/tests/file_reference.rs; regenerate with record.mjs',
  files: FILES.map((rel) => ({ path: rel, content: content(rel) })),
  extra_files: [{ path: '.git/hooks/pre-commit', content: 'ORIGINAL hook\n' }],
  calls,
  cases: recorded,
  decisions: decided,
};
fs.writeFileSync(path.join(HERE, 'cases.json'), JSON.stringify(doc, null, 1) + '\n');
const allowed = recorded.filter((c) => c.reference.allowed).length;
console.log(`${recorded.length} cases (${allowed} allowed by the reference), ${decided.length} decisions`);
fs.rmSync(ws, { recursive: true, force: true });
