//! `gemctl chat`: an interactive conversation with a session.
//!
//! Threads and who owns the terminal: rustyline reads lines on its own
//! thread (`input.rs`), one line per request from the chat loop; all other
//! output goes through its `ExternalPrinter` (`screen.rs`), so text
//! arriving while the person types lands above the prompt. The spinner
//! of running tools is indicatif's, captured and drawn by the screen as
//! the last line above the prompt. The loop here reads lines, session
//! events and SIGINT (Ctrl-C when the line editor is not reading).
//!
//! A line is, in this order: an answer to the question being asked
//! (y/a/e/n), a slash command (`commands.rs`), or a prompt (queued by the
//! daemon behind a running turn). Ctrl-C cancels the running turn
//! (`session.cancel`); when nothing runs, a second Ctrl-C leaves, as does
//! Ctrl-D. Every terminal attached to the session shows everything,
//! prompts typed elsewhere included.

mod commands;
mod confirm;
mod input;
mod markdown;
mod plan_copy;
mod render;
mod screen;
mod style;

use std::collections::{HashSet, VecDeque};
use std::io::IsTerminal;

use geminid_protocol::api::{GeminidApiClient, PromptText};
use geminid_protocol::event::{EventPayload, SessionEvent, SubscriptionClosed};
use geminid_protocol::session::SessionInfo;
use jsonrpsee::core::client::SubscriptionClientT;
use tokio::signal::unix::{SignalKind, signal};

use crate::Client;
use crate::answers::{self, Answer};
use crate::command::{Ctx, Failure, Outcome, exit};
use confirm::{Change, Confirmations};
use geminid_protocol::tool::ConfirmationOutcome as Reply;
use render::View;
use screen::Screen;
use style::Style;

/// How the model's thoughts are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Thoughts {
    Show,
    #[default]
    Dim,
    Hide,
}

#[derive(clap::Args, Debug)]
pub struct ChatArgs {
    /// Join an existing session (another terminal may be in it too)
    #[arg(long, conflicts_with = "new")]
    pub session: Option<String>,
    /// Start a new session (the default without --session)
    #[arg(long)]
    pub new: bool,
    /// The workspace of a new session [default: .]
    #[arg(long, conflicts_with = "session")]
    pub cwd: Option<String>,
    /// The model's thoughts: shown, dimmed or hidden
    #[arg(long, value_enum, default_value_t = Thoughts::Dim)]
    pub thoughts: Thoughts,
}

pub const CHAT_HELP: &str = "\
In the chat: type a prompt and Enter. Answer a question with y (yes,
once), a (yes, for this session), s (yes, every tool of this MCP server),
p (yes, always: saved to your policy), e (edit the arguments in $EDITOR)
or n (no); a plan with y (approve, ask before edits), a (approve, accept
edits) or n, then a line of feedback for the model. Ctrl-C cancels
the running turn; Ctrl-D (or Ctrl-C twice when idle, or /quit) leaves.
Commands: /mode default|autoEdit|yolo|plan, /plan [goal], /plan copy, /memory show, /tools, /mcp,
/sessions, /quit, /help, and /<prompt> for the prompts of MCP servers. History is kept in
$XDG_STATE_HOME/gemctl/chat_history (~/.local/state/gemctl/chat_history).
Colours are off with NO_COLOR or when stdout is not a terminal.

Examples:
  gemctl chat                          # a new session in the current directory
  gemctl chat --cwd ~/project --thoughts hide
  gemctl chat --session $S             # a second terminal on the same session";

const PROMPT: &str = "› ";

