//! The turn's side of the hooks around each model request, in 0.61's
//! order (`geminiChat.js`): BeforeModel (may end the turn, answer in the
//! model's stead, or change the messages, generation settings or model),
//! then BeforeToolSelection on the request as changed (which tools are
//! offered, and the calling mode), then AfterModel on every chunk of the
//! response (may replace its text or end the turn). What each output means
//! is `hooks/model.rs`; every run goes to the actor as `TurnMsg::HookRuns`.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::hooks::HookRun;
use crate::hooks::model::{self as hook_model, AfterModel, BeforeModel};
use crate::model::{Chunk, Model, ModelRequest, Part};

/// How a turn ends: its reason and message.
type Ending = (&'static str, Option<String>);

/// Hooks a turn fires itself: the plan and the session's hook
/// environment; their runs go to the actor as `TurnMsg::HookRuns`.
pub struct AgentHooks {
    pub plan: crate::hooks::Plan,
    pub env: crate::hooks::HookEnv,
}

/// What firing needs from the turn: its hooks, its cancellation, and
/// where the runs go.
pub(super) struct Firing<'a> {
    pub hooks: &'a ModelHooks,
    pub cancel: &'a CancellationToken,
    pub report: &'a (dyn Fn(Vec<HookRun>) + Send + Sync),
}

/// Builds the client of another model, by name, when a BeforeModel hook
/// names one.
pub type ModelSwitch = Arc<dyn Fn(&str) -> Result<Arc<dyn Model>, String> + Send + Sync>;

/// The model hooks a turn fires (each `None` when none is configured:
/// nothing waits).
#[derive(Default)]
pub struct ModelHooks {
    pub before_model: Option<AgentHooks>,
    pub tool_selection: Option<AgentHooks>,
    pub after_model: Option<AgentHooks>,
    pub models: Option<ModelSwitch>,
}

/// What a step does after the hooks before its request.
pub(super) enum Step {
    /// Send the request, to another model when a hook chose one; `view`
    /// is the request as AfterModel hooks see it (when there are some).
    Send {
        model: Option<(String, Arc<dyn Model>)>,
        view: Option<Value>,
    },
    /// A hook answered: these parts are the model's response.
    Respond(Vec<Part>),
    End(Ending),
}

/// Fires BeforeModel and BeforeToolSelection for `request` (to be sent to
/// `current`), changing it as they say.
pub(super) async fn before_request(
    f: &Firing<'_>,
    request: &mut ModelRequest,
    current: &(String, Arc<dyn Model>),
) -> Step {
    let hooks = f.hooks;
    let mut model = None;
    if let Some(before) = &hooks.before_model {
        let view = view_of(request, current);
        let fired = fire(f, before, hook_model::request_input(&view)).await;
        let Some(merged) = fired else {
            return Step::End(("cancelled", None));
        };
        match hook_model::before_model(merged.as_ref(), &current.0, &request.contents) {
            BeforeModel::Stopped(reason) => return Step::End(("stopped", Some(reason))),
            BeforeModel::Blocked(reason) => return Step::End(("blocked", Some(reason))),
            BeforeModel::Respond(parts) => return Step::Respond(parts),
            BeforeModel::Proceed(change) => {
                if let Some(contents) = change.contents {
                    request.contents = contents;
                }
                if let Some(generation) = change.generation {
                    request.generation = request.generation.overlaid(generation);
                }
                if let Some(name) = change.model {
                    let built = match &hooks.models {
                        Some(build) => build(&name),
                        None => Err("this request cannot change its model".to_owned()),
                    };
                    match built {
                        Ok(client) => model = Some((name, client)),
                        Err(e) => {
                            return Step::End((
                                "error",
                                Some(format!("a BeforeModel hook chose the model {name}: {e}")),
                            ));
                        }
                    }
                }
            }
        }
    }
    let using = model.as_ref().unwrap_or(current);
    if let Some(selection) = &hooks.tool_selection {
        let view = view_of(request, using);
        let fired = fire(f, selection, hook_model::request_input(&view)).await;
        let Some(merged) = fired else {
            return Step::End(("cancelled", None));
        };
        if let Some(choice) = hook_model::tool_choice(merged.as_ref()) {
            request.tools = hook_model::offered(&request.tools, &choice);
            request.tool_choice = Some(choice);
        }
    }
    let view = hooks
        .after_model
        .as_ref()
        .map(|_| view_of(request, model.as_ref().unwrap_or(current)));
    Step::Send { model, view }
}

/// The request as hooks see it, with the settings `model` sends.
fn view_of(request: &ModelRequest, model: &(String, Arc<dyn Model>)) -> Value {
    let generation = model.1.generation().overlaid(request.generation.clone());
    hook_model::llm_request(&model.0, &request.contents, generation)
}

/// Fires AfterModel on one chunk: the chunk as it goes on, or how the turn
/// ends.
pub(super) async fn after_chunk(
    f: &Firing<'_>,
    view: &Value,
    chunk: Chunk,
) -> Result<Chunk, Ending> {
    let Some(after) = &f.hooks.after_model else {
        return Ok(chunk);
    };
    let fields = hook_model::after_input(view, &chunk);
    let Some(merged) = fire(f, after, fields).await else {
        return Err(("cancelled", None));
    };
    match hook_model::after_model(merged.as_ref()) {
        AfterModel::Keep => Ok(chunk),
        AfterModel::Replace(texts) => Ok(Chunk {
            parts: hook_model::replaced(chunk.parts, texts),
            usage: chunk.usage,
            finish_reason: chunk.finish_reason,
        }),
        AfterModel::Blocked(reason) => Err(("blocked", Some(reason))),
        AfterModel::Stopped(reason) => Err(("stopped", Some(reason))),
    }
}

/// Runs `hooks`; their runs become events. `None` when the turn was
/// cancelled meanwhile.
async fn fire(
    f: &Firing<'_>,
    hooks: &AgentHooks,
    fields: serde_json::Map<String, Value>,
) -> Option<Option<crate::hooks::Merged>> {
    let fired = crate::hooks::fire(&hooks.plan, &hooks.env, fields, f.cancel).await;
    (f.report)(fired.runs);
    (!f.cancel.is_cancelled()).then_some(fired.merged)
}
