//! Lambda Managed Instances: a function's `CapacityProviderConfig`, in SAM's spelling or
//! CloudFormation's (`docs/managed-instances.md`).

use super::error::Problem;
use super::fields::{Fault, Fields};
use super::intrinsic::{Resolver, render};

/// A function that runs on Lambda Managed Instances: several invocations at once in one
/// execution environment.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedInstances {
    /// The capacity provider's ARN (SAM's `Arn`, CloudFormation's `CapacityProviderArn`).
    pub capacity_provider_arn: String,
    /// `ExecutionEnvironmentMemoryGiBPerVCpu`, when set: read and checked, not emulated.
    pub memory_gib_per_vcpu: Option<f64>,
    /// `PerExecutionEnvironmentMaxConcurrency`: how many invocations one environment runs at
    /// once, given to its process as `AWS_LAMBDA_MAX_CONCURRENCY`.
    pub max_concurrency: u32,
}

/// `PerExecutionEnvironmentMaxConcurrency` when a template does not set it. AWS picks a default
/// by runtime and documents none for the OS-only runtimes a Rust function runs on: this is the
/// emulator's choice, and says so in `docs/managed-instances.md`.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 16;

/// The limits CloudFormation's resource specification gives.
const MAX_CONCURRENCY: std::ops::RangeInclusive<i64> = 1..=1600;
const MEMORY_GIB_PER_VCPU: std::ops::RangeInclusive<f64> = 2.0..=8.0;
const ARN_MAX_LENGTH: usize = 140;

/// The CloudFormation spelling's one key, under which its properties sit.
const CLOUDFORMATION_KEY: &str = "LambdaManagedInstancesCapacityProviderConfig";