pub async fn chat(ctx: &Ctx, args: ChatArgs) -> Outcome {
    let client = ctx.connect().await?;
    let session = match &args.session {
        Some(given) => {
            let id = crate::command::resolve_session(&client, given).await?;
            client.get_session(id).await?
        }
        None => {
            let cwd = std::path::absolute(args.cwd.as_deref().unwrap_or("."))
                .map_err(|e| Failure::new(exit::USAGE, format!("--cwd: {e}")))?;
            client
                .create_session(
                    cwd.display().to_string(),
                    None,
                    None,
                    Some(true),
                    None,
                    None,
                    None,
                )
                .await?
        }
    };
    let mut closed = client
        .subscribe_to_method::<SubscriptionClosed>("session.closed")
        .await?;
    // Everything from the start: the conversation so far is shown, and
    // which turn runs and which calls wait is known before the first line.
    let mut events = client
        .subscribe_session(session.session_id.clone(), Some(0))
        .await?;
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot handle Ctrl-C: {e}")))?;

    let style = Style::detect();
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let saved_termios = rustix::termios::tcgetattr(std::io::stdin()).ok();
    let screen = Screen::new(None, style, terminal);
    let (mut input, printer) = input::Input::start(input::history_path(), screen.entered_flag())
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    screen.set_printer(printer);
    let mut chat = Chat {
        client: &client,
        session_id: session.session_id.clone(),
        cwd: session.cwd.clone(),
        view: View::new(screen, args.thoughts),
        confirm: Confirmations::default(),
        running_turn: None,
        tokens: session.tokens.clone(),
        mine: HashSet::new(),
        sent: VecDeque::new(),
        // A new session has nothing worth replaying.
        caught_up: args.session.is_none(),
        history_end: session.last_seq,
        leave_armed: false,
        feedback_for: None,
        mode: session.approval_mode,
        questions: Default::default(),
        filling: None,
        approved_plan: None,
        terminal,
    };
    chat.banner(&session);

    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let status = loop {
        let (raw, styled) = prompt_for(chat.mode, style);
        input.read(&raw, &styled);
        tokio::select! {
            line = input.next() => {
                let Some(line) = line else { break exit::OK };
                match chat.line(line).await {
                    Ok(Flow::Go) => {}
                    Ok(Flow::Leave) => break exit::OK,
                    Err(failure) => {
                        restore(saved_termios.as_ref());
                        return Err(failure);
                    }
                }
            }
            _ = tick.tick() => chat.view.tick(),
            _ = sigint.recv() => {
                match chat.interrupt().await {
                    Ok(Flow::Go) => {}
                    Ok(Flow::Leave) => break exit::OK,
                    Err(failure) => {
                        restore(saved_termios.as_ref());
                        return Err(failure);
                    }
                }
            }
            notice = closed.next() => {
                if let Some(Ok(notice)) = notice {
                    chat.view.print(&style.red(&format!(
                        "the session's stream ended: {} (last seq {})", notice.reason, notice.last_seq
                    )));
                    break exit::FAILED;
                }
            }
            event = events.next() => {
                match event {
                    Some(Ok(event)) => chat.event(&event),
                    Some(Err(e)) => {
                        restore(saved_termios.as_ref());
                        return Err(Failure::new(exit::FAILED, format!("bad event from geminid: {e}")));
                    }
                    None => {
                        restore(saved_termios.as_ref());
                        return Err(Failure::new(exit::UNREACHABLE, "geminid closed the connection"));
                    }
                }
            }
        }
    };
    chat.view.flush(true);
    restore(saved_termios.as_ref());
    Ok(status)
}

/// The prompt, led by the approval mode when it is not the default one
/// (`plan › `), as raw text and styled.
fn prompt_for(mode: geminid_protocol::session::ApprovalMode, style: Style) -> (String, String) {
    match mode {
        geminid_protocol::session::ApprovalMode::Default => (PROMPT.to_owned(), style.cyan(PROMPT)),
        other => {
            let lead = format!("{} ", other.as_str());
            (
                format!("{lead}{PROMPT}"),
                format!("{}{}", style.magenta(&lead), style.cyan(PROMPT)),
            )
        }
    }
}

