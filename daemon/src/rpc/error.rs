//! Mapping of daemon errors to JSON-RPC error objects (only here).

use geminid_protocol::error as code;
use jsonrpsee::types::ErrorObjectOwned;

use crate::session::SessionError;

pub fn rpc_error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

impl From<SessionError> for ErrorObjectOwned {
    fn from(error: SessionError) -> Self {
        let code = match &error {
            SessionError::NotFound(_) => code::SESSION_NOT_FOUND,
            SessionError::CallNotFound(_) => code::CALL_NOT_FOUND,
            SessionError::RootChanged { .. } => code::WORKSPACE_CHANGED,
            SessionError::InvalidCwd { .. } | SessionError::InvalidParams(_) => {
                code::INVALID_PARAMS
            }
            SessionError::Stopped(_) | SessionError::ShuttingDown => code::SHUTTING_DOWN,
            SessionError::ModelNotConfigured(_) => code::MODEL_NOT_CONFIGURED,
            SessionError::Store(_) => code::STORE_ERROR,
            SessionError::Busy(_) => code::SESSION_BUSY,
            SessionError::CompressionFailed(_) => code::COMPRESSION_FAILED,
            SessionError::QuestionClosed(_) => code::QUESTION_CLOSED,
            SessionError::Checkpoints(_) => code::INTERNAL_ERROR,
            SessionError::RestoreConflict(conflicts) => {
                let data =
                    serde_json::json!({ "conflicts": crate::wire::restore_conflicts(conflicts) });
                return ErrorObjectOwned::owned(
                    code::RESTORE_CONFLICT,
                    error.to_string(),
                    Some(data),
                );
            }
        };
        rpc_error(code, error.to_string())
    }
}
