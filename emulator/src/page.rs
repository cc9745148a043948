//! The live page `kinesis-esm run` serves at `/` on its listen address: the mappings, their
//! shards' lineage and phases, held records, throughput and the function's log lines, pushed as
//! they change, and forms to publish a record and to split or merge a shard.
//!
//! The page is one HTML file, one script and one style sheet, embedded in the binary
//! (`assets/`): no build step, nothing to install, and it works offline. It reads one stream of
//! server-sent events (`GET /page/events`, `events.rs`); what each event carries is made by pure
//! functions in `view.rs`. The actions go through [`PageActions`], which `run` implements with the
//! code of the `put` and `reshard` commands.
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /page/page.js`, `GET /page/page.css` | its script and style sheet |
//! | `GET /page/events` | the event stream: `status` (every mapping, as JSON), `log` (a function line), `missed` (lines a slow page missed) |
//! | `POST /page/put` | `{"stream", "partitionKey", "data"}` (`data` is JSON text): publishes a record |
//! | `POST /page/reshard` | `{"stream", "split": SHARD}` or `{"stream", "merge": [SHARD, ADJACENT]}` |
//!
//! An action answers `{"message": ...}`, or a 400 with `{"error": ...}` saying what is wrong.
//! The actions take JSON bodies only (`Content-Type: application/json`), which a browser sends
//! cross-origin only after a CORS preflight this server never allows: another site cannot post
//! them from a visitor's browser.

mod actions;
mod events;
mod live_page;
mod routes;
pub(crate) mod view;

pub use actions::{PageActions, Reshard};
pub use live_page::LivePage;
pub use routes::serves;
