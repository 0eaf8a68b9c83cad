//! Editing a call's arguments in the person's editor (the `e` answer to a
//! confirmation, in `gemctl attach`, `call` and `chat` alike).

use serde_json::Value;

/// Opens the arguments in `$VISUAL`/`$EDITOR` and reads them back.
pub(crate) fn edit_args(args: &Value) -> Result<Value, String> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_owned());
    // A new file with an unpredictable name, created exclusively and
    // readable by us alone (another user cannot plant or read it).
    let file = tempfile::Builder::new()
        .prefix("gemctl-args-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    let path = file.path().to_path_buf();
    let text = serde_json::to_string_pretty(args).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .map_err(|e| format!("cannot run {editor}: {e}"))?;
    let edited = std::fs::read_to_string(&path).map_err(|e| e.to_string());
    drop(file);
    if !status.success() {
        return Err(format!("{editor} exited with {status}; nothing sent"));
    }
    serde_json::from_str(&edited?).map_err(|e| format!("the edited arguments are not JSON: {e}"))
}
