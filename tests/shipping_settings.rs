//! The shipping template with the settings busy services add: `ParallelizationFactor: 4` and a
//! `FilterCriteria` on `carrier`, written into a copy of the repository's `template.yaml` and run
//! by the `kinesis-esm run` command as a user runs it (the shipping function through the Runtime
//! API). The filter keeps fedex shipments (a carrier the function does not know) and data that
//! is not JSON away from the function, so nothing is held and nothing is discarded: the shard's
//! checkpoint passes the filtered records, and the summary counts them.

use base64::Engine as _;
use end_to_end::{shipping_bootstrap, workspace_dir};
use kinesis_esm::template::{Template, TemplateOptions};
use serde_json::Value;

use end_to_end::run::{check_row, kinesis_esm_with};

const SETTINGS: &str = r#"            ParallelizationFactor: 4
            FilterCriteria:
              Filters:
                - Pattern: '{"data": {"carrier": [{"anything-but": ["fedex"]}]}}'
"#;

/// `template.yaml` with [`SETTINGS`] in its Kinesis event, its code found from anywhere.
fn shipping_template_with_settings() -> String {
    let original = std::fs::read_to_string(workspace_dir().join("template.yaml"))
        .expect("template.yaml is readable");
    let anchor = "            BatchSize: 100\n";
    assert!(
        original.contains(anchor),
        "template.yaml's event sets BatchSize: 100"
    );
    let code_uri = "\n      CodeUri: .\n";
    assert!(
        original.contains(code_uri),
        "template.yaml's function has CodeUri: ."
    );
    original
        .replacen(anchor, &format!("{anchor}{SETTINGS}"), 1)
        .replacen(
            code_uri,
            &format!("\n      CodeUri: {}\n", workspace_dir().display()),
            1,
        )
}

/// The records of the shipping function's sample events, and how many of them the filter keeps
/// out: fedex shipments and data that is not JSON.
fn sample_records() -> (usize, usize) {
    let folder = workspace_dir().join("functions/shipping/events");
    let mut records = 0;
    let mut filtered = 0;
    for entry in std::fs::read_dir(&folder).expect("the sample events are readable") {
        let text = std::fs::read_to_string(entry.expect("a sample event").path())
            .expect("a sample event is readable");
        let event: Value = serde_json::from_str(&text).expect("a sample event is JSON");
        for record in event["Records"].as_array().expect("an event has Records") {
            records += 1;
            let data = base64::engine::general_purpose::STANDARD
                .decode(
                    record["kinesis"]["data"]
                        .as_str()
                        .expect("a record has data"),
                )
                .expect("a record's data is base64");
            match serde_json::from_slice::<Value>(&data) {
                Ok(shipment) if shipment["carrier"] != "fedex" => {}
                _ => filtered += 1,
            }
        }
    }
    (records, filtered)
}

#[test]
fn the_shipping_template_carries_parallelization_and_a_carrier_filter() {
    let template = Template::parse(
        "template.yaml",
        &shipping_template_with_settings(),
        &TemplateOptions::default(),
    )
    .unwrap_or_else(|error| panic!("the template was refused: {error}"));
    let mapping = &template.functions[0].mappings[0];
    assert_eq!(mapping.parallelization_factor, 4);
    assert_eq!(mapping.filter_criteria.len(), 1);
}

/// `kinesis-esm run` over the copy: every sample record is acked, dropped or filtered out, none
/// held, none discarded, and the summary names the filtered ones.
#[tokio::test]
async fn the_main_command_with_parallelization_and_a_carrier_filter_holds_nothing() {
    shipping_bootstrap().await;
    let (records, filtered) = sample_records();
    assert!(
        filtered >= 2,
        "the samples hold fedex shipments and data that is not JSON"
    );
    let template = std::env::temp_dir().join(format!(
        "kinesis-esm-{}-shipping-settings.yaml",
        std::process::id()
    ));
    std::fs::write(&template, shipping_template_with_settings())
        .expect("the temporary folder is writable");
    let run = kinesis_esm_with(
        &template,
        &workspace_dir().join("functions/shipping/events"),
        &[],
    )
    .await;
    let _ = std::fs::remove_file(&template);
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(
        &run,
        &[
            ("state", "caught up"),
            ("records", &records.to_string()),
            ("filtered", &filtered.to_string()),
            ("discarded", "0"),
            ("held", "0"),
            ("retries", "0"),
        ],
    );
    let rows = run.shard_rows();
    let settled: usize = ["acked", "dropped", "filtered"]
        .iter()
        .map(|column| rows[0][*column].parse::<usize>().expect("a count"))
        .sum();
    assert_eq!(
        settled, records,
        "every record is acked, dropped or filtered out: {}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("on-failure destination"),
        "nothing is discarded: {}",
        run.stdout
    );
}