/// Puts the terminal back as it was (rustyline may be mid-read when the
/// chat ends because the daemon went away).
fn restore(saved: Option<&rustix::termios::Termios>) {
    if let Some(termios) = saved {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            termios,
        );
    }
}

enum Flow {
    Go,
    Leave,
}

struct Chat<'a> {
    client: &'a Client,
    session_id: String,
    /// The session's workspace: which workspace servers' prompts it sees.
    cwd: String,
    view: View,
    confirm: Confirmations,
    running_turn: Option<String>,
    /// The session's token account, from the latest `tokenUsage`.
    tokens: Option<geminid_protocol::turn::SessionTokens>,
    /// Turns prompted from this terminal.
    mine: HashSet<String>,
    /// Prompts sent whose `promptQueued` has not been seen yet.
    sent: VecDeque<String>,
    /// The replay of stored events is over: questions may be asked.
    caught_up: bool,
    history_end: u64,
    /// Ctrl-C was pressed with nothing running: another one leaves.
    leave_armed: bool,
    /// The plan rejected here whose feedback the next line is.
    feedback_for: Option<String>,
    /// The session's approval mode, shown before the prompt unless default.
    mode: geminid_protocol::session::ApprovalMode,
    /// The session's open questions, and the one being answered here.
    questions: crate::questions::QuestionBook,
    filling: Option<crate::questions::Filling>,
    /// The plan file approved last in this session, for `/plan copy`.
    approved_plan: Option<String>,
    /// Both ends are a terminal (OSC 52 can reach the clipboard).
    terminal: bool,
}

