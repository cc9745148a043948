//! An error with its sources, for messages.

use std::error::Error as StdError;
use std::fmt;

/// An error with its sources, `outer: inner: innermost`.
pub(super) struct ErrorChain<'a>(pub(super) &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(error) = source {
            write!(f, ": {error}")?;
            source = error.source();
        }
        Ok(())
    }
}
