//! A stream's tags as the embedded Kinesis changes them: each change checked by the caller,
//! kept in the journal as the stream's whole set of tags, then made, under the tags' lock so
//! that two changes are kept in the order they are made. The tags themselves live in
//! [`crate::attachments`], by the stream's name and creation time.

use std::collections::BTreeMap;

use kinesis_source::SourceError;

use crate::embedded::{EmbeddedKinesis, not_kept};
use crate::journal::Change;

impl EmbeddedKinesis {
    /// Runs `change` on a copy of the stream's tags; when it succeeds and changed them, keeps
    /// the new set in the journal and makes it the stream's.
    pub(crate) fn change_stream_tags<E: From<SourceError>>(
        &self,
        stream: &str,
        operation: &str,
        change: impl FnOnce(&mut BTreeMap<String, String>) -> Result<(), E>,
    ) -> Result<(), E> {
        let found = self.stream(stream)?;
        let key = (found.name.to_string(), found.created);
        let mut all = self.attachments().tags();
        let before = all.get(&key).cloned().unwrap_or_default();
        let mut tags = before.clone();
        change(&mut tags)?;
        if tags == before {
            return Ok(());
        }
        if self.inner.journal.is_enabled() {
            let kept = Change::Tags {
                stream: found.name.to_string(),
                generation: found.generation,
                tags: tags.clone(),
            };
            self.inner
                .journal
                .append(&kept.encode())
                .map_err(|error| not_kept(operation, &found.name, &error))?;
        }
        if tags.is_empty() {
            all.remove(&key);
        } else {
            all.insert(key, tags);
        }
        Ok(())
    }
}
