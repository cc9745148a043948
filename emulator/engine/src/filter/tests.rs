//! Every example of AWS's filtering documentation as a case: pattern, record data, delivered or
//! not. The section of `docs/filtering.md` each group checks is named above it.

use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;

use serde_json::Value;

use super::{FilterCriteria, MAX_PATTERN_CHARS, Pattern, matching};
use kinesis_source::Record;

fn record(data: &[u8]) -> Record {
    Record {
        sequence_number: "49590338271490256608559692538361571095921575989136588898"
            .parse()
            .expect("a sequence number"),
        partition_key: "1_chat".into(),
        data: Bytes::copy_from_slice(data),
        approximate_arrival: UNIX_EPOCH + Duration::from_millis(1_545_084_650_987),
    }
}

/// Whether a mapping whose only filter is `pattern` delivers a record with this data.
#[track_caller]
fn check(pattern: &str, data: &str, delivered: bool) {
    check_filters(&[pattern], data.as_bytes(), delivered);
}

#[track_caller]
fn check_filters(patterns: &[&str], data: &[u8], delivered: bool) {
    let criteria = FilterCriteria::new(
        patterns
            .iter()
            .map(|pattern| {
                Pattern::parse(pattern).unwrap_or_else(|error| panic!("{pattern}: {error}"))
            })
            .collect(),
    );
    let record = record(data);
    assert_eq!(
        criteria.matches(&record),
        delivered,
        "patterns {patterns:?}, data {}",
        String::from_utf8_lossy(data)
    );
    // The same verdict over the data read whole: the projection drops nothing a pattern reads.
    let whole = serde_json::from_slice::<Value>(data).ok();
    let fields = matching::RecordFields::new(&record, whole.as_ref());
    assert_eq!(
        criteria.is_empty()
            || criteria
                .patterns
                .iter()
                .any(|pattern| matching::matches(pattern, &fields)),
        delivered,
        "patterns {patterns:?} over the whole data {}",
        String::from_utf8_lossy(data)
    );
}

/// That the pattern is refused, with a message naming `message` (the place and the reason).
#[track_caller]
fn check_refused(pattern: &str, message: &str) {
    match Pattern::parse(pattern) {
        Ok(parsed) => panic!("{pattern} was accepted: {parsed:?}"),
        Err(error) => assert_eq!(error.to_string(), message, "{pattern}"),
    }
}

/// Checks each `(pattern, message)` case as [`check_refused`] does.
#[track_caller]
fn check_each_refused(cases: &[(&str, &str)]) {
    for (pattern, message) in cases {
        check_refused(pattern, message);
    }
}

// "Kinesis patterns": the Kinesis page's own example and the data format matrix.

#[test]
fn the_kinesis_page_example_delivers_buy_orders_only() {
    let pattern = r#"{"data": {"order": {"type": ["buy"]}}}"#;
    check(
        pattern,
        r#"{"record": 12345, "order": {"type": "buy", "stock": "ANYCO", "quantity": 1000}}"#,
        true,
    );
    check(
        pattern,
        r#"{"record": 1, "order": {"type": "sell"}}"#,
        false,
    );
    check(
        r#"{"data": {"event_type": ["function_1"]}}"#,
        r#"{"event_type": "function_1", "message": "foo"}"#,
        true,
    );
    check(
        r#"{"data": {"event_type": ["function_2"]}}"#,
        r#"{"event_type": "function_1", "message": "foo"}"#,
        false,
    );
}

