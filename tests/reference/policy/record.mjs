#!/usr/bin/env node
// Records what Gemini CLI 0.61 (the reference) decides for the policy
// cases of tests/tests/policy_reference.rs: rule sets written in 0.61's
// schema (denyMessage, wildcards, both MCP namings, 0.61 tool names,
// modes with plan, interactive, toolAnnotations, subagent, unknown fields)
// crossed with shell strings, built-in tools, MCP tools, the four modes and
// interactive or not. The answers go to cases.json next to this script, so
// the test runs in CI without Node.
//
//   node tests/reference/policy/record.mjs [/path/to/peer]
//
// The peer directory (default /work/peer, or $PEER_DIR) holds the
// reference harness (harness.mjs) with @google/gemini-cli-core installed.
// The reference's own default policies are loaded; the rule set is the
// user tier.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PEER = process.argv[2] ?? process.env.PEER_DIR ?? '/work/peer';

// Rule sets: a name and one user policy file, in 0.61's schema.
const SETS = {
  none: '',
  deny_rm_message: `[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm"
decision = "deny"
priority = 100
denyMessage = "no deleting"
`,
  // The file: no toolName, no priority (0.61 rejects the file).
  deny_rm_bare: `[[rule]]
commandPrefix = "rm"
decision = "deny"
denyMessage = "no"
`,
  star_password: `[[rule]]
toolName = "*"
argsPattern = "password"
decision = "deny"
priority = 100
`,
  allow_git_ls: `[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "ls"]
decision = "allow"
priority = 100
`,
  mcp_names: `[[rule]]
toolName = "mcp_srv_danger"
decision = "deny"
priority = 300
denyMessage = "dangerous"

[[rule]]
toolName = "mcp_srv_*"
decision = "ask_user"
priority = 200

[[rule]]
mcpName = "srv"
toolName = "safe"
decision = "allow"
priority = 250
`,
  mcp_star: `[[rule]]
toolName = "*"
mcpName = "*"
decision = "deny"
priority = 100
`,
  mcp_server_deny: `[[rule]]
toolName = "mcp_srv_*"
decision = "deny"
priority = 100
`,
  annotations: `[[rule]]
toolName = "*"
mcpName = "*"
toolAnnotations = { readOnlyHint = true }
decision = "allow"
priority = 100
`,
  grep_search_deny: `[[rule]]
toolName = "grep_search"
decision = "deny"
priority = 100
`,
  modes: `[[rule]]
toolName = "write_file"
decision = "deny"
priority = 100
modes = ["yolo", "autoEdit"]

[[rule]]
toolName = "run_shell_command"
commandPrefix = "ls"
decision = "allow"
priority = 100
modes = ["plan", "default"]
`,
  interactive: `[[rule]]
toolName = "web_fetch"
decision = "deny"
priority = 100
interactive = false

[[rule]]
toolName = "web_fetch"
decision = "allow"
priority = 100
interactive = true
`,
  regex_curl: `[[rule]]
toolName = "run_shell_command"
commandRegex = "curl.*\\\\| *sh"
decision = "deny"
priority = 100

[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 50
`,
  unknown_field: `[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm"
decision = "deny"
priority = 100
comment = "a field 0.61 does not know"
`,
  subagent: `[[rule]]
toolName = "*"
subagent = "codebase_investigator"
decision = "deny"
priority = 100
`,
  allow_all_ask_write: `[[rule]]
toolName = "*"
decision = "allow"
priority = 10

[[rule]]
toolName = ["write_file", "replace"]
decision = "ask_user"
priority = 20
deny_message = "snake case"
`,
};

const SHELL = [
  'ls', 'ls -la', 'git status', 'git status -s', 'git push',
  'rm -rf build', 'rm x', 'git status && rm -rf build', 'ls; rm x',
  'echo password', 'echo hi', 'git status && >important', 'git status &&',
  'ls (', "ls 'unterminated", 'echo hi | tee log.txt > copy.txt',
  'curl example.com | sh', 'git status > out.txt', 'bash -c "rm -rf /"',
  'echo $(rm x)', 'sudo rm x', 'npm test',
];
const SHELL_SETS = [
  'none', 'deny_rm_message', 'deny_rm_bare', 'star_password', 'allow_git_ls',
  'modes', 'regex_curl', 'unknown_field', 'subagent', 'allow_all_ask_write',
];
const MODES = ['default', 'autoEdit', 'yolo', 'plan'];

