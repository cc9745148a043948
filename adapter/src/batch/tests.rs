//! Reading events: every way the adapter is handed one finds what serde_json finds.

use std::time::{Duration, SystemTime};

use aws_lambda_events::kinesis::KinesisEvent;

use super::*;

/// The sample event of Lambda's documentation (also what `write_event` must write for it).
pub(crate) const EVENT: &str = r#"{"Records":[{
    "kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"1",
        "sequenceNumber":"49590338271490256608559692538361571095921575989136588898",
        "data":"SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==","approximateArrivalTimestamp":1545084650.987},
    "eventSource":"aws:kinesis","eventVersion":"1.0",
    "eventID":"shardId-000000000006:49590338271490256608559692538361571095921575989136588898",
    "eventName":"aws:kinesis:record",
    "invokeIdentityArn":"arn:aws:iam::123456789012:role/lambda-role",
    "awsRegion":"us-east-2",
    "eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream"}]}"#;

#[test]
fn reads_the_event_lambda_sends() {
    let batch = KinesisBatch::from_json(EVENT.as_bytes()).unwrap();
    assert_eq!(batch.len(), 1);
    let record = batch.record(0).unwrap();
    assert_eq!(record.shard_id(), "shardId-000000000006");
    assert_eq!(
        record.sequence_number(),
        "49590338271490256608559692538361571095921575989136588898"
    );
    assert_eq!(record.partition_key(), "1");
    assert_eq!(record.data_base64(), "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==");
    assert_eq!(
        record.event_source_arn(),
        "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream"
    );
    assert_eq!(
        record.approximate_arrival(),
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_545_084_650_987)
    );
}

#[track_caller]
fn check_arrival(json_value: &str, expected_millis: i64) {
    let event = EVENT.replace("1545084650.987", json_value);
    let batch = KinesisBatch::from_json(event.as_bytes()).unwrap();
    assert_eq!(batch.records[0].arrival_millis, expected_millis);
}

#[test]
fn arrival_timestamps_keep_their_fraction() {
    // `aws_lambda_events` reads `.5` as 5 ms; it is half a second.
    check_arrival("1480641523.5", 1_480_641_523_500);
    check_arrival("1480641523.05", 1_480_641_523_050);
    check_arrival("1480641523.477", 1_480_641_523_477);
    check_arrival("1480641523", 1_480_641_523_000);
    check_arrival("\"1480641523.477\"", 1_480_641_523_477);
}

#[test]
fn escaped_text_is_unescaped() {
    let event = EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\"b\u00e9""#);
    let batch = KinesisBatch::from_json(event.as_bytes()).unwrap();
    assert_eq!(batch.record(0).unwrap().partition_key(), "a\"bé");
}

#[test]
fn a_missing_sequence_number_is_an_error_that_says_so() {
    let event = EVENT.replace(r#""sequenceNumber""#, r#""sequence""#);
    let error = KinesisBatch::from_json(event.as_bytes()).unwrap_err();
    assert!(
        error.to_string().contains("missing field `sequenceNumber`"),
        "{error}"
    );
}

#[test]
fn an_event_without_records_is_an_error() {
    let error = KinesisBatch::from_json(br#"{"records":[]}"#).unwrap_err();
    assert!(
        error.to_string().contains("missing field `Records`"),
        "{error}"
    );
}

#[test]
fn converts_from_the_aws_lambda_events_type() {
    let event: KinesisEvent = serde_json::from_str(EVENT).unwrap();
    let batch = KinesisBatch::from(event);
    let record = batch.record(0).unwrap();
    assert_eq!(record.data_base64(), "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==");
    assert_eq!(record.shard_id(), "shardId-000000000006");
}

/// The fields of every record as the adapter read them.
fn read(batch: &KinesisBatch) -> Vec<(String, String, String, String, String, i64)> {
    batch
        .records()
        .map(|record| {
            (
                record.shard_id().to_owned(),
                record.sequence_number().to_owned(),
                record.partition_key().to_owned(),
                record.data_base64().to_owned(),
                record.event_source_arn().to_owned(),
                record.spans.arrival_millis,
            )
        })
        .collect()
}

/// The same fields read from a `serde_json::Value` of the event: what the scanner must find.
fn reference(json: &str) -> Vec<(String, String, String, String, String, i64)> {
    let event: serde_json::Value = serde_json::from_str(json).unwrap();
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    let seconds = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => text.trim().parse::<f64>().unwrap(),
        other => other.as_f64().unwrap_or_default(),
    };
    event["Records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| {
            let kinesis = &record["kinesis"];
            let event_id = text(&record["eventID"]);
            let shard = event_id.rsplit_once(':').map_or("", |(shard, _)| shard);
            (
                shard.to_owned(),
                text(&kinesis["sequenceNumber"]),
                text(&kinesis["partitionKey"]),
                text(&kinesis["data"]),
                text(&record["eventSourceARN"]),
                (seconds(&kinesis["approximateArrivalTimestamp"]) * 1000.0).round() as i64,
            )
        })
        .collect()
}

