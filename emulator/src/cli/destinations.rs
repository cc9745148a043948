//! Which destination `run` hands a mapping's discarded batches to: the SDK's endpoint for the
//! destination's service when one is given (`--destination-endpoint`, else the SDK's
//! `AWS_ENDPOINT_URL_SQS` / `_SNS` / `_S3`), else a local folder (under `--state-dir`, else
//! [`DEFAULT_FOLDER`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use esm_engine::config::MappingConfig;
use esm_engine::destination::folder::{DEFAULT_FOLDER, FolderDestination};
use esm_engine::destination::sdk::SdkDestination;
use esm_engine::destination::{Destination, DestinationKind};

/// Where records go when no endpoint is given: `<state dir>/destinations`, else
/// [`DEFAULT_FOLDER`].
pub(super) fn folder_root(state_dir: Option<&Path>) -> PathBuf {
    state_dir.map_or_else(
        || PathBuf::from(DEFAULT_FOLDER),
        |dir| dir.join("destinations"),
    )
}

/// The endpoint a destination of `kind` is sent to: the flag, else the SDK's variable for the
/// service (`lookup` reads the environment).
pub(super) fn endpoint_for(
    kind: DestinationKind,
    flag: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    flag.map(str::to_owned).or_else(|| {
        lookup(&format!("AWS_ENDPOINT_URL_{}", kind.service())).filter(|url| !url.is_empty())
    })
}

/// The destination of `config`'s discarded batches, if it has one kinesis-esm delivers to. An
/// endpoint's queue, topic or bucket is reached in `region`, the run's: where `run` made it.
pub(super) async fn destination_for(
    config: &MappingConfig,
    flag: Option<&str>,
    region: &str,
    state_dir: Option<&Path>,
) -> anyhow::Result<Option<Arc<dyn Destination>>> {
    let Some(destination) = &config.on_failure_destination else {
        return Ok(None);
    };
    let Some(target) = config.on_failure_target.clone() else {
        tracing::warn!(
            function = %config.function_name,
            destination = %destination,
            "the on-failure destination is not an SQS queue, SNS topic or S3 bucket: the \
             records of discarded batches are only kept in the run's status"
        );
        return Ok(None);
    };
    let destination: Arc<dyn Destination> =
        match endpoint_for(target.kind, flag, |name| std::env::var(name).ok()) {
            Some(endpoint) => Arc::new(
                SdkDestination::connect(
                    target,
                    &super::connection::connection_to(&endpoint).with_region(region),
                    endpoint,
                )
                .await?,
            ),
            None => Arc::new(FolderDestination::new(folder_root(state_dir), target)),
        };
    tracing::info!(
        function = %config.function_name,
        "discarded batches' records go to {}",
        destination.describe()
    );
    Ok(Some(destination))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_services_variable() {
        let lookup = |name: &str| (name == "AWS_ENDPOINT_URL_SQS").then(|| "http://env".to_owned());
        assert_eq!(
            endpoint_for(DestinationKind::Sqs, Some("http://flag"), lookup).as_deref(),
            Some("http://flag")
        );
        assert_eq!(
            endpoint_for(DestinationKind::Sqs, None, lookup).as_deref(),
            Some("http://env")
        );
        assert_eq!(endpoint_for(DestinationKind::S3, None, lookup), None);
    }

    #[test]
    fn records_go_under_the_state_dir_when_there_is_one() {
        assert_eq!(
            folder_root(Some(Path::new("state"))),
            Path::new("state/destinations")
        );
        assert_eq!(folder_root(None), Path::new(DEFAULT_FOLDER));
    }
}
