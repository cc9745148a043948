//! Reading template files from disk: the workspace's fixtures under `tests/templates/reader/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::destination::{DestinationKind, Target};
use kinesis_esm::template::{
    Architecture, FunctionResource, StreamMode, StreamResource, Template, TemplateError,
};

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/templates/reader").join(name)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the emulator crate sits in the workspace")
        .to_owned()
}

#[test]
fn the_shipping_fixture_reads_into_exact_configs() {
    let path = fixture("shipping.yaml");
    let template = Template::load(&path).unwrap();

    assert_eq!(template.path, path);
    assert_eq!(
        template.streams,
        vec![StreamResource {
            logical_id: "Shipments".into(),
            name: "shipments".into(),
            shard_count: 1,
            retention: Duration::from_secs(24 * 3600),
            mode: StreamMode::Provisioned,
            max_record_size_kib: 1024,
            auto_distribution: false,
        }]
    );
    let mut mapping = MappingConfig::new(
        "ShippingFunction",
        "shipments",
        StartingPosition::TrimHorizon,
    );
    mapping.batch_size = 10;
    mapping.report_batch_item_failures = true;
    mapping.maximum_retry_attempts = Some(3);
    mapping.bisect_batch_on_function_error = true;
    mapping.on_failure_destination = Some("ShipmentFailures".into());
    // The fixture's on-failure destination: its queue resource `ShipmentFailures`.
    mapping.on_failure_target = Some(Target {
        kind: DestinationKind::Sqs,
        name: "ShipmentFailures".into(),
    });
    mapping.function_timeout = Duration::from_secs(10);
    assert_eq!(
        template.functions,
        vec![FunctionResource {
            logical_id: "ShippingFunction".into(),
            function_name: "ShippingFunction".into(),
            code_uri: "../../../functions/shipping".into(),
            code_dir: workspace_root().join("functions/shipping"),
            binary: "bootstrap".into(),
            build_method: Some("rust-cargolambda".into()),
            handler: "bootstrap".into(),
            runtime: "provided.al2023".into(),
            architecture: Architecture::Arm64,
            timeout: Duration::from_secs(10),
            memory_size: 256,
            environment: BTreeMap::from([
                ("RUST_LOG".to_owned(), "info".to_owned()),
                ("SHIPMENTS_STREAM".to_owned(), "shipments".to_owned()),
            ]),
            logging: kinesis_esm::config::LoggingConfig::default(),
            managed_instances: None,
            mappings: vec![mapping],
        }]
    );
    assert!(
        template.functions[0].code_dir.join("Cargo.toml").is_file(),
        "CodeUri points at the shipping crate"
    );
}

#[test]
fn a_json_template_with_long_forms_reads_like_a_yaml_one() {
    let template = Template::load(fixture("long-forms.json")).unwrap();
    let stream = &template.streams[0];
    assert_eq!(
        (
            stream.name.as_str(),
            stream.shard_count,
            stream.retention,
            stream.mode
        ),
        (
            "orders-dev",
            4,
            Duration::from_secs(48 * 3600),
            StreamMode::OnDemand
        )
    );
    let function = &template.functions[0];
    assert_eq!(function.function_name, "billing-dev");
    assert_eq!(function.code_dir, fixture("billing"));
    assert_eq!(
        function.environment,
        BTreeMap::from([
            (
                "ORDERS_ARN".to_owned(),
                "arn:aws:kinesis:us-east-1:123456789012:stream/orders-dev".to_owned()
            ),
            ("ORDERS_NAME".to_owned(), "orders-dev".to_owned()),
            ("REGION".to_owned(), "us-east-1".to_owned()),
        ])
    );
    assert_eq!(
        function.mappings,
        vec![MappingConfig::new(
            "billing-dev",
            "orders-dev",
            StartingPosition::Latest
        )]
    );
}

#[test]
fn invalid_yaml_in_a_file_gives_the_file_line_and_column() {
    let path = fixture("broken.yaml");
    let error = Template::load(&path).unwrap_err();
    assert!(
        matches!(
            error,
            TemplateError::Syntax {
                position: Some((6, 6)),
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}:6:6: invalid YAML: ", path.display())),
        "{message}"
    );
}

#[test]
fn a_missing_file_is_named() {
    let path = fixture("absent.yaml");
    let error = Template::load(&path).unwrap_err();
    assert!(matches!(error, TemplateError::Read { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot read the template: ", path.display())),
        "{error}"
    );
    // The command line prints an error with its sources: the reason is in the message only.
    assert!(std::error::Error::source(&error).is_none(), "{error:?}");
}
