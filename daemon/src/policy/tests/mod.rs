//! Table tests of the policy engine: rule loading, evaluation, shell
//! splitting and the bypass table.

mod common;
mod engine;
mod load_table;
mod robustness;
mod schema_061;
mod shell_classes;
mod shell_places;
mod shell_table;
mod sources;
mod split;