/// The function's `CapacityProviderConfig`, or `None` without one.
pub(super) fn read(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<Option<ManagedInstances>, Fault> {
    if fields.get("CapacityProviderConfig").is_none() {
        return Ok(None);
    }
    let config = fields.nested("CapacityProviderConfig")?;
    // SAM writes the properties flat with `Arn`; CloudFormation nests them under one key and
    // calls the ARN `CapacityProviderArn`.
    let (inner, arn_name) = if config.get(CLOUDFORMATION_KEY).is_some() {
        config.check_names(&[CLOUDFORMATION_KEY])?;
        (config.nested(CLOUDFORMATION_KEY)?, "CapacityProviderArn")
    } else {
        (config, "Arn")
    };
    inner.check_names(&[
        arn_name,
        "ExecutionEnvironmentMemoryGiBPerVCpu",
        "PerExecutionEnvironmentMaxConcurrency",
    ])?;
    let capacity_provider_arn = inner
        .text(resolver, arn_name)?
        .ok_or_else(|| inner.missing(arn_name, " (the capacity provider's ARN)"))?;
    if !is_capacity_provider_arn(&capacity_provider_arn) {
        return Err(inner.fault(
            arn_name,
            Problem::NotAllowed {
                value: capacity_provider_arn,
                allowed: "a capacity provider's ARN, arn:aws:lambda:<region>:<account>:capacity-provider:<name>, such as !GetAtt MyCapacityProvider.Arn".to_owned(),
            },
        ));
    }
    let max_concurrency = inner
        .integer(
            resolver,
            "PerExecutionEnvironmentMaxConcurrency",
            MAX_CONCURRENCY,
        )?
        .map_or(DEFAULT_MAX_CONCURRENCY, |limit| limit as u32);
    let memory_gib_per_vcpu = memory_ratio(&inner, resolver)?;
    Ok(Some(ManagedInstances {
        capacity_provider_arn,
        memory_gib_per_vcpu,
        max_concurrency,
    }))
}

/// `ExecutionEnvironmentMemoryGiBPerVCpu`, from 2 to 8 as CloudFormation takes it.
fn memory_ratio(inner: &Fields<'_>, resolver: &Resolver<'_>) -> Result<Option<f64>, Fault> {
    let name = "ExecutionEnvironmentMemoryGiBPerVCpu";
    let Some(ratio) = inner.number(resolver, name)? else {
        return Ok(None);
    };
    if !MEMORY_GIB_PER_VCPU.contains(&ratio) {
        return Err(inner.fault(
            name,
            Problem::OutOfRange {
                value: inner.get(name).map_or_else(String::new, render),
                allowed: "2 to 8 (GiB per vCPU)".to_owned(),
            },
        ));
    }
    Ok(Some(ratio))
}

/// Whether `arn` has the shape of CloudFormation's pattern for a capacity provider's ARN:
/// `arn:<partition>:lambda:<region>:<12 digits>:capacity-provider:<name>`.
fn is_capacity_provider_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(7, ':').collect();
    let [
        "arn",
        partition,
        "lambda",
        region,
        account,
        "capacity-provider",
        name,
    ] = parts.as_slice()
    else {
        return false;
    };
    arn.len() <= ARN_MAX_LENGTH
        && partition.starts_with("aws")
        && !region.is_empty()
        && account.len() == 12
        && account.bytes().all(|byte| byte.is_ascii_digit())
        && !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::test_templates::{check_errors, read, with_function_extra};

    /// A template with a capacity provider `Fleet` (of `provider_type`) and one function with
    /// `config` as its `CapacityProviderConfig` (a flow map's content).
    fn template(provider_type: &str, config: &str) -> String {
        with_function_extra(&format!("CapacityProviderConfig: {{{config}}}"))
            + &format!(
                "  Fleet:\n    Type: {provider_type}\n    Properties: {{CapacityProviderName: fleet}}\n  \
                 Unnamed:\n    Type: AWS::Lambda::CapacityProvider\n"
            )
    }

    #[track_caller]
    fn check(provider_type: &str, config: &str, expected: Option<ManagedInstances>) {
        let template = read(&template(provider_type, config));
        assert_eq!(template.functions[0].managed_instances, expected);
    }

    /// Checks each `(config, expected)` case: a function with that `CapacityProviderConfig` is
    /// refused with a message containing `expected`.
    #[track_caller]
    fn check_config_errors(cases: &[(&str, &str)]) {
        check_errors(
            |config| template("AWS::Serverless::CapacityProvider", config),
            cases,
        );
    }

    fn managed(arn: &str, memory: Option<f64>, max_concurrency: u32) -> Option<ManagedInstances> {
        Some(ManagedInstances {
            capacity_provider_arn: arn.to_owned(),
            memory_gib_per_vcpu: memory,
            max_concurrency,
        })
    }

    const FLEET_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:capacity-provider:fleet";

    #[test]
    fn sams_spelling_with_getatt_of_a_sam_capacity_provider() {
        check(
            "AWS::Serverless::CapacityProvider",
            "Arn: !GetAtt Fleet.Arn, ExecutionEnvironmentMemoryGiBPerVCpu: 4.0, PerExecutionEnvironmentMaxConcurrency: 8",
            managed(FLEET_ARN, Some(4.0), 8),
        );
    }

    #[test]
    fn cloudformations_spelling_with_getatt_of_a_lambda_capacity_provider() {
        check(
            "AWS::Lambda::CapacityProvider",
            "LambdaManagedInstancesCapacityProviderConfig: {CapacityProviderArn: !GetAtt Fleet.Arn, PerExecutionEnvironmentMaxConcurrency: 1600}",
            managed(FLEET_ARN, None, 1600),
        );
    }

    #[test]
    fn ref_gives_the_name_and_an_unnamed_provider_gets_the_stacks_name() {
        check(
            "AWS::Lambda::CapacityProvider",
            "Arn: !Sub 'arn:aws:lambda:${AWS::Region}:${AWS::AccountId}:capacity-provider:${Fleet}'",
            managed(FLEET_ARN, None, DEFAULT_MAX_CONCURRENCY),
        );
        check(
            "AWS::Lambda::CapacityProvider",
            "Arn: !GetAtt Unnamed.Arn, PerExecutionEnvironmentMaxConcurrency: '3'",
            managed(
                "arn:aws:lambda:us-east-1:123456789012:capacity-provider:local-Unnamed",
                None,
                3,
            ),
        );
    }

    #[test]
    fn a_literal_arn_may_name_a_provider_outside_the_template() {
        let arn = "arn:aws:lambda:eu-west-1:210987654321:capacity-provider:shared_fleet-1";
        check(
            "AWS::Serverless::CapacityProvider",
            &format!("Arn: {arn}, PerExecutionEnvironmentMaxConcurrency: 1"),
            managed(arn, None, 1),
        );
    }

    #[test]
    fn out_of_range_values_are_refused_naming_resource_and_property() {
        check_config_errors(&[
            (
                "Arn: !GetAtt Fleet.Arn, PerExecutionEnvironmentMaxConcurrency: 0",
                "ShippingFunction",
            ),
            (
                "Arn: !GetAtt Fleet.Arn, PerExecutionEnvironmentMaxConcurrency: 1601",
                "CapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency",
            ),
            (
                "LambdaManagedInstancesCapacityProviderConfig: {CapacityProviderArn: !GetAtt Fleet.Arn, ExecutionEnvironmentMemoryGiBPerVCpu: 16}",
                "ExecutionEnvironmentMemoryGiBPerVCpu",
            ),
            (
                "Arn: !GetAtt Fleet.Arn, ExecutionEnvironmentMemoryGiBPerVCpu: 1.5",
                "2 to 8",
            ),
        ]);
    }

    #[test]
    fn a_missing_or_malformed_arn_and_mixed_spellings_are_refused() {
        check_config_errors(&[
            ("PerExecutionEnvironmentMaxConcurrency: 4", "Arn"),
            (
                "Arn: arn:aws:lambda:us-east-1:123456789012:function:f",
                "a capacity provider's ARN",
            ),
            ("Arn: !Ref Shipments", "a capacity provider's ARN"),
            (
                "LambdaManagedInstancesCapacityProviderConfig: {Arn: !GetAtt Fleet.Arn}",
                "Arn",
            ),
            ("Arn: !GetAtt Fleet.Name", "has no attribute Name"),
        ]);
    }
}
