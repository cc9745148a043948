//! The page's state: the mappings it shows, where held records are read, and the actions.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::actions::PageActions;
use super::view::{self, Settings};
use esm_engine::config::MappingConfig;
use esm_engine::invoke::Invoker;
use esm_engine::mapping::MappingStatus;
use kinesis_source::ShardSource;

/// A mapping the page shows.
pub(super) struct Shown {
    pub(super) settings: Settings,
    pub(super) status: watch::Receiver<MappingStatus>,
    /// Its function's invoker, asked for the environments in flight whenever the page is sent
    /// the status (a function on Managed Instances); `None` when the page shows only the status.
    pub(super) invoker: Option<Arc<dyn Invoker>>,
}

/// The page's state: the mappings it shows, where held records are read, and the actions.
pub struct LivePage {
    board: Mutex<Vec<Shown>>,
    /// How many mappings the board holds: open pages wait on it to pick a new one up at once.
    shown: watch::Sender<usize>,
    pub(super) source: Arc<dyn ShardSource>,
    pub(super) actions: Arc<dyn PageActions>,
}

impl LivePage {
    /// A page showing no mapping yet, reading held records from `source`.
    pub fn new(source: Arc<dyn ShardSource>, actions: Arc<dyn PageActions>) -> Arc<Self> {
        Arc::new(Self {
            board: Mutex::default(),
            shown: watch::Sender::new(0),
            source,
            actions,
        })
    }

    /// Shows the mapping of `config`, whose status `status` follows. Open pages pick it up at
    /// once.
    pub fn show(&self, config: &MappingConfig, status: watch::Receiver<MappingStatus>) {
        self.push(config, status, None);
    }

    /// [`LivePage::show`], with the environments `invoker` runs and their invocations in flight
    /// beside the status (for a function on Managed Instances).
    pub fn show_function(
        &self,
        config: &MappingConfig,
        status: watch::Receiver<MappingStatus>,
        invoker: Arc<dyn Invoker>,
    ) {
        self.push(config, status, Some(invoker));
    }

    fn push(
        &self,
        config: &MappingConfig,
        status: watch::Receiver<MappingStatus>,
        invoker: Option<Arc<dyn Invoker>>,
    ) {
        let mut board = self.board();
        board.push(Shown {
            settings: view::settings(config).into(),
            status,
            invoker,
        });
        self.shown.send_replace(board.len());
    }

    pub(super) fn board(&self) -> MutexGuard<'_, Vec<Shown>> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes whenever a mapping is shown.
    pub(super) fn mappings_shown(&self) -> watch::Receiver<usize> {
        self.shown.subscribe()
    }
}
