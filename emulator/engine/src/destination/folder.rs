//! The default destination when no endpoint is given: a local folder holding one JSON file per
//! discarded batch, in the shape the configured destination would receive (the S3 shape, with
//! the event's `payload`, for a bucket), so the records can be read again (`kinesis-esm failures`).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::delivery::{DeliveryError, Destination, FailedBatch};
use super::shape::{file_name, metadata_text, s3_body};
use super::target::{DestinationKind, Target};

/// Where records go when no `--state-dir` says otherwise.
pub const DEFAULT_FOLDER: &str = ".kinesis-esm/destinations";

/// A folder destination: `<root>/<shard id>/<time>-<uuid>.json`.
#[derive(Debug, Clone)]
pub struct FolderDestination {
    root: PathBuf,
    target: Target,
}

impl FolderDestination {
    /// Records for `target` (which gives their shape) kept under `root`.
    pub fn new(root: impl Into<PathBuf>, target: Target) -> Self {
        Self {
            root: root.into(),
            target,
        }
    }

    /// The folder the records go to.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[async_trait]
impl Destination for FolderDestination {
    async fn deliver(&self, batch: &FailedBatch) -> Result<String, DeliveryError> {
        let folder = self.root.join(&batch.shard_id);
        let path = folder.join(file_name(
            batch.discarded_at,
            &uuid::Uuid::new_v4().to_string(),
        ));
        let text = match self.target.kind {
            DestinationKind::S3 => s3_body(&batch.record, &batch.event),
            DestinationKind::Sqs | DestinationKind::Sns => metadata_text(&batch.record),
        };
        let failed = |error: std::io::Error| {
            DeliveryError(format!(
                "writing the on-failure record to {}: {error}",
                path.display()
            ))
        };
        tokio::fs::create_dir_all(&folder).await.map_err(failed)?;
        // Written aside and renamed, so a reader never sees half a record.
        let partial = path.with_extension("json.partial");
        tokio::fs::write(&partial, text).await.map_err(failed)?;
        tokio::fs::rename(&partial, &path).await.map_err(failed)?;
        Ok(path.display().to_string())
    }

    fn describe(&self) -> String {
        format!(
            "the folder {} (for the {})",
            self.root.display(),
            self.target
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    fn batch() -> FailedBatch {
        FailedBatch {
            record: serde_json::json!({"version": "1.0"}),
            event: r#"{"Records":[]}"#.to_owned(),
            mapping_uuid: "m".to_owned(),
            shard_id: "shardId-000000000000".to_owned(),
            discarded_at: SystemTime::now(),
        }
    }

    fn target(kind: DestinationKind) -> Target {
        Target {
            kind,
            name: "failures".to_owned(),
        }
    }

    #[tokio::test]
    async fn one_file_per_record_in_the_shard_folder() {
        let dir = std::env::temp_dir().join(format!("kinesis-esm-folder-{}", uuid::Uuid::new_v4()));
        let folder = FolderDestination::new(&dir, target(DestinationKind::Sqs));
        let first = folder.deliver(&batch()).await.expect("delivered");
        let second = folder.deliver(&batch()).await.expect("delivered");
        assert_ne!(first, second);
        let shard = dir.join("shardId-000000000000");
        assert_eq!(std::fs::read_dir(&shard).expect("folder").count(), 2);
        let text = std::fs::read_to_string(&first).expect("file");
        assert_eq!(text, r#"{"version":"1.0"}"#);
        std::fs::remove_dir_all(dir).expect("cleaned");
    }

    #[tokio::test]
    async fn a_bucket_record_keeps_the_payload() {
        let dir = std::env::temp_dir().join(format!("kinesis-esm-folder-{}", uuid::Uuid::new_v4()));
        let folder = FolderDestination::new(&dir, target(DestinationKind::S3));
        let path = folder.deliver(&batch()).await.expect("delivered");
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(text.contains(r#""payload":"{\"Records\":[]}""#), "{text}");
        std::fs::remove_dir_all(dir).expect("cleaned");
    }

    #[tokio::test]
    async fn an_unwritable_folder_is_a_delivery_error_naming_the_path() {
        let file = std::env::temp_dir().join(format!("kinesis-esm-file-{}", uuid::Uuid::new_v4()));
        std::fs::write(&file, "not a folder").expect("written");
        let folder = FolderDestination::new(&file, target(DestinationKind::Sqs));
        let error = folder
            .deliver(&batch())
            .await
            .expect_err("a file is no folder");
        assert!(
            error.0.starts_with("writing the on-failure record to ")
                && error.0.contains(&file.display().to_string()),
            "{error}"
        );
        std::fs::remove_file(file).expect("cleaned");
    }
}
