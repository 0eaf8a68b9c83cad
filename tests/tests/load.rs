//! Load, quick variant: 8 clients, each with its own yolo session and a
//! subscription to it, make 50 `wait: true` calls each (read_file, glob,
//! search_file_content, `echo hi`): no errors, every subscriber sees a
//! gapless seq and each call's final snapshot exactly once, and memory
//! comes back down. The full run (64 x 1,000) is `tests/benches/load.rs`.

use geminid_tests::load::{self, mib};
use geminid_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_fifty_calls_each_lose_nothing() {
    let d = TestDaemon::start();
    let report = load::run(&d, 8, 50).await;
    println!("{}", report.summary());
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    assert_eq!(report.calls, 8 * 50);
    // sessionCreated + (executing, final) per call at least.
    assert!(report.events >= 8 * (1 + 2 * 50), "{}", report.events);
    // Deleting the sessions gives back what the run took, but for what
    // the allocator keeps around the few objects that outlive it (about
    // 5 MiB in a debug build; 11 MiB before events left sled).
    let grown = report.rss_after_delete.saturating_sub(report.rss_warm);
    assert!(
        grown < 16 * 1024 * 1024,
        "VmRSS warm {} -> {} after the sessions were deleted (idle {}, peak {})",
        mib(report.rss_warm),
        mib(report.rss_after_delete),
        mib(report.rss_idle),
        mib(report.rss_peak)
    );
    let status = d.client().await.status().await.expect("status");
    assert_eq!(status.sessions_loaded, 0, "{status:?}");
}