impl Chat<'_> {
    fn style(&self) -> Style {
        self.view.style()
    }

    fn banner(&self, session: &SessionInfo) {
        let s = self.style();
        self.view.print(&format!(
            "{} session {} in {} (mode {})\n{}",
            s.bold("gemctl chat"),
            s.cyan(&session.session_id),
            session.cwd,
            session.approval_mode,
            s.dim("/help for commands · Ctrl-C cancels a turn · Ctrl-D leaves"),
        ));
    }

    async fn line(&mut self, line: input::Line) -> Result<Flow, Failure> {
        let text = match line {
            input::Line::Text(text) => text,
            input::Line::Interrupted => return self.interrupt().await,
            input::Line::Eof => return Ok(Flow::Leave),
            input::Line::Failed(e) => {
                return Err(Failure::new(
                    exit::FAILED,
                    format!("reading the terminal: {e}"),
                ));
            }
        };
        self.leave_armed = false;
        let trimmed = text.trim();
        if let Some((name, rest)) = crate::prompt_commands::split(trimmed)
            && !commands::BUILTINS.contains(&name)
        {
            return self.prompt_command(name, rest).await;
        }
        if let Some(command) = commands::parse(trimmed) {
            return self.command(command).await;
        }
        if let Some(call_id) = self.feedback_for.take() {
            // Answered elsewhere meanwhile: the line is a prompt again.
            if let Some(call) = self
                .confirm
                .asking()
                .filter(|c| c.call_id == call_id)
                .cloned()
            {
                let feedback = Some(trimmed.to_owned()).filter(|f| !f.is_empty());
                self.send_answer(&call, Reply::Cancel, None, feedback, None)
                    .await?;
                return Ok(Flow::Go);
            }
        }
        if self.filling.is_some() {
            return self.answer_question(trimmed).await;
        }
        if let Some(call) = self.confirm.asking().cloned() {
            match answers::parse(&call, trimmed) {
                Some(answer) => self.answer(&call, answer).await?,
                None => {
                    let s = self.style();
                    self.view.print(&s.yellow(&format!(
                        "answer {} (allow {}?); a prompt can wait until then",
                        answers::keys(&call),
                        call.name
                    )));
                }
            }
            return Ok(Flow::Go);
        }
        if trimmed.is_empty() {
            return Ok(Flow::Go);
        }
        self.send_prompt(text).await
    }

    /// Sends `text` as a prompt of this terminal (queued behind the
    /// running turn, if any).
    async fn send_prompt(&mut self, text: String) -> Result<Flow, Failure> {
        self.sent.push_back(text.clone());
        match self
            .client
            .prompt(self.session_id.clone(), text.clone())
            .await
        {
            Ok(accepted) => {
                self.mine.insert(accepted.turn_id);
                if accepted.queued_behind > 0 {
                    let s = self.style();
                    self.view.print(&s.dim(&format!(
                        "(queued behind {} turn{})",
                        accepted.queued_behind,
                        if accepted.queued_behind == 1 { "" } else { "s" }
                    )));
                }
            }
            Err(jsonrpsee::core::ClientError::Call(e)) => {
                self.sent.retain(|t| t != &text);
                let s = self.style();
                self.view.print(&s.red(e.message()));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(Flow::Go)
    }

    async fn command(
        &mut self,
        command: Result<commands::Command, String>,
    ) -> Result<Flow, Failure> {
        let s = self.style();
        let command = match command {
            Ok(command) => command,
            Err(message) => {
                self.view.print(&s.red(&message));
                return Ok(Flow::Go);
            }
        };
        if command == commands::Command::Quit {
            return Ok(Flow::Leave);
        }
        if command == commands::Command::PlanCopy {
            match plan_copy::copy(self.approved_plan.as_deref(), self.terminal) {
                Ok(out) => self.view.print(&out),
                Err(why) => self.view.print(&s.yellow(&why)),
            }
            return Ok(Flow::Go);
        }
        let mut out = commands::run(&command, self.client, &self.session_id, s).await?;
        if command == commands::Command::Help {
            out.push_str(&self.prompt_help().await?);
        }
        self.view.print(&out);
        // `/plan <goal>`: in plan mode, the goal goes to the model.
        if let commands::Command::Plan(Some(goal)) = command
            && out.is_empty()
        {
            return self.send_prompt(goal).await;
        }
        Ok(Flow::Go)
    }

    /// The MCP prompts offered now, for `/help`.
    async fn prompt_help(&self) -> Result<String, Failure> {
        let s = self.style();
        let listed =
            match crate::prompt_commands::load(self.client, commands::BUILTINS, &self.cwd).await {
                Ok(listed) => listed,
                Err(jsonrpsee::core::ClientError::Call(e)) => {
                    return Ok(format!("\n{}", s.red(e.message())));
                }
                Err(e) => return Err(e.into()),
            };
        if listed.is_empty() {
            return Ok(s.dim("\nno MCP prompts (no connected server offers any)"));
        }
        let mut out = String::from("\nMCP prompts:");
        for c in &listed {
            let usage = format!("/{} {}", c.name, c.hint());
            let summary = c.description.lines().next().unwrap_or_default();
            out.push_str(&format!(
                "\n{} {}",
                s.cyan(&format!("{:<30}", usage.trim_end())),
                s.dim(&format!("{summary} ({})", c.server))
            ));
        }
        Ok(out)
    }

    /// `/<prompt> [args]`: gets the MCP prompt and sends its text as the
    /// turn; `/<prompt> help` lists its arguments.
    async fn prompt_command(&mut self, name: &str, rest: &str) -> Result<Flow, Failure> {
        let s = self.style();
        let listed =
            match crate::prompt_commands::load(self.client, commands::BUILTINS, &self.cwd).await {
                Ok(listed) => listed,
                Err(jsonrpsee::core::ClientError::Call(e)) => {
                    self.view.print(&s.red(e.message()));
                    return Ok(Flow::Go);
                }
                Err(e) => return Err(e.into()),
            };
        let Some(command) = listed.into_iter().find(|c| c.name == name) else {
            self.view
                .print(&s.red(&format!("unknown command /{name} (try /help)")));
            return Ok(Flow::Go);
        };
        if rest == "help" {
            self.view.print(&crate::prompt_commands::help(&command));
            return Ok(Flow::Go);
        }
        match crate::prompt_commands::expand(self.client, &command, rest).await? {
            Ok(text) => {
                self.view.print(&s.dim(&format!(
                    "(prompt {} of {})",
                    command.prompt, command.server
                )));
                self.send_prompt(text).await
            }
            Err(message) => {
                self.view.print(&s.red(&message));
                Ok(Flow::Go)
            }
        }
    }

    /// Ctrl-C: cancels what runs; with nothing running, the second one
    /// leaves.
    async fn interrupt(&mut self) -> Result<Flow, Failure> {
        let s = self.style();
        if self.running_turn.is_some() || self.confirm.any_pending() {
            self.leave_armed = false;
            self.view.print(&s.yellow("cancelling…"));
            self.client.cancel_session(self.session_id.clone()).await?;
            return Ok(Flow::Go);
        }
        if self.leave_armed {
            return Ok(Flow::Leave);
        }
        self.leave_armed = true;
        self.view
            .print(&s.dim("(nothing is running: Ctrl-C again or Ctrl-D to leave)"));
        Ok(Flow::Go)
    }

    async fn answer(
        &mut self,
        call: &geminid_protocol::tool::ToolCallSnapshot,
        answer: Answer,
    ) -> Result<(), Failure> {
        let s = self.style();
        let (outcome, mode) = match answer {
            Answer::Outcome(outcome) => (outcome, None),
            Answer::Edit => (Reply::ModifyWithEditor, None),
            Answer::ApprovePlan(mode) => (Reply::ProceedOnce, Some(mode)),
            Answer::RejectPlan => {
                self.feedback_for = Some(call.call_id.clone());
                self.view
                    .print(&s.yellow(answers::FEEDBACK_QUESTION.trim_end()));
                return Ok(());
            }
        };
        let modified = if answer == Answer::Edit {
            let args = call.args.clone();
            let screen = self.view.screen.clone();
            screen.suspend();
            let edited = tokio::task::spawn_blocking(move || crate::edit::edit_args(&args))
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
            screen.resume();
            match edited {
                Ok(args) => Some(args),
                Err(message) => {
                    self.view.print(&s.red(&message));
                    self.confirm.retry(&call.call_id);
                    return Ok(());
                }
            }
        } else {
            None
        };
        self.send_answer(call, outcome, modified, None, mode).await
    }

    /// Sends an answer to the call being asked about, then asks the next.
    async fn send_answer(
        &mut self,
        call: &geminid_protocol::tool::ToolCallSnapshot,
        outcome: Reply,
        modified: Option<serde_json::Value>,
        feedback: Option<String>,
        mode: Option<geminid_protocol::session::ApprovalMode>,
    ) -> Result<(), Failure> {
        let s = self.style();
        self.confirm.answering(&call.call_id);
        match self
            .client
            .confirm_answer(
                self.session_id.clone(),
                call.call_id.clone(),
                outcome,
                modified,
                feedback,
                mode,
            )
            .await
        {
            Ok(result) if result.accepted => {}
            Ok(_) => self.view.print(&s.dim("  (another client answered first)")),
            Err(jsonrpsee::core::ClientError::Call(e)) => {
                self.view
                    .print(&s.red(&format!("  not accepted: {}", e.message())));
                self.confirm.retry(&call.call_id);
            }
            Err(e) => return Err(e.into()),
        }
        self.ask();
        Ok(())
    }

    /// Asks about the next pending call, if nothing is being asked;
    /// else about the session's oldest open question.
    fn ask(&mut self) {
        if !self.caught_up || self.filling.is_some() {
            return;
        }
        if let Some(call) = self.confirm.next_question() {
            let question = self.view.confirmation(&call);
            self.view.print(&question);
            return;
        }
        if self.confirm.asking().is_some() {
            return;
        }
        if let Some(q) = self.questions.first() {
            let s = self.style();
            let (filling, prompt) = crate::questions::Filling::start(q);
            self.view.print(&s.yellow(&crate::questions::heading(q)));
            self.view.print(prompt.trim_end());
            self.filling = Some(filling);
        }
    }

    /// One line of the answer to the question being filled in.
    async fn answer_question(&mut self, line: &str) -> Result<Flow, Failure> {
        use crate::questions::Step;
        let s = self.style();
        let Some(filling) = self.filling.as_mut() else {
            return Ok(Flow::Go);
        };
        match filling.take(line) {
            Step::Next(prompt) | Step::Again(prompt) => self.view.print(prompt.trim_end()),
            Step::Done(action, content) => {
                let question_id = filling.question_id.clone();
                self.filling = None;
                match self
                    .client
                    .answer_question(
                        self.session_id.clone(),
                        question_id.clone(),
                        action,
                        content,
                    )
                    .await
                {
                    Ok(_) => self.questions.answered(&question_id),
                    Err(jsonrpsee::core::ClientError::Call(e)) => self
                        .view
                        .print(&s.red(&format!("  not accepted: {}", e.message()))),
                    Err(e) => return Err(e.into()),
                }
                self.ask();
            }
        }
        Ok(Flow::Go)
    }

    fn event(&mut self, event: &SessionEvent) {
        let s = self.style();
        if let Some(closed) = self.questions.observe(&event.payload)
            && self.filling.as_ref().map(|f| f.question_id.as_str())
                == Some(closed.question_id.as_str())
        {
            self.filling = None;
            self.view.print(&s.dim(&format!(
                "  ↳ (question {} {})",
                closed.question_id, closed.how
            )));
        }
        match &event.payload {
            EventPayload::SessionCreated { .. } => {}
            EventPayload::PromptQueued { turn_id, text } => {
                if self.sent.front() == Some(text) {
                    self.sent.pop_front();
                    self.mine.insert(turn_id.clone());
                } else if self.caught_up
                    && !self.mine.contains(turn_id)
                    && self.running_turn.is_some()
                {
                    self.view
                        .print(&s.dim(&format!("(queued from another terminal) {text}")));
                }
            }
            EventPayload::TurnStarted { turn_id } => {
                self.running_turn = Some(turn_id.clone());
            }
            EventPayload::UserMessage { turn_id, text } => {
                if !self.mine.contains(turn_id) || !self.caught_up {
                    self.view.flush(true);
                    let from = if self.caught_up {
                        "  (another terminal)"
                    } else {
                        ""
                    };
                    self.view.print(&format!(
                        "{}{}{}",
                        s.cyan(PROMPT),
                        s.bold(text),
                        s.dim(from)
                    ));
                }
            }
            EventPayload::ModelText { delta, .. } => self.view.text(delta),
            EventPayload::ModelThought { delta, .. } => self.view.thought(delta),
            EventPayload::ToolCall(call) => {
                if let Some(plan) = plan_copy::approved_plan(call) {
                    self.approved_plan = Some(plan);
                }
                self.view.call(call);
                if let Change::AnsweredElsewhere(state) = self.confirm.observe(call) {
                    self.view
                        .print(&s.dim(&format!("  ↳ ({})", confirm::withdrawn(state))));
                }
            }
            EventPayload::TurnFinished {
                turn_id,
                reason,
                message,
                ..
            } => {
                if self.running_turn.as_deref() == Some(turn_id) {
                    self.running_turn = None;
                }
                self.view.turn_finished(reason, message.as_deref());
                if self.caught_up
                    && let Some(tokens) = &self.tokens
                {
                    self.view
                        .print(&s.dim(&crate::command::context_line(tokens)));
                }
            }
            EventPayload::ApprovalModeChanged { approval_mode } => {
                self.mode = *approval_mode;
                self.view
                    .print(&s.magenta(&format!("approval mode is now {approval_mode}")));
            }
            EventPayload::SessionRecovered { interrupted_calls } => {
                self.view.print(&s.yellow(&format!(
                    "the daemon restarted; interrupted calls: {}",
                    interrupted_calls.join(", ")
                )));
            }
            EventPayload::Error { message } => {
                self.view.print(&s.red(&format!("error: {message}")))
            }
            EventPayload::TokenUsage { tokens, .. } => {
                self.tokens = Some(tokens.clone());
            }
            EventPayload::Compressed {
                trigger,
                replaced_entries,
                tokens_before,
                tokens_after,
                ..
            } => {
                self.view.print(&s.magenta(&format!(
                    "context compressed ({trigger}): {replaced_entries} history entries now sent as a summary; about {tokens_before} → {tokens_after} tokens"
                )));
            }
            EventPayload::ModelChanged { model } => {
                let model = model.as_deref().unwrap_or("the daemon's model");
                self.view
                    .print(&s.magenta(&format!("model is now {model}")));
            }
            EventPayload::ModelFallback {
                from, to, reason, ..
            } => {
                self.view.print(&s.yellow(&format!(
                    "model {from} refused ({reason}); going on with {to}"
                )));
            }
            EventPayload::CompressionFailed {
                trigger, message, ..
            } => {
                self.view.print(&s.yellow(&format!(
                    "compression ({trigger}) failed: {message}; the history sent is unchanged"
                )));
            }
            EventPayload::McpServerStatus {
                server,
                status,
                message,
            } => {
                let message = message
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                self.view
                    .print(&s.dim(&format!("mcp server {server}: {status}{message}")));
            }
            EventPayload::CheckpointRestored {
                checkpoint,
                restored,
                removed,
                rewound_entries,
                forced,
            } => {
                self.view.print(&s.magenta(&format!(
                    "checkpoint {checkpoint} restored{}: {} file(s) put back, {} removed; the conversation goes on from before it ({rewound_entries} entries taken back)",
                    if *forced { " (forced)" } else { "" },
                    restored.len(),
                    removed.len()
                )));
            }
            EventPayload::SessionForked {
                from_session,
                at_turn,
                ..
            } => {
                let at = at_turn
                    .as_deref()
                    .map(|t| format!(" at {t}"))
                    .unwrap_or_default();
                self.view
                    .print(&s.dim(&format!("forked from session {from_session}{at}")));
            }
            EventPayload::PromptReferences { read, skipped, .. } => {
                self.view
                    .print(&s.dim(&crate::cli::render::references_line(read, skipped)));
            }
            EventPayload::TodosUpdated { todos } => {
                self.view
                    .print(&s.cyan(&crate::cli::render::todos_text(todos)));
            }
            EventPayload::QuestionAsked { .. }
            | EventPayload::QuestionClosed { .. }
            | EventPayload::ElicitationCompleted { .. } => {
                if let Some(line) = crate::cli::render::question_line(&event.payload) {
                    self.view.print(&s.cyan(&line));
                }
            }
            EventPayload::McpResourceUpdated { server, uri } => {
                self.view
                    .print(&s.dim(&format!("mcp resource updated: {server}:{uri}")));
            }
            EventPayload::ToolsRediscovered { .. } => {
                self.view
                    .print(&s.dim(&crate::cli::render::rediscovered_line(&event.payload)));
            }
            EventPayload::HookRun { decision, .. } => {
                if let Some(line) = crate::command::hook_run_line(&event.payload) {
                    let line = match decision.as_str() {
                        "allow" => s.dim(&line),
                        _ => s.yellow(&line),
                    };
                    self.view.print(&line);
                }
            }
            EventPayload::McpSampling { .. } => {
                if self.caught_up {
                    let line = crate::command::sampling_line(&event.payload);
                    self.view.print(&s.dim(&line));
                }
            }
        }
        if !self.caught_up && event.seq >= self.history_end {
            self.caught_up = true;
            self.view.print(&s.dim(&format!(
                "— the session so far ({} events) is above —",
                self.history_end
            )));
        }
        self.ask();
    }
}