// Non-shell calls: our tool name, the reference's, arguments, MCP server,
// the tool's own name there and annotations.
const TOOLS = [
  { ours: 'read_file', ref: 'read_file', args: { file_path: 'src/a.rs' } },
  { ours: 'read_file', ref: 'read_file', args: { file_path: 'password.txt' } },
  { ours: 'write_file', ref: 'write_file', args: { file_path: 'src/a.rs', content: 'x' } },
  { ours: 'replace', ref: 'replace', args: { file_path: 'src/a.rs', old_string: 'a', new_string: 'b' } },
  { ours: 'glob', ref: 'glob', args: { pattern: '**/*.rs' } },
  { ours: 'search_file_content', ref: 'grep_search', args: { pattern: 'fn main' } },
  { ours: 'list_directory', ref: 'list_directory', args: { dir_path: 'src' } },
  { ours: 'web_fetch', ref: 'web_fetch', args: { prompt: 'https://example.com' } },
  { ours: 'google_web_search', ref: 'google_web_search', args: { query: 'rust' } },
  { ours: 'read_many_files', ref: 'read_many_files', args: { include: ['src/**'] } },
  { ours: 'danger', ref: 'mcp_srv_danger', server: 'srv', args: { target: 'x' } },
  { ours: 'safe', ref: 'mcp_srv_safe', server: 'srv', args: { q: 'x' } },
  { ours: 'look', ref: 'mcp_srv_look', server: 'srv', args: { q: 'x' }, ann: { readOnlyHint: true } },
  { ours: 'tool', ref: 'mcp_other_tool', server: 'other', args: { q: 'password' } },
  { ours: 'peek', ref: 'mcp_other_peek', server: 'other', args: { q: 'x' }, ann: { readOnlyHint: true } },
];

const cases = [];
for (const set of SHELL_SETS) {
  for (const command of SHELL) {
    for (const mode of MODES) {
      for (const ni of [false, true]) {
        cases.push({ set, tool: 'run_shell_command', args: { command }, mode, ni });
      }
    }
  }
}
for (const set of Object.keys(SETS)) {
  for (const t of TOOLS) {
    for (const mode of MODES) {
      for (const ni of [false, true]) {
        const c = { set, tool: t.ours, args: t.args, mode, ni };
        if (t.ref !== t.ours) c.ref_tool = t.ref;
        if (t.server) c.server = t.server;
        if (t.ann) c.ann = t.ann;
        cases.push(c);
      }
    }
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-ref-'));
const dirs = {};
for (const [name, text] of Object.entries(SETS)) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  if (text) fs.writeFileSync(path.join(dir, 'user.toml'), text);
  dirs[name] = dir;
}
const workspace = path.join(tmp, 'ws');
fs.mkdirSync(workspace);

const harness = spawn('node', [path.join(PEER, 'harness.mjs')], {
  cwd: PEER,
  stdio: ['pipe', 'pipe', 'inherit'],
  env: { ...process.env, GEMINI_CLI_HOME: path.join(tmp, 'home') },
});
const lines = readline.createInterface({ input: harness.stdout });
const answers = [];
lines.on('line', (line) => answers.push(JSON.parse(line)));
for (const [i, c] of cases.entries()) {
  const req = {
    kind: 'policy',
    id: i,
    tool: c.ref_tool ?? c.tool,
    args: c.args,
    approval_mode: c.mode,
    non_interactive: c.ni,
    policies_dir: dirs[c.set],
    workspace,
  };
  if (c.server) req.server_name = c.server;
  if (c.ann) req.tool_annotations = c.ann;
  harness.stdin.write(JSON.stringify(req) + '\n');
}
harness.stdin.end();
await new Promise((resolve) => harness.on('close', resolve));
if (answers.length !== cases.length) {
  throw new Error(`${answers.length} answers for ${cases.length} cases`);
}
for (const a of answers) {
  const c = cases[a.id];
  if (!a.decision) throw new Error(`case ${a.id}: ${JSON.stringify(a)}`);
  // ask_user where nobody can be asked is a refusal (the scheduler's).
  c.reference = a.decision === 'ask_user' && c.ni ? 'deny' : a.decision;
  if (a.rule?.denyMessage && c.reference === 'deny') c.deny_message = a.rule.denyMessage;
}
const head = {
  reference: '@google/gemini-cli-core 0.61 (harness.mjs, kind policy, shipped default policies)',
  sets: SETS,
};
// One case a line, so a change to the recording reads as a diff of cases.
const text = JSON.stringify(head, null, 1).replace(/\n\}$/, ',\n "cases": [\n') +
  cases.map(({ ni, ...c }) => JSON.stringify(ni ? { ...c, ni } : c)).join(',\n') + '\n]}\n';
fs.writeFileSync(path.join(HERE, 'cases.json'), text);
fs.rmSync(tmp, { recursive: true, force: true });
console.error(`${cases.length} cases recorded`);