#[test]
fn data_that_is_not_json_is_dropped_by_a_data_pattern_but_metadata_patterns_still_apply() {
    check(r#"{"data": {"k": [{"exists": false}]}}"#, "hello", false);
    check_filters(&[r#"{"data": {"k": ["v"]}}"#], &[0xff, 0xfe], false);
    // A KPL aggregate read with a standard iterator is protobuf, not JSON ("Aggregated records").
    let aggregate = [0xf3, 0x89, 0x9a, 0xc2, 0x0a, 0x01, 0x61];
    check_filters(
        &[r#"{"data": {"k": [{"exists": false}]}}"#],
        &aggregate,
        false,
    );
    // A pattern without `data` filters on the metadata only, JSON or not.
    check(r#"{"partitionKey": [{"prefix": "1_"}]}"#, "hello", true);
    check(
        r#"{"partitionKey": ["CHAT", "RAISE_HAND"]}"#,
        "hello",
        false,
    );
    check(r#"{"kinesisSchemaVersion": ["1.0"]}"#, "{}", true);
    check(
        r#"{"approximateArrivalTimestamp": [{"numeric": [">", 1545084650, "<", 1545084651]}]}"#,
        "{}",
        true,
    );
    check(
        r#"{"sequenceNumber": [{"prefix": "4959033827"}], "data": {"carrier": ["dhl"]}}"#,
        r#"{"carrier": "dhl"}"#,
        true,
    );
}

#[test]
fn json_scalars_are_json_but_have_no_fields() {
    check(r#"{"data": ["abc"]}"#, r#""abc""#, true);
    check(r#"{"data": {"k": [{"exists": true}]}}"#, "42", false);
}

// "Operators": the operator table of the general filtering page, one example each.

#[test]
fn null_and_empty() {
    let null = r#"{"data": {"UserID": [null]}}"#;
    check(null, r#"{"UserID": null}"#, true);
    check(null, r#"{}"#, false);
    check(null, r#"{"UserID": "null"}"#, false);
    check(null, r#"{"UserID": []}"#, false);
    let empty = r#"{"data": {"LastName": [""]}}"#;
    check(empty, r#"{"LastName": ""}"#, true);
    check(empty, r#"{"LastName": " "}"#, false);
}

#[test]
fn equals_and_equals_ignore_case() {
    let equals = r#"{"data": {"Name": ["Alice"]}}"#;
    check(equals, r#"{"Name": "Alice"}"#, true);
    check(equals, r#"{"Name": "alice"}"#, false);
    let ignore_case = r#"{"data": {"Name": [{"equals-ignore-case": "alice"}]}}"#;
    check(ignore_case, r#"{"Name": "ALICE"}"#, true);
    check(ignore_case, r#"{"Name": "Alicia"}"#, false);
    check(ignore_case, r#"{"Name": 1}"#, false);
    check(r#"{"data": {"flag": [true]}}"#, r#"{"flag": true}"#, true);
    check(
        r#"{"data": {"flag": [true]}}"#,
        r#"{"flag": "true"}"#,
        false,
    );
}

#[test]
fn and_or_of_values_and_or_of_fields() {
    let and = r#"{"data": {"Location": ["New York"], "Day": ["Monday"]}}"#;
    check(and, r#"{"Location": "New York", "Day": "Monday"}"#, true);
    check(and, r#"{"Location": "New York", "Day": "Tuesday"}"#, false);
    let or_values = r#"{"data": {"PaymentType": ["Credit", "Debit"]}}"#;
    check(or_values, r#"{"PaymentType": "Debit"}"#, true);
    check(or_values, r#"{"PaymentType": "Cash"}"#, false);
    let or_fields = r#"{"data": {"$or": [{"Location": ["New York"]}, {"Day": ["Monday"]}]}}"#;
    check(
        or_fields,
        r#"{"Location": "Boston", "Day": "Monday"}"#,
        true,
    );
    check(
        or_fields,
        r#"{"Location": "New York", "Day": "Friday"}"#,
        true,
    );
    check(
        or_fields,
        r#"{"Location": "Boston", "Day": "Friday"}"#,
        false,
    );
    // `$or` next to fields: the fields and one alternative.
    let mixed = r#"{"data": {"kind": ["a"], "$or": [{"x": [1]}, {"y": [2]}]}}"#;
    check(mixed, r#"{"kind": "a", "y": 2}"#, true);
    check(mixed, r#"{"kind": "b", "y": 2}"#, false);
    // `$or` at the top, across data and metadata.
    let top = r#"{"$or": [{"partitionKey": ["x"]}, {"data": {"k": ["v"]}}]}"#;
    check(top, r#"{"k": "v"}"#, true);
    check(top, r#"{"k": "w"}"#, false);
}

#[test]
fn anything_but() {
    let not = r#"{"data": {"Weather": [{"anything-but": ["Raining"]}]}}"#;
    check(not, r#"{"Weather": "Sunny"}"#, true);
    check(not, r#"{"Weather": "Raining"}"#, false);
    check(not, r#"{}"#, false);
    check(not, r#"{"Weather": null}"#, true);
    check(not, r#"{"Weather": 3}"#, true);
    let number = r#"{"data": {"code": [{"anything-but": 123}]}}"#;
    check(number, r#"{"code": 123}"#, false);
    check(number, r#"{"code": 124}"#, true);
    check(number, r#"{"code": "123"}"#, true);
}

#[test]
fn anything_but_prefix_suffix_ignore_case_and_wildcard() {
    let prefix = r#"{"data": {"state": [{"anything-but": {"prefix": "init"}}]}}"#;
    check(prefix, r#"{"state": "post-init"}"#, true);
    check(prefix, r#"{"state": "init-x"}"#, false);
    check(prefix, r#"{"state": 5}"#, true);
    let prefixes = r#"{"data": {"state": [{"anything-but": {"prefix": ["init", "pre"]}}]}}"#;
    check(prefixes, r#"{"state": "pre-init"}"#, false);
    check(prefixes, r#"{"state": "done"}"#, true);
    let suffix = r#"{"data": {"FileName": [{"anything-but": {"suffix": ".txt"}}]}}"#;
    check(suffix, r#"{"FileName": "a.png"}"#, true);
    check(suffix, r#"{"FileName": "a.txt"}"#, false);
    let ignore_case =
        r#"{"data": {"Name": [{"anything-but": {"equals-ignore-case": ["alice", "BOB"]}}]}}"#;
    check(ignore_case, r#"{"Name": "ALICE"}"#, false);
    check(ignore_case, r#"{"Name": "bob"}"#, false);
    check(ignore_case, r#"{"Name": "Carol"}"#, true);
    let wildcard = r#"{"data": {"path": [{"anything-but": {"wildcard": "*/lib/*"}}]}}"#;
    check(wildcard, r#"{"path": "/usr/lib/x"}"#, false);
    check(wildcard, r#"{"path": "/usr/bin/x"}"#, true);
    check(wildcard, r#"{"path": 7}"#, true);
}

#[test]
fn numeric_equals_and_ranges() {
    let equals = r#"{"data": {"Price": [{"numeric": ["=", 100]}]}}"#;
    check(equals, r#"{"Price": 100}"#, true);
    check(equals, r#"{"Price": 100.0}"#, true);
    check(equals, r#"{"Price": "100"}"#, false);
    let range = r#"{"data": {"Temperature": [{"numeric": [">", 50, "<=", 60]}]}}"#;
    check(range, r#"{"Temperature": 55}"#, true);
    check(range, r#"{"Temperature": 60}"#, true);
    check(range, r#"{"Temperature": 50}"#, false);
    check(range, r#"{"Temperature": 60.5}"#, false);
    check(range, r#"{"Temperature": "55"}"#, false);
    check(range, r#"{"Temperature": null}"#, false);
    let above = r#"{"data": {"Price": [{"numeric": [">", 10]}]}}"#;
    check(above, r#"{"Price": 10.5}"#, true);
    check(above, r#"{"Price": -3}"#, false);
}

#[test]
fn numbers_without_numeric_compare_by_their_json_form() {
    // "300, 300.0, and 3.0e2 are not considered equal" (Lambda's operator table).
    check(r#"{"data": {"n": [300]}}"#, r#"{"n": 300}"#, true);
    check(r#"{"data": {"n": [300]}}"#, r#"{"n": 300.0}"#, false);
    check(r#"{"data": {"n": [300.5]}}"#, r#"{"n": 300.5}"#, true);
}

#[test]
fn exists_and_does_not_exist() {
    let exists = r#"{"data": {"ProductName": [{"exists": true}]}}"#;
    check(exists, r#"{"ProductName": "x"}"#, true);
    check(exists, r#"{"ProductName": null}"#, true);
    check(exists, r#"{}"#, false);
    // Only leaves exist: an object at the path does not.
    check(
        r#"{"data": {"person": {"address": [{"exists": true}]}}}"#,
        r#"{"person": {"address": {"city": "Anytown"}}}"#,
        false,
    );
    let absent = r#"{"data": {"ProductName": [{"exists": false}]}}"#;
    check(absent, r#"{}"#, true);
    check(absent, r#"{"ProductName": "x"}"#, false);
    // A missing parent is a missing field.
    check(
        r#"{"data": {"a": {"b": [{"exists": false}]}}}"#,
        r#"{"c": 1}"#,
        true,
    );
}

#[test]
fn begins_with_and_ends_with() {
    let prefix = r#"{"data": {"Region": [{"prefix": "us-"}]}}"#;
    check(prefix, r#"{"Region": "us-east-1"}"#, true);
    check(prefix, r#"{"Region": "eu-west-1"}"#, false);
    check(
        r#"{"data": {"Region": [{"prefix": ""}]}}"#,
        r#"{"Region": "x"}"#,
        true,
    );
    let suffix = r#"{"data": {"FileName": [{"suffix": ".png"}]}}"#;
    check(suffix, r#"{"FileName": "image.png"}"#, true);
    check(suffix, r#"{"FileName": "image.PNG"}"#, false);
    let prefix_any_case = r#"{"data": {"source": [{"prefix": {"equals-ignore-case": "EventB"}}]}}"#;
    check(prefix_any_case, r#"{"source": "eventbridge"}"#, true);
    check(prefix_any_case, r#"{"source": "event"}"#, false);
    let suffix_any_case = r#"{"data": {"FileName": [{"suffix": {"equals-ignore-case": ".png"}}]}}"#;
    check(suffix_any_case, r#"{"FileName": "image.PNG"}"#, true);
}

#[test]
fn wildcard() {
    let pattern = r#"{"data": {"FileName": [{"wildcard": "/Users/*/doc.txt"}]}}"#;
    check(pattern, r#"{"FileName": "/Users/u/doc.txt"}"#, true);
    check(pattern, r#"{"FileName": "/Users/u/dir/doc.txt"}"#, true);
    check(pattern, r#"{"FileName": "/Users/u/doc.pdf"}"#, false);
    let stars = r#"{"data": {"arn": [{"wildcard": "arn:*:bus/*-prod"}]}}"#;
    check(stars, r#"{"arn": "arn:aws:bus/orders-prod"}"#, true);
    check(stars, r#"{"arn": "arn:aws:bus/orders-dev"}"#, false);
    check(
        r#"{"data": {"k": [{"wildcard": ""}]}}"#,
        r#"{"k": "x"}"#,
        false,
    );
    check(
        r#"{"data": {"k": [{"wildcard": "a\\*"}]}}"#,
        r#"{"k": "a*"}"#,
        true,
    );
    check(
        r#"{"data": {"k": [{"wildcard": "a\\*"}]}}"#,
        r#"{"k": "ab"}"#,
        false,
    );
    // A star and its neighbours may not overlap.
    check(
        r#"{"data": {"k": [{"wildcard": "ab*ba"}]}}"#,
        r#"{"k": "aba"}"#,
        false,
    );
}

#[test]
fn cidr() {
    let v4 = r#"{"data": {"ip": [{"cidr": "10.0.0.0/24"}]}}"#;
    check(v4, r#"{"ip": "10.0.0.255"}"#, true);
    check(v4, r#"{"ip": "10.0.1.0"}"#, false);
    check(v4, r#"{"ip": "not an address"}"#, false);
    let v6 = r#"{"data": {"ip": [{"cidr": "2001:db8::/32"}]}}"#;
    check(v6, r#"{"ip": "2001:db8::1"}"#, true);
    check(v6, r#"{"ip": "10.0.0.1"}"#, false);
}

// "How values match": arrays, nesting, dotted keys, several rules, several filters.

#[test]
fn an_array_in_the_record_matches_if_one_element_does() {
    let pattern = r#"{"data": {"tire_pressure": [{"numeric": ["<", 32]}]}}"#;
    check(pattern, r#"{"tire_pressure": [41, 40, 31, 41]}"#, true);
    check(pattern, r#"{"tire_pressure": [41, 40, 33, 41]}"#, false);
    check(
        r#"{"data": {"a": {"id": [{"exists": true}]}}}"#,
        r#"{"a": [{"k": 1}, {"id": "x"}]}"#,
        true,
    );
    check(
        r#"{"data": {"items": {"sku": ["B"]}}}"#,
        r#"{"items": [{"sku": "A"}, [{"sku": "B"}]]}"#,
        true,
    );
}

#[test]
fn dotted_keys_and_nested_objects_are_the_same_path() {
    check(
        r#"{"data": {"state.status": ["ok"]}}"#,
        r#"{"state": {"status": "ok"}}"#,
        true,
    );
    check(
        r#"{"data": {"state": {"status": ["ok"]}}}"#,
        r#"{"state.status": "ok"}"#,
        true,
    );
    check(
        r#"{"data.state": {"status": ["ok"]}}"#,
        r#"{"state": {"status": "ok"}}"#,
        true,
    );
    check(
        r#"{"data": {"state": {"status": ["ok"]}}}"#,
        r#"{"statex": {"status": "ok"}}"#,
        false,
    );
}

#[test]
fn json_inside_a_string_is_not_traversed() {
    check(
        r#"{"data": {"body": {"k": ["v"]}}}"#,
        r#"{"body": "{\"k\": \"v\"}"}"#,
        false,
    );
}

#[test]
fn several_rules_in_one_array_are_ored() {
    let pattern = r#"{"data": {"carrier": [{"prefix": "dh"}, "ups", {"numeric": ["=", 7]}]}}"#;
    check(pattern, r#"{"carrier": "dhl"}"#, true);
    check(pattern, r#"{"carrier": "ups"}"#, true);
    check(pattern, r#"{"carrier": 7}"#, true);
    check(pattern, r#"{"carrier": "fedex"}"#, false);
}

#[test]
fn filters_are_ored_and_no_filter_delivers_everything() {
    let buy = r#"{"data": {"order": {"type": ["buy"]}}}"#;
    let payment = r#"{"data": {"PaymentType": ["Credit", "Debit"]}}"#;
    check_filters(&[buy, payment], br#"{"PaymentType": "Credit"}"#, true);
    check_filters(&[buy, payment], br#"{"PaymentType": "Cash"}"#, false);
    check_filters(&[], b"not even JSON", true);
    // A metadata filter delivers a record whose data is not JSON, next to a data filter.
    check_filters(&[buy, r#"{"partitionKey": ["1_chat"]}"#], b"hello", true);
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    check(
        r#"{"data": {"k": ["a"], "k": ["b"]}}"#,
        r#"{"k": "b"}"#,
        true,
    );
    check(
        r#"{"data": {"k": ["a"], "k": ["b"]}}"#,
        r#"{"k": "a"}"#,
        false,
    );
}

// "Patterns Lambda refuses".

#[test]
fn patterns_that_are_not_json_objects_are_refused() {
    check_each_refused(&[
        (
            "not json",
            "at line 1, column 2: not valid JSON: expected ident",
        ),
        (
            "null",
            r#"a pattern is a JSON object such as {"data": {"carrier": ["dhl"]}}, not null"#,
        ),
        (
            r#""simple string""#,
            r#"a pattern is a JSON object such as {"data": {"carrier": ["dhl"]}}, not a string"#,
        ),
        (
            "{}",
            "an empty object filters on nothing: name at least one field",
        ),
    ]);
}

#[test]
fn every_leaf_must_be_a_non_empty_array() {
    check_each_refused(&[
        (
            r#"{"data": {"k": "v"}}"#,
            r#"at data.k: a field takes an array of values or rules, such as ["v"], or an object of fields; not a string"#,
        ),
        (
            r#"{"data": {"k": 42}}"#,
            "at data.k: a field takes an array of values or rules, such as [42], or an object of fields; not a number",
        ),
        (
            r#"{"data": {"k": []}}"#,
            "at data.k: an empty array matches nothing: give at least one value or rule",
        ),
        (
            r#"{"data": {"k": [["v"]]}}"#,
            "at data.k[0]: an array cannot hold another array: list values and rules side by side",
        ),
        (
            r#"{"data": {}}"#,
            "at data: an empty object filters on nothing: name at least one field",
        ),
    ]);
}

#[test]
fn only_data_and_the_record_metadata_can_be_addressed() {
    check_refused(
        r#"{"eventSource": ["aws:kinesis"]}"#,
        "at eventSource: a Kinesis record has no field \"eventSource\" to filter on (fields: data, partitionKey, sequenceNumber, approximateArrivalTimestamp, kinesisSchemaVersion)",
    );
}

#[test]
fn operators_are_case_sensitive_and_take_well_formed_arguments() {
    check_each_refused(&[
        (
            r#"{"data": {"k": [{"EXISTS": true}]}}"#,
            "at data.k[0].EXISTS: unknown operator \"EXISTS\" (operators, case-sensitive: prefix, suffix, equals-ignore-case, wildcard, exists, numeric, cidr, anything-but)",
        ),
        (
            r#"{"data": {"k": [{"prefix": "a", "suffix": "b"}]}}"#,
            "at data.k[0]: a rule is an object with exactly one operator (prefix, suffix, equals-ignore-case, wildcard, exists, numeric, cidr, anything-but)",
        ),
        (
            r#"{"data": {"k": [{"exists": "yes"}]}}"#,
            "at data.k[0].exists: exists takes true or false, not a string",
        ),
        (
            r#"{"data": {"k": [{"prefix": 5}]}}"#,
            r#"at data.k[0].prefix: takes a string, or {"equals-ignore-case": "..."}; not a number"#,
        ),
        (
            r#"{"data": {"k": [{"equals-ignore-case": ["a"]}]}}"#,
            "at data.k[0].equals-ignore-case: takes a string, not an array",
        ),
        (
            r#"{"data": {"k": [{"wildcard": "a**b"}]}}"#,
            "at data.k[0].wildcard: two stars in a row (**) are not allowed",
        ),
        (
            r#"{"data": {"k": [{"cidr": "10.0.0.0/33"}]}}"#,
            "at data.k[0].cidr: \"10.0.0.0/33\" is not an IP network such as 10.0.0.0/24 or 2001:db8::/32",
        ),
    ]);
}

#[test]
fn numeric_ranges_must_be_well_formed() {
    check_each_refused(&[
        (
            r#"{"data": {"n": [{"numeric": 10}]}}"#,
            r#"at data.n[0].numeric: takes an array of comparisons and numbers, such as [">", 0, "<=", 5] or ["=", 5], not a number"#,
        ),
        (
            r#"{"data": {"n": [{"numeric": [">", 0, ">", 0]}]}}"#,
            "at data.n[0].numeric[2]: a range has at most one lower bound (> or >=) and one upper bound (< or <=)",
        ),
        (
            r#"{"data": {"n": [{"numeric": [">", 0, "<"]}]}}"#,
            r#"at data.n[0].numeric: takes an array of comparisons and numbers, such as [">", 0, "<=", 5] or ["=", 5]"#,
        ),
        (
            r#"{"data": {"n": [{"numeric": [">", "5"]}]}}"#,
            "at data.n[0].numeric[1]: > takes a number, not a string",
        ),
        (
            r#"{"data": {"n": [{"numeric": ["=", 1, "<", 5]}]}}"#,
            r#"at data.n[0].numeric[0]: = stands alone: ["=", 5]"#,
        ),
        (
            r#"{"data": {"n": [{"numeric": [">", 5, "<", 5]}]}}"#,
            "at data.n[0].numeric: the range holds no number",
        ),
    ]);
}

#[test]
fn anything_but_must_be_well_formed() {
    check_each_refused(&[
        (
            r#"{"data": {"k": [{"anything-but": [null]}]}}"#,
            "at data.k[0].anything-but[0]: anything-but lists strings or numbers, not null",
        ),
        (
            r#"{"data": {"k": [{"anything-but": {"prefix": ""}}]}}"#,
            "at data.k[0].anything-but.prefix: anything-but prefix takes a non-empty string",
        ),
        (
            r#"{"data": {"k": [{"anything-but": {"suffix": ""}}]}}"#,
            "at data.k[0].anything-but.suffix: anything-but suffix takes a non-empty string",
        ),
        (
            r#"{"data": {"k": [{"anything-but": {"exists": true}}]}}"#,
            "at data.k[0].anything-but.exists: takes a string or a list of strings, not a boolean",
        ),
        (
            r#"{"data": {"k": [{"anything-but": {"numeric": ["x"]}}]}}"#,
            "at data.k[0].anything-but.numeric: anything-but takes prefix, suffix, equals-ignore-case or wildcard, not \"numeric\"",
        ),
    ]);
}

#[test]
fn or_takes_a_non_empty_array_of_objects() {
    check_each_refused(&[
        (
            r#"{"data": {"$or": {"k": ["v"]}}}"#,
            "at data.$or: $or takes an array of objects, not an object",
        ),
        (
            r#"{"$or": []}"#,
            "at $or: $or takes at least one object to match",
        ),
        (
            r#"{"data": {"$or": [{"k": ["v"]}, ["x"]]}}"#,
            "at data.$or[1]: $or takes objects, not an array",
        ),
    ]);
}

#[test]
fn a_pattern_has_at_most_4096_characters() {
    let pattern = r#"{"data": {"k": ["v"]}}"#;
    let fits = format!("{pattern}{}", " ".repeat(MAX_PATTERN_CHARS - pattern.len()));
    assert!(Pattern::parse(&fits).is_ok());
    check_refused(
        &format!("{fits} "),
        "it has 4097 characters, more than the 4096 Lambda allows",
    );
}