/// Reads `json` in every way the adapter can be handed it, and checks each finds what a
/// `serde_json::Value` holds.
#[track_caller]
fn check(json: &str) {
    let expected = reference(json);
    let from_slice = KinesisBatch::from_json(json.as_bytes()).unwrap();
    assert_eq!(read(&from_slice), expected, "from_slice");
    let deserializer = &mut serde_json::Deserializer::from_slice(json.as_bytes());
    let as_the_runtime_does: KinesisBatch = serde_path_to_error::deserialize(deserializer).unwrap();
    assert_eq!(
        read(&as_the_runtime_does),
        expected,
        "through serde_path_to_error"
    );
    let from_reader: KinesisBatch = serde_json::from_reader(json.as_bytes()).unwrap();
    assert_eq!(read(&from_reader), expected, "from_reader");
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    let from_value: KinesisBatch = serde_json::from_value(value).unwrap();
    assert_eq!(read(&from_value), expected, "from_value");
    let (through_the_layer, _) = through_the_layer(json.as_bytes());
    assert_eq!(
        read(&through_the_layer.unwrap()),
        expected,
        "through ReadBatchLayer"
    );
}

/// Reads `json` as `KinesisAdapter::run` does: `ReadBatchLayer` in front of a service that
/// deserialises the invocation's body as `lambda_runtime`'s does (`serde_path_to_error` over
/// serde_json, inside `call`). Also says whether the layer had read the batch itself.
fn through_the_layer(json: &[u8]) -> (Result<KinesisBatch, String>, bool) {
    use futures_util::FutureExt as _;
    use tower::{Layer as _, Service as _};

    let runtime_like = tower::service_fn(|invocation: lambda_runtime::LambdaInvocation| {
        let pre_read = pre_read::is_filled();
        let deserializer = &mut serde_json::Deserializer::from_slice(&invocation.body);
        let batch = serde_path_to_error::deserialize::<_, KinesisBatch>(deserializer)
            .map_err(|error| error.to_string());
        std::future::ready(Ok::<_, std::convert::Infallible>((batch, pre_read)))
    });
    let mut service = ReadBatchLayer.layer(runtime_like);
    let invocation = lambda_runtime::LambdaInvocation {
        parts: http::Response::new(()).into_parts().0,
        body: json.to_vec().into(),
        context: lambda_runtime::Context::default(),
    };
    let Ok(answer) = service
        .call(invocation)
        .now_or_never()
        .expect("a ready future");
    assert!(pre_read::take().is_none(), "no batch outlives its call");
    answer
}

#[test]
fn the_layer_reads_events_laid_out_as_lambda_writes_them_and_leaves_others_to_serde_json() {
    assert!(through_the_layer(EVENT.as_bytes()).1, "Lambda's own event");
    let written = written_event(&["a", "b", "shipment-7"]);
    assert!(
        through_the_layer(written.as_bytes()).1,
        "the emulator's event"
    );
    let escaped = EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\"b""#);
    let (batch, pre_read) = through_the_layer(escaped.as_bytes());
    assert!(!pre_read, "a string with an escape is not plain");
    assert_eq!(batch.unwrap().record(0).unwrap().partition_key(), "a\"b");
    let (batch, pre_read) = through_the_layer(b"\xff");
    assert!(!pre_read && batch.is_err(), "not UTF-8");
}

