"""Kinesis over CBOR 1.1 against the embedded Kinesis, requests encoded here with cbor2.

Run by `cargo test -p embedded-kinesis --test api cbor::`, which starts the
endpoint and passes its URL in KINESIS_ENDPOINT_URL.

The requests follow the AWS SDKs for Java, which speak Kinesis over CBOR by default:
`Content-Type: application/x-amz-cbor-1.1`, the operation in `X-Amz-Target`, a CBOR map of the
same members as JSON 1.1, blobs as CBOR byte strings and timestamps as CBOR tag 1 around an
integer of epoch milliseconds. Answers come back the same way; errors are a map with `__type`
and `message`.
"""

import os
import time
import unittest
import urllib.error
import urllib.request
import uuid

import cbor2

ENDPOINT = os.environ["KINESIS_ENDPOINT_URL"]
CBOR = "application/x-amz-cbor-1.1"


def post(operation, body, content_type=CBOR):
    """Posts raw bytes; returns the status, the answer's Content-Type and its body bytes."""
    request = urllib.request.Request(
        ENDPOINT,
        data=body,
        method="POST",
        headers={
            "Content-Type": content_type,
            "X-Amz-Target": "Kinesis_20131202." + operation,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def loads(body):
    """Decodes an answer keeping tag 1 as it came (cbor2 would read its number as seconds)."""
    return cbor2.loads(body, semantic_decoders={1: lambda value, _immutable: cbor2.CBORTag(1, value)})


def call(operation, **members):
    """One CBOR call that must succeed: its decoded answer (None when the body is empty)."""
    status, content_type, body = post(operation, cbor2.dumps(members))
    if status != 200:
        raise AssertionError(f"{operation} answered {status}: {loads(body)!r}")
    assert content_type == CBOR, content_type
    return loads(body) if body else None


def failure(operation, body):
    """One CBOR call that must fail: its status and decoded error body."""
    status, content_type, answer = post(operation, body)
    assert status != 200, f"{operation} succeeded"
    assert content_type == CBOR, content_type
    return status, loads(answer)


class CborFlows(unittest.TestCase):
    def setUp(self):
        self.stream = "cbor-" + uuid.uuid4().hex[:12]
        call("CreateStream", StreamName=self.stream, ShardCount=1)

    def iterator(self, kind, **position):
        return call(
            "GetShardIterator",
            StreamName=self.stream,
            ShardId="shardId-000000000000",
            ShardIteratorType=kind,
            **position,
        )["ShardIterator"]

    def test_records_cross_as_byte_strings_with_tagged_times(self):
        before_ms = int(time.time() * 1000) - 1000
        put = call("PutRecord", StreamName=self.stream, Data=b"\x00\xffone", PartitionKey="k")
        self.assertEqual(put["ShardId"], "shardId-000000000000")
        many = call(
            "PutRecords",
            StreamName=self.stream,
            Records=[
                {"Data": b"two", "PartitionKey": "k"},
                {"Data": b"", "PartitionKey": "k"},
            ],
        )
        self.assertEqual(many["FailedRecordCount"], 0)
        self.assertEqual(len(many["Records"]), 2)

        answer = call("GetRecords", ShardIterator=self.iterator("TRIM_HORIZON"))
        records = answer["Records"]
        # Blobs are byte strings, not base64 text.
        self.assertEqual([record["Data"] for record in records], [b"\x00\xffone", b"two", b""])
        self.assertEqual(records[0]["SequenceNumber"], put["SequenceNumber"])
        # Tag 1 around an integer of milliseconds, as the AWS SDKs for Java read it.
        raw = records[0]["ApproximateArrivalTimestamp"]
        self.assertIsInstance(raw, cbor2.CBORTag)
        self.assertEqual(raw.tag, 1)
        self.assertIsInstance(raw.value, int)
        self.assertGreaterEqual(raw.value, before_ms)
        self.assertLess(raw.value, before_ms + 60_000)

    def test_timestamps_in_requests_are_tagged_epoch_millis(self):
        call("PutRecord", StreamName=self.stream, Data=b"old", PartitionKey="k")
        time.sleep(0.05)
        middle_ms = int(time.time() * 1000)
        time.sleep(0.05)
        call("PutRecord", StreamName=self.stream, Data=b"new", PartitionKey="k")
        iterator = self.iterator("AT_TIMESTAMP", Timestamp=cbor2.CBORTag(1, middle_ms))
        records = call("GetRecords", ShardIterator=iterator)["Records"]
        self.assertEqual([record["Data"] for record in records], [b"new"])

        summary = call("DescribeStreamSummary", StreamName=self.stream)["StreamDescriptionSummary"]
        self.assertEqual(summary["StreamName"], self.stream)
        self.assertEqual(summary["OpenShardCount"], 1)
        created = summary["StreamCreationTimestamp"]
        self.assertEqual(created.tag, 1)
        self.assertLess(abs(created.value - middle_ms), 60_000)

    def test_every_operation_answers_in_cbor(self):
        call("AddTagsToStream", StreamName=self.stream, Tags={"team": "orders"})
        tags = call("ListTagsForStream", StreamName=self.stream)["Tags"]
        self.assertEqual(tags, [{"Key": "team", "Value": "orders"}])
        shards = call("ListShards", StreamName=self.stream)["Shards"]
        self.assertEqual([shard["ShardId"] for shard in shards], ["shardId-000000000000"])
        names = call("ListStreams")["StreamNames"]
        self.assertIn(self.stream, names)
        self.assertIsNone(call("DeleteStream", StreamName=self.stream))

    def test_errors_are_cbor_maps_with_the_exception_name(self):
        status, error = failure(
            "DescribeStreamSummary", cbor2.dumps({"StreamName": "cbor-missing"})
        )
        self.assertEqual(status, 400)
        self.assertEqual(error["__type"], "ResourceNotFoundException")
        self.assertIn("cbor-missing", error["message"])

        status, error = failure(
            "PutRecord", cbor2.dumps({"StreamName": "no spaces", "Data": b"x", "PartitionKey": ""})
        )
        self.assertEqual(error["__type"], "ValidationException")
        self.assertTrue(error["message"].startswith("2 validation errors detected"), error)

        status, error = failure("PutRecord", b"\xa1\x64Da")
        self.assertEqual(status, 400)
        self.assertEqual(error["__type"], "SerializationException")
        self.assertIn("CBOR", error["message"])

        status, error = failure("PutRecord", cbor2.dumps({"StreamName": self.stream, "Data": 5, "PartitionKey": "k"}))
        self.assertEqual(error["__type"], "SerializationException")

    def test_json_is_still_answered_in_json(self):
        status, content_type, body = post(
            "DescribeStreamSummary",
            ('{"StreamName": "%s"}' % self.stream).encode(),
            content_type="application/x-amz-json-1.1",
        )
        self.assertEqual(status, 200)
        self.assertEqual(content_type, "application/x-amz-json-1.1")
        self.assertIn(b'"StreamName"', body)


if __name__ == "__main__":
    unittest.main()
