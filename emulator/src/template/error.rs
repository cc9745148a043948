//! What goes wrong while reading a template, always said with the file, the resource and the
//! property.

use std::fmt;
use std::path::PathBuf;

/// A template kinesis-esm cannot run as written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// The file could not be read.
    // The reason is said in the message and not exposed as the error's `source`: the command
    // line prints an error with its chain of sources, which said the reason twice.
    #[error("{}: cannot read the template: {reason}", .path.display())]
    Read {
        /// The template's path, as given.
        path: PathBuf,
        /// Why reading failed.
        reason: std::io::Error,
    },
    /// The file is not valid YAML.
    #[error("{}{}: invalid YAML: {message}", .path.display(), LineColumn(*.position))]
    Syntax {
        /// The template's path, as given.
        path: PathBuf,
        /// Where the parser stopped: line and column, both counted from 1.
        position: Option<(usize, usize)>,
        /// What the parser said.
        message: String,
    },
    /// The template is YAML, but a property holds something kinesis-esm refuses.
    #[error("{}: {location} {problem}", .path.display())]
    Invalid {
        /// The template's path, as given.
        path: PathBuf,
        /// The section, resource, event and property at fault (boxed to keep errors small).
        location: Box<Location>,
        /// What is wrong with it.
        problem: Problem,
    },
}

impl TemplateError {
    /// The property at fault, when the template is YAML but holds something refused.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Self::Invalid { location, .. } => Some(location),
            Self::Read { .. } | Self::Syntax { .. } => None,
        }
    }
}

/// Writes `:line:column` when the parser gave a position.
struct LineColumn(Option<(usize, usize)>);

impl fmt::Display for LineColumn {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some((line, column)) => write!(formatter, ":{line}:{column}"),
            None => Ok(()),
        }
    }
}

/// The part of the template a property belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Section {
    /// A top-level section of the template, such as `Transform` or `Resources`.
    Template,
    /// An entry of `Parameters`.
    Parameter(String),
    /// `Globals.Function`.
    Globals,
    /// A resource, by logical id.
    Resource(String),
}

/// Where in the template a problem lies: `resource ShippingFunction, event Shipments: property
/// BatchSize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The section or resource.
    pub section: Section,
    /// The event of a function, for the properties of a Kinesis event.
    pub event: Option<String>,
    /// The property, dotted when nested (`DestinationConfig.OnFailure.Destination`).
    pub property: String,
}

impl fmt::Display for Location {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.section {
            Section::Template => formatter.write_str("template")?,
            Section::Parameter(name) => write!(formatter, "parameter {name}")?,
            Section::Globals => formatter.write_str("Globals.Function")?,
            Section::Resource(logical_id) => write!(formatter, "resource {logical_id}")?,
        }
        if let Some(event) = &self.event {
            write!(formatter, ", event {event}")?;
        }
        write!(formatter, ": property {}", self.property)
    }
}

/// What is wrong with a property. Its message continues the sentence that names the property,
/// so it reads `property BatchSize = 0 is out of range (allowed: 1 to 10000)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The property is required and absent.
    #[error("is required{hint}")]
    Missing {
        /// More to say, starting with a space or left empty.
        hint: String,
    },
    /// The property name is not one kinesis-esm knows in this place: often a typo.
    #[error("is not a property kinesis-esm knows here (known: {known}){suggestion}")]
    Unknown {
        /// The names accepted in this place.
        known: String,
        /// `; did you mean NAME?` when a known name is near the one written, else empty.
        suggestion: String,
    },
    /// The property changes behaviour that kinesis-esm does not reproduce, so running the
    /// template locally would silently differ from Lambda.
    #[error("= {value} is not reproduced by kinesis-esm ({supported})")]
    NotReproduced {
        /// The value as written.
        value: String,
        /// What kinesis-esm does reproduce, or why not.
        supported: String,
    },
    /// A number outside the range Lambda, Kinesis or CloudFormation accept.
    #[error("= {value} is out of range (allowed: {allowed})")]
    OutOfRange {
        /// The value as written.
        value: String,
        /// The allowed range.
        allowed: String,
    },
    /// A setting Lambda takes for other event sources only.
    #[error(
        "is a setting of {sources} event sources; Lambda takes none of it for a Kinesis stream"
    )]
    OtherEventSource {
        /// The event sources that take it.
        sources: String,
    },
    /// A value that is not one of the allowed ones, or not of the expected kind.
    #[error("= {value} is not allowed (allowed: {allowed})")]
    NotAllowed {
        /// The value as written.
        value: String,
        /// What is allowed instead.
        allowed: String,
    },
    /// An intrinsic function or reference whose value kinesis-esm cannot know.
    #[error("= {value} cannot be resolved: {reason}")]
    Unresolved {
        /// The value as written.
        value: String,
        /// Why not.
        reason: String,
    },
    /// A `FilterCriteria` pattern Lambda would refuse.
    #[error("= {value} is not a valid filter pattern: {reason}")]
    FilterPattern {
        /// The pattern as written.
        value: String,
        /// What is wrong, and where in the pattern.
        reason: String,
    },
    /// The property contradicts another part of the template.
    #[error("= {value} {reason}")]
    Conflict {
        /// The value as written.
        value: String,
        /// The contradiction.
        reason: String,
    },
}