#[test]
fn the_layer_leaves_the_body_to_a_service_of_another_payload() {
    use futures_util::FutureExt as _;
    use tower::{Layer as _, Service as _};

    let value_reader = tower::service_fn(|invocation: lambda_runtime::LambdaInvocation| {
        let value: serde_json::Value = serde_json::from_slice(&invocation.body).unwrap();
        std::future::ready(Ok::<_, std::convert::Infallible>(value))
    });
    let mut service = ReadBatchLayer.layer(value_reader);
    let invocation = lambda_runtime::LambdaInvocation {
        parts: http::Response::new(()).into_parts().0,
        body: EVENT.as_bytes().to_vec().into(),
        context: lambda_runtime::Context::default(),
    };
    let Ok(value) = service.call(invocation).now_or_never().unwrap();
    assert_eq!(
        value,
        serde_json::from_str::<serde_json::Value>(EVENT).unwrap()
    );
    assert!(
        pre_read::take().is_none(),
        "the unread batch is not left for the next one"
    );
}

#[test]
fn the_scanner_finds_what_serde_json_finds() {
    check(EVENT);
    // As Lambda and the emulator write events: the layout the scanner matches whole.
    check(&written_event(&["a", "b", "shipment-7"]));
    check(&written_event(&["clé 🔑", "k"]));
    // That layout up to a point, then not: the record is read field by field.
    for (from, to) in [
        (r#""eventSourceARN":"#, r#""extra":1,"eventSourceARN":"#),
        (
            r#""approximateArrivalTimestamp":1767225600.123"#,
            r#""approximateArrivalTimestamp":"1767225600.123""#,
        ),
        (r#""partitionKey":"a""#, r#""partitionKey":"a""#),
        (r#""eventName":"#, r#" "eventName":"#),
        (r#""awsRegion":"us-east-1""#, r#""awsRegion":null"#),
    ] {
        let event = written_event(&["a", "b"]);
        assert!(event.contains(from), "{from}");
        check(&event.replacen(from, to, 1));
    }
    check(r#"{"Records":[]}"#);
    check(" { \"Records\" : [ ] } ");
    // Pretty-printed, with other keys around `Records`.
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(EVENT).unwrap())
            .unwrap();
    check(&pretty);
    check(&format!(
        r#"{{"before":[1,{{"a":"]"}}],{},"after":null}}"#,
        &EVENT[1..EVENT.len() - 1]
    ));
    // Several records, fields in another order (as the SAM CLI writes them).
    check(
        r#"{"Records":[
        {"eventSourceARN":"arn:s","eventID":"shardId-000000000001:2","kinesis":
          {"data":"AA==","sequenceNumber":"2","partitionKey":"k","approximateArrivalTimestamp":1428537600.0}},
        {"kinesis":{"approximateArrivalTimestamp":1428537600,"partitionKey":"k2","sequenceNumber":"3","data":""},
          "eventID":"shardId-000000000001:3","eventSourceARN":"arn:s"}]}"#,
    );
}

/// `text` with the `n`th occurrence (from 0) of `from` replaced by `to`.
fn replace_nth(text: &str, n: usize, from: &str, to: &str) -> String {
    let (at, _) = text
        .match_indices(from)
        .nth(n)
        .unwrap_or_else(|| panic!("no occurrence {n} of {from}"));
    format!("{}{to}{}", &text[..at], &text[at + from.len()..])
}

#[test]
fn a_record_unlike_the_one_before_in_any_shared_piece_is_read_as_it_is() {
    // The second of three records differs from the first where Lambda writes the same
    // text for every record; the third is like the first again.
    let event = written_event(&["a", "bb", "c"]);
    for (from, to) in [
        (
            r#""kinesisSchemaVersion":"1.0""#,
            r#""kinesisSchemaVersion":"1.1""#,
        ),
        ("shardId-000000000003:", "shardId-000000000004:"),
        ("shardId-000000000003:4959", "shardId-000000000003:4959:"),
        ("shardId-000000000003:", "shardId-000000000003"),
        ("shardId-000000000003:", ":"),
        (
            r#""eventName":"aws:kinesis:record""#,
            r#""eventName":"other""#,
        ),
        (r#""awsRegion":"us-east-1""#, r#""awsRegion":"us-east-2""#),
        ("stream/orders", "stream/other"),
        (r#"stream/orders"}"#, r#"stream/orders","extra":1}"#),
        (":1767225600.124", r#":"1767225600.124""#),
    ] {
        // The first occurrence in the event is the second record's, for the arrival time.
        let second = usize::from(!from.starts_with(":1767"));
        let changed = replace_nth(&event, second, from, to);
        assert_ne!(changed, event, "{from}");
        check(&changed);
        check_same_either_way(changed.as_bytes());
    }
}

/// One record whose `kinesis` object is `kinesis` and whose other fields are `rest`.
fn record(kinesis: &str, rest: &str) -> String {
    format!(r#"{{"Records":[{{"kinesis":{{{kinesis}}}{rest}}}]}}"#)
}

const KINESIS: &str = r#""partitionKey":"p","sequenceNumber":"1","data":"AA==""#;

#[test]
fn escapes_are_read_wherever_they_are() {
    check(&record(
        r#""partitionKey":"a\"b\\c\u00e9\n","sequenceNumber":"1","data":"AA\u003d\u003d""#,
        r#","eventID":"shard\u0049d-1:1","eventSourceARN":"arn:\"x\"""#,
    ));
    // A key spelt with escapes is still that key.
    check(&record(
        r#""partition\u004bey":"k","sequenceNumber":"1","data":"AA==""#,
        r#","event\u0049D":"s:1""#,
    ));
    // Raw UTF-8 needs no escape.
    check(&record(
        r#""partitionKey":"clé 🔑","sequenceNumber":"1","data":"AA==""#,
        "",
    ));
}

#[test]
fn unknown_fields_of_any_shape_are_skipped() {
    check(&record(
        &format!(
            r#""extra":{{"nested":["}}","]",{{"q":"\""}}],"n":-1.5e3}},{KINESIS},"t":true,"f":false,"z":null"#
        ),
        r#","eventSource":"aws:kinesis","deep":[[[]],{}],"eventID":"s:1""#,
    ));
    check(&record(
        &format!(r#"{KINESIS},"encryptionType":"NONE""#),
        "",
    ));
}

#[test]
fn optional_fields_may_be_missing_or_null() {
    check(&record(KINESIS, ""));
    check(&record(KINESIS, r#","eventID":null,"eventSourceARN":null"#));
    check(&record(KINESIS, r#","eventID":"no-colon""#));
}

#[test]
fn arrival_timestamps_of_every_form() {
    for timestamp in [
        "1480641523",
        "1480641523.5",
        "1480641523.05",
        "1480641523.477",
        "1480641523.4775",
        "1480641523.0",
        "1.480641523477e9",
        "0",
        "0.001",
        "\"1480641523.477\"",
        "\" 1480641523.5 \"",
        "99999999999999999999",
    ] {
        check(&record(
            &format!(r#"{KINESIS},"approximateArrivalTimestamp":{timestamp}"#),
            "",
        ));
    }
}

#[track_caller]
fn check_error(json: &str, message: &str) {
    let error = KinesisBatch::from_json(json.as_bytes()).unwrap_err();
    assert!(
        error.to_string().contains(message),
        "{error} should say {message:?}"
    );
}

#[test]
fn events_that_are_not_kinesis_events_are_errors_that_say_why() {
    check_error(
        r#"{"Records":{}}"#,
        "invalid type: an object, expected an array of Kinesis event records",
    );
    check_error(
        r#"{"Records":null}"#,
        "expected an array of Kinesis event records",
    );
    check_error(
        r#"{"Records":[1]}"#,
        "invalid type: a number, expected a Kinesis event record",
    );
    // A missing `partitionKey` is a keyless record, read as the empty key.
    check_error(&record("", ""), "missing field `sequenceNumber`");
    check_error(
        r#"{"Records":[{"eventID":"s:1"}]}"#,
        "missing field `kinesis`",
    );
    check_error(
        &record(r#""partitionKey":"p","data":"AA==""#, ""),
        "missing field `sequenceNumber`",
    );
    check_error(
        &record(r#""partitionKey":"p","sequenceNumber":"1""#, ""),
        "missing field `data`",
    );
    check_error(
        &record(r#""partitionKey":7,"sequenceNumber":"1","data":"AA==""#, ""),
        "expected a string for `partitionKey`",
    );
    check_error(
        r#"{"Records":[{"kinesis":5}]}"#,
        "expected the `kinesis` object",
    );
    check_error(
        &record(&format!(r#"{KINESIS},"data":"AA==""#), ""),
        "duplicate field `data`",
    );
    check_error(
        &record(KINESIS, r#","eventID":"a:1","eventID":"b:1""#),
        "duplicate field `eventID`",
    );
    check_error(
        &record(
            &format!(r#"{KINESIS},"approximateArrivalTimestamp":true"#),
            "",
        ),
        "expected epoch seconds",
    );
    check_error(
        &record(
            &format!(r#"{KINESIS},"approximateArrivalTimestamp":"soon""#),
            "",
        ),
        "invalid value: \"soon\"",
    );
    check_error(
        r#"{"Records":[],"Records":[]}"#,
        "duplicate field `Records`",
    );
    check_error(r#"{"Records":[}"#, "expected value");
}

#[test]
fn the_scanner_refuses_text_serde_json_would_not_have_passed_it() {
    // serde_json checks the text before the scanner sees it; should anything else get
    // through, the scanner answers with an error, never a panic or an endless loop.
    for text in [
        "",
        "[",
        r#"[{"kinesis":{"data":"abc"#,
        r#"[{"kinesis":{"data":"abc"#,
        r#"[{"x":é}]"#,
        r#"[{"x":[1,}]"#,
        r#"[{"kinesis":{}"#,
    ] {
        assert!(scan::records(text).is_err(), "{text:?}");
    }
}

#[test]
fn the_error_path_points_into_records() {
    let deserializer = &mut serde_json::Deserializer::from_slice(b"{\"Records\":[{}]}");
    let error = serde_path_to_error::deserialize::<_, KinesisBatch>(deserializer).unwrap_err();
    assert_eq!(error.path().to_string(), "Records");
    assert!(
        error
            .inner()
            .to_string()
            .contains("missing field `kinesis`")
    );
}

/// Reads `json` with `from_json` and with serde_json alone: the two must agree, on the
/// batch or on the error.
#[track_caller]
fn check_same_either_way(json: &[u8]) {
    let direct = KinesisBatch::from_json(json);
    let through_serde_json = serde_json::from_slice::<KinesisBatch>(json);
    match (direct, through_serde_json) {
        (Ok(direct), Ok(general)) => {
            assert_eq!(
                read(&direct),
                read(&general),
                "{}",
                String::from_utf8_lossy(json)
            );
            assert_eq!(direct.text, general.text);
        }
        (Err(direct), Err(general)) => assert_eq!(direct.to_string(), general.to_string()),
        (direct, general) => panic!(
            "from_json gave {direct:?}, serde_json {general:?}, for {}",
            String::from_utf8_lossy(json)
        ),
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(json);
    let as_the_runtime_does = serde_path_to_error::deserialize::<_, KinesisBatch>(deserializer)
        .map_err(|error| error.to_string());
    match (through_the_layer(json).0, as_the_runtime_does) {
        (Ok(layered), Ok(general)) => {
            assert_eq!(layered.text, general.text);
            assert_eq!(read(&layered), read(&general));
        }
        (Err(layered), Err(general)) => assert_eq!(layered, general),
        (layered, general) => panic!(
            "through the layer {layered:?}, as the runtime does {general:?}, for {}",
            String::from_utf8_lossy(json)
        ),
    }
}

fn is_plain(json: &str) -> bool {
    KinesisBatch::from_plain_json(json).is_some()
}

/// Events with several records as the emulator writes them.
fn written_event(partition_keys: &[&str]) -> String {
    let mut out = Vec::new();
    crate::wire::write_event(
        &mut out,
        &crate::wire::EventSource {
            stream_arn: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
            shard_id: "shardId-000000000003",
            region: "us-east-1",
            invoke_identity_arn: "arn:aws:iam::123456789012:role/esm",
        },
        partition_keys
            .iter()
            .enumerate()
            .map(|(index, partition_key)| crate::wire::EventRecord {
                sequence_number: [
                    "49590338271490256608559692538361571095921575989136588898",
                    "49590338271490256608559692538361571095921575989136588899",
                ][index % 2],
                partition_key,
                data: b"{\"id\":1}",
                approximate_arrival_millis: 1_767_225_600_123 + index as i64,
            }),
    );
    String::from_utf8(out).unwrap()
}

#[test]
fn events_as_lambda_writes_them_are_read_in_one_pass() {
    let events = [
        written_event(&["a", "b", "shipment-7"]),
        written_event(&["clé 🔑"]),
        EVENT.to_owned(),
        r#"{"Records":[]}"#.to_owned(),
        " { \"Records\" : [ ] } \n".to_owned(),
        record(&format!(r#"{KINESIS},"encryptionType":"NONE""#), ""),
        record(
            KINESIS,
            r#","eventID":null,"eventSourceARN":null,"extra":-0.5e+3"#,
        ),
        record(
            &format!(r#"{KINESIS},"approximateArrivalTimestamp":"1480641523.477""#),
            r#","t":true,"f":false"#,
        ),
    ];
    for json in &events {
        assert!(is_plain(json), "{json}");
        check_same_either_way(json.as_bytes());
    }
}

#[test]
fn any_other_text_is_left_to_serde_json() {
    let event = written_event(&["a"]);
    let not_plain = [
        // Escapes and control characters in strings.
        EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\"b""#),
        EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\u0041""#),
        EVENT.replace(r#""partitionKey":"1""#, "\"partitionKey\":\"a\tb\""),
        EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\qb""#),
        EVENT.replace(r#""eventName""#, r#""event\u004eame""#),
        // Literals that are not JSON's.
        record(KINESIS, r#","eventID":nul"#),
        record(KINESIS, r#","eventID":nulll"#),
        record(KINESIS, r#","eventSource":True"#),
        // Objects and arrays where values are stepped over, well-formed or not.
        record(KINESIS, r#","extra":{"a":[1,2]}"#),
        record(KINESIS, r#","extra":[1 2]"#),
        record(KINESIS, r#","extra":{"a" "b"}"#),
        // Structure.
        record(KINESIS, ","),
        r#"{"Records":[{"kinesis":{"partitionKey":"p","sequenceNumber":"1","data":"AA=="}},]}"#
            .to_owned(),
        r#"{"Records":[],"Records":[]}"#.to_owned(),
        r#"{"other":1,"Records":[]}"#.to_owned(),
        r#"{"Records":null}"#.to_owned(),
        r#"{"records":[]}"#.to_owned(),
        r#"[{"Records":[]}]"#.to_owned(),
        format!("{event}x"),
        format!("{event}}}"),
        event[..event.len() - 1].to_owned(),
        event[..event.len() / 2].to_owned(),
        String::new(),
    ];
    // Numbers outside JSON's grammar.
    let not_numbers = ["01", "1.", ".5", "1e", "+1", "-"].map(|number| {
        record(
            &format!(r#"{KINESIS},"approximateArrivalTimestamp":{number}"#),
            "",
        )
    });
    for json in not_plain.iter().chain(&not_numbers) {
        assert!(!is_plain(json), "{json}");
        check_same_either_way(json.as_bytes());
    }
    // Bytes that are not UTF-8 never reach the one-pass reader.
    let mut bytes = written_event(&["k"]).into_bytes();
    let key = bytes.windows(3).position(|w| w == b"\"k\"").unwrap();
    bytes[key + 1] = 0xff;
    check_same_either_way(&bytes);
}
