//! Reading the properties of one map of the template (a resource's `Properties`, an event's
//! `Properties`, `Globals.Function`...), with errors that say where the property is.

use std::ops::RangeInclusive;

use serde_yaml_ng::{Mapping, Value};

use super::error::{Location, Problem, Section};
use super::intrinsic::{Resolver, render};
use crate::suggest::did_you_mean_hint;

/// A problem found at a property, before the file's path is attached to it.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) location: Location,
    pub(super) problem: Problem,
}

/// A [`Failure`], boxed: it travels up through many `Result`s and is made at most once.
pub(super) type Fault = Box<Failure>;

/// The properties of one map, and where that map sits in the template.
#[derive(Clone)]
pub(super) struct Fields<'a> {
    map: &'a Mapping,
    section: Section,
    event: Option<String>,
    /// Prepended to property names for nested maps, such as `DestinationConfig.OnFailure.`.
    prefix: String,
}

impl<'a> Fields<'a> {
    pub(super) fn new(map: &'a Mapping, section: Section, event: Option<String>) -> Self {
        Self {
            map,
            section,
            event,
            prefix: String::new(),
        }
    }

    /// The map under `name`, whose properties are named `name.Property` in errors; an empty
    /// map when `name` is absent.
    pub(super) fn nested(&self, name: &str) -> Result<Fields<'a>, Fault> {
        static EMPTY: std::sync::LazyLock<Mapping> = std::sync::LazyLock::new(Mapping::new);
        let map = match self.map.get(name) {
            None => &*EMPTY,
            Some(Value::Mapping(map)) => map,
            Some(other) => {
                return Err(self.fault(
                    name,
                    Problem::NotAllowed {
                        value: render(other),
                        allowed: "a map of properties".to_owned(),
                    },
                ));
            }
        };
        Ok(Fields {
            map,
            section: self.section.clone(),
            event: self.event.clone(),
            prefix: format!("{}{name}.", self.prefix),
        })
    }

    /// The map at `index` of the list under `name`, whose properties are named
    /// `name[index].Property` in errors.
    pub(super) fn element(&self, name: &str, index: usize) -> Result<Fields<'a>, Fault> {
        let element = format!("{name}[{index}]");
        let item = match self.map.get(name) {
            Some(Value::Sequence(items)) => items.get(index),
            _ => None,
        };
        match item {
            Some(Value::Mapping(map)) => Ok(Fields {
                map,
                section: self.section.clone(),
                event: self.event.clone(),
                prefix: format!("{}{element}.", self.prefix),
            }),
            other => Err(self.fault(
                &element,
                Problem::NotAllowed {
                    value: other.map_or_else(String::new, render),
                    allowed: "a map of properties".to_owned(),
                },
            )),
        }
    }

    /// The raw value of a property.
    pub(super) fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name)
    }

    /// The map itself.
    pub(super) fn map(&self) -> &'a Mapping {
        self.map
    }

    /// Where a property of this map is.
    pub(super) fn location(&self, name: &str) -> Location {
        Location {
            section: self.section.clone(),
            event: self.event.clone(),
            property: format!("{}{name}", self.prefix),
        }
    }

    /// A problem with a property of this map.
    pub(super) fn fault(&self, name: &str, problem: Problem) -> Fault {
        Box::new(Failure {
            location: self.location(name),
            problem,
        })
    }

    /// Refuses any property that is neither `known` nor `accepted`: a misspelt name must not be
    /// silently ignored.
    pub(super) fn check_names(&self, known: &[&str]) -> Result<(), Fault> {
        for key in self.map.keys() {
            let name = key.as_str().map_or_else(|| render(key), str::to_owned);
            if !known.contains(&name.as_str()) {
                return Err(self.fault(
                    &name,
                    Problem::Unknown {
                        known: known.join(", "),
                        suggestion: did_you_mean_hint(&name, known.iter().copied()),
                    },
                ));
            }
        }
        Ok(())
    }

    /// Refuses a property that is present at all, for behaviour kinesis-esm does not reproduce.
    pub(super) fn refuse(&self, name: &str, supported: &str) -> Result<(), Fault> {
        match self.get(name) {
            Some(value) => Err(self.fault(
                name,
                Problem::NotReproduced {
                    value: render(value),
                    supported: supported.to_owned(),
                },
            )),
            None => Ok(()),
        }
    }

    /// A problem that says the value is not resolvable.
    pub(super) fn unresolved(&self, name: &str, reason: String) -> Fault {
        let value = self.get(name).map_or_else(String::new, render);
        self.fault(name, Problem::Unresolved { value, reason })
    }

    /// A problem that says the value is not one of the allowed ones.
    pub(super) fn not_allowed(&self, name: &str, allowed: &str) -> Fault {
        let value = self.get(name).map_or_else(String::new, render);
        self.fault(
            name,
            Problem::NotAllowed {
                value,
                allowed: allowed.to_owned(),
            },
        )
    }

    /// A problem that says the property is absent.
    pub(super) fn missing(&self, name: &str, hint: &str) -> Fault {
        self.fault(
            name,
            Problem::Missing {
                hint: hint.to_owned(),
            },
        )
    }

    /// The property's value with intrinsic functions resolved, when present.
    fn scalar(&self, resolver: &Resolver<'_>, name: &str) -> Result<Option<Value>, Fault> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => resolver
                .scalar(value)
                .map(Some)
                .map_err(|reason| self.unresolved(name, reason)),
        }
    }

    /// A text property, when present.
    pub(super) fn text(
        &self,
        resolver: &Resolver<'_>,
        name: &str,
    ) -> Result<Option<String>, Fault> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => resolver
                .text(value)
                .map(Some)
                .map_err(|reason| self.unresolved(name, reason)),
        }
    }

    /// A whole number within `range`, when present. CloudFormation takes numbers written as
    /// strings too, so `"10"` reads as 10.
    pub(super) fn integer(
        &self,
        resolver: &Resolver<'_>,
        name: &str,
        range: RangeInclusive<i64>,
    ) -> Result<Option<i64>, Fault> {
        let Some(value) = self.scalar(resolver, name)? else {
            return Ok(None);
        };
        let number = match &value {
            Value::Number(number) => number.as_i64(),
            Value::String(text) => text.trim().parse::<i64>().ok(),
            _ => None,
        };
        let allowed = format!("{} to {}", range.start(), range.end());
        match number {
            Some(number) if range.contains(&number) => Ok(Some(number)),
            Some(_) => Err(self.fault(
                name,
                Problem::OutOfRange {
                    value: render(&value),
                    allowed,
                },
            )),
            None => Err(self.fault(
                name,
                Problem::NotAllowed {
                    value: render(&value),
                    allowed: format!("a whole number from {allowed}"),
                },
            )),
        }
    }

    /// A number that may have a fraction, when present.
    pub(super) fn number(&self, resolver: &Resolver<'_>, name: &str) -> Result<Option<f64>, Fault> {
        let Some(value) = self.scalar(resolver, name)? else {
            return Ok(None);
        };
        let number = match &value {
            Value::Number(number) => number.as_f64(),
            Value::String(text) => text.trim().parse::<f64>().ok(),
            _ => None,
        };
        match number {
            Some(number) if number.is_finite() => Ok(Some(number)),
            _ => Err(self.fault(
                name,
                Problem::NotAllowed {
                    value: render(&value),
                    allowed: "a number".to_owned(),
                },
            )),
        }
    }

    /// A boolean, when present: `true`/`false`, or those words as strings in any case, as
    /// CloudFormation takes them.
    pub(super) fn boolean(
        &self,
        resolver: &Resolver<'_>,
        name: &str,
    ) -> Result<Option<bool>, Fault> {
        let Some(value) = self.scalar(resolver, name)? else {
            return Ok(None);
        };
        match &value {
            Value::Bool(flag) => Ok(Some(*flag)),
            Value::String(text) if text.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Value::String(text) if text.eq_ignore_ascii_case("false") => Ok(Some(false)),
            _ => Err(self.fault(
                name,
                Problem::NotAllowed {
                    value: render(&value),
                    allowed: "true or false".to_owned(),
                },
            )),
        }
    }
}
