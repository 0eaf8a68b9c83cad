#!/usr/bin/env node
// An ACP (Agent Client Protocol v1) client on @agentclientprotocol/sdk 2.x,
// for the tests of `gemctl acp` (tests/tests/acp.rs): it runs one prompt
// turn against an agent on stdio, the way an editor would.
//
//   node acp-client.mjs [--cwd DIR] [--prompt TEXT] [--timeout MS] [--elicit CONTENT_JSON] -- AGENT_COMMAND [ARG...]
//
// It sends initialize, session/new {cwd} and session/prompt {TEXT}, and
// prints one line per thing the agent did, a tag and its JSON:
//   initialize {...}, session/new {...}, update {...} (each session/update),
//   permission {...,"chose":OPTION_ID} (each session/request_permission,
//   answered with its first allow_* option, else cancelled),
//   session/prompt {"stopReason":...}, error {...}.
// With --elicit it advertises form elicitation and answers each
// elicitation/create with accept and CONTENT_JSON:
//   elicitation {...the request's params...}.
// Exit status: 0 when the turn ended with end_turn, 1 when it did not,
// 2 for bad usage, 124 when it took longer than --timeout (default 60 s).
// The agent runs in its own process group, which is killed at the end.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

function parseArgs(argv) {
  const split = argv.indexOf('--');
  const agent = split < 0 ? [] : argv.slice(split + 1);
  const options = { cwd: process.cwd(), prompt: 'hello', timeout: 60000, elicit: null, agent };
  const flags = split < 0 ? argv : argv.slice(0, split);
  for (let i = 0; i < flags.length; i += 2) {
    const [flag, value] = [flags[i], flags[i + 1]];
    if (value === undefined) usage(`${flag} needs a value`);
    if (flag === '--cwd') options.cwd = resolve(value);
    else if (flag === '--prompt') options.prompt = value;
    else if (flag === '--timeout') options.timeout = Number(value);
    else if (flag === '--elicit') options.elicit = JSON.parse(value);
    else usage(`unknown option ${flag}`);
  }
  if (agent.length === 0) usage('no agent command after --');
  return options;
}

function usage(problem) {
  console.error(`acp-client.mjs: ${problem}`);
  console.error('usage: node acp-client.mjs [--cwd DIR] [--prompt TEXT] [--timeout MS] [--elicit CONTENT_JSON] -- AGENT_COMMAND [ARG...]');
  process.exit(2);
}

const show = (tag, value) => console.log(`${tag} ${JSON.stringify(value)}`);

const options = parseArgs(process.argv.slice(2));
const [command, ...args] = options.agent;
const agentProcess = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
const endAgent = () => {
  try {
    process.kill(-agentProcess.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
};
agentProcess.on('error', (e) => {
  show('error', { message: `cannot start ${command}: ${e.message}` });
  process.exit(1);
});
setTimeout(() => {
  show('error', { message: `no end of turn within ${options.timeout} ms` });
  endAgent();
  process.exit(124);
}, options.timeout).unref();

const editor = client({ name: 'geminid-tests-acp-client' })
  .onNotification(methods.client.session.update, ({ params }) => show('update', params))
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((option) => option.kind.startsWith('allow'));
    show('permission', {
      title: params.toolCall?.title,
      options: params.options.map((option) => option.optionId),
      chose: allow ? allow.optionId : 'cancelled',
    });
    return { outcome: allow ? { outcome: 'selected', optionId: allow.optionId } : { outcome: 'cancelled' } };
  })
  .onRequest(methods.client.elicitation.create, ({ params }) => {
    show('elicitation', params);
    return options.elicit ? { action: 'accept', content: options.elicit } : { action: 'decline' };
  });

const stream = ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));
let status = 1;
try {
  status = await editor.connectWith(stream, async (agent) => {
    show('initialize', await agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: false, writeTextFile: false },
        terminal: false,
        ...(options.elicit ? { elicitation: { form: {} } } : {}),
      },
      clientInfo: { name: 'geminid-tests-acp-client', version: '1.0.0' },
    }));
    const session = await agent.request(methods.agent.session.new, { cwd: options.cwd, mcpServers: [] });
    show('session/new', session);
    const turn = await agent.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: 'text', text: options.prompt }],
    });
    show('session/prompt', turn);
    return turn.stopReason === 'end_turn' ? 0 : 1;
  });
} catch (e) {
  show('error', { message: e?.message ?? String(e), code: e?.code });
}
endAgent();
process.exit(status);
