"""boto3 against the embedded Kinesis served over the Kinesis API.

Run by `cargo test -p embedded-kinesis --test api clients::`, which starts the
endpoint, puts the records of the AT_TIMESTAMP check on a stopped clock, and passes in the
environment:

- KINESIS_ENDPOINT_URL: the endpoint.
- TIMED_STREAM: a one-shard stream holding "early" at TIMED_START (epoch seconds) and "late"
  ten seconds after it. The endpoint's clock stands still there, so every record put here
  arrives at TIMED_START + 10.
"""

import datetime
import os
import unittest
import uuid

from local_kinesis import kinesis_client

TIMED_STREAM = os.environ["TIMED_STREAM"]
TIMED_START = int(os.environ["TIMED_START"])
UPPER_HALF = 2**127
QUARTER = 2**126


def shard_id(number):
    return "shardId-%012d" % number


class Boto3Flows(unittest.TestCase):
    def setUp(self):
        self.kinesis = kinesis_client()
        self.stream = "boto3-" + uuid.uuid4().hex[:12]

    def create(self, shards):
        self.kinesis.create_stream(StreamName=self.stream, ShardCount=shards)
        # The stream is ACTIVE at once, so the waiter's first look succeeds.
        self.kinesis.get_waiter("stream_exists").wait(StreamName=self.stream)

    def iterator(self, shard, kind, stream=None, **position):
        return self.kinesis.get_shard_iterator(
            StreamName=stream or self.stream,
            ShardId=shard,
            ShardIteratorType=kind,
            **position,
        )["ShardIterator"]

    def read_to_end(self, iterator):
        """Reads until the shard ends or a read comes back empty; data and the last answer."""
        data = []
        while True:
            answer = self.kinesis.get_records(ShardIterator=iterator, Limit=2)
            data += [record["Data"] for record in answer["Records"]]
            iterator = answer.get("NextShardIterator")
            if iterator is None or not answer["Records"]:
                return data, answer

    def test_puts_one_and_a_batch_and_reads_back_with_each_iterator_type(self):
        self.create(1)
        shard = shard_id(0)
        first = self.kinesis.put_record(
            StreamName=self.stream, Data=b"zero", PartitionKey="key-0"
        )
        self.assertEqual(first["ShardId"], shard)
        batch = self.kinesis.put_records(
            StreamName=self.stream,
            Records=[
                {"Data": data, "PartitionKey": "key-%d" % index}
                for index, data in enumerate([b"one", b"two", b"three"], start=1)
            ],
        )
        self.assertEqual(batch["FailedRecordCount"], 0)
        sequence_numbers = [first["SequenceNumber"]] + [
            entry["SequenceNumber"] for entry in batch["Records"]
        ]

        everything = self.kinesis.get_records(
            ShardIterator=self.iterator(shard, "TRIM_HORIZON")
        )
        self.assertEqual(
            [(r["Data"], r["PartitionKey"]) for r in everything["Records"]],
            [(b"zero", "key-0"), (b"one", "key-1"), (b"two", "key-2"), (b"three", "key-3")],
        )
        self.assertEqual(
            [r["SequenceNumber"] for r in everything["Records"]], sequence_numbers
        )
        arrival = datetime.datetime.fromtimestamp(
            TIMED_START + 10, tz=datetime.timezone.utc
        )
        for record in everything["Records"]:
            self.assertEqual(record["ApproximateArrivalTimestamp"], arrival)
        self.assertEqual(everything["MillisBehindLatest"], 0)
        self.assertNotIn("ChildShards", everything)

        at = self.iterator(
            shard, "AT_SEQUENCE_NUMBER", StartingSequenceNumber=sequence_numbers[1]
        )
        self.assertEqual(self.read_to_end(at)[0], [b"one", b"two", b"three"])
        after = self.iterator(
            shard, "AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=sequence_numbers[1]
        )
        self.assertEqual(self.read_to_end(after)[0], [b"two", b"three"])

        latest = self.kinesis.get_records(ShardIterator=self.iterator(shard, "LATEST"))
        self.assertEqual(latest["Records"], [])
        self.kinesis.put_record(StreamName=self.stream, Data=b"four", PartitionKey="k")
        self.assertEqual(self.read_to_end(latest["NextShardIterator"])[0], [b"four"])

        # boto3 sends whole seconds: five seconds in lies between the two timed records.
        at_timestamp = self.iterator(
            shard_id(0),
            "AT_TIMESTAMP",
            stream=TIMED_STREAM,
            Timestamp=datetime.datetime.fromtimestamp(
                TIMED_START + 5, tz=datetime.timezone.utc
            ),
        )
        self.assertEqual(self.read_to_end(at_timestamp)[0], [b"late"])
        from_start = self.iterator(
            shard_id(0), "AT_TIMESTAMP", stream=TIMED_STREAM, Timestamp=TIMED_START
        )
        self.assertEqual(self.read_to_end(from_start)[0], [b"early", b"late"])

    def test_splits_merges_and_reads_closed_parents_to_their_end(self):
        self.create(2)

        def put(hash_key, data):
            return self.kinesis.put_record(
                StreamName=self.stream,
                Data=data,
                PartitionKey="any",
                ExplicitHashKey=str(hash_key),
            )["ShardId"]

        self.assertEqual(put(0, b"low before"), shard_id(0))
        self.assertEqual(put(UPPER_HALF, b"high before"), shard_id(1))
        self.kinesis.split_shard(
            StreamName=self.stream,
            ShardToSplit=shard_id(0),
            NewStartingHashKey=str(QUARTER),
        )
        self.kinesis.merge_shards(
            StreamName=self.stream,
            ShardToMerge=shard_id(3),
            AdjacentShardToMerge=shard_id(1),
        )
        self.assertEqual(put(0, b"low after"), shard_id(2))
        self.assertEqual(put(UPPER_HALF, b"high after"), shard_id(4))

        shards = self.kinesis.list_shards(StreamName=self.stream)["Shards"]
        self.assertEqual(
            [
                (
                    shard["ShardId"],
                    shard.get("ParentShardId"),
                    shard.get("AdjacentParentShardId"),
                    "EndingSequenceNumber" in shard["SequenceNumberRange"],
                )
                for shard in shards
            ],
            [
                (shard_id(0), None, None, True),
                (shard_id(1), None, None, True),
                (shard_id(2), shard_id(0), None, False),
                (shard_id(3), shard_id(0), None, True),
                (shard_id(4), shard_id(3), shard_id(1), False),
            ],
        )

        data, end = self.read_to_end(self.iterator(shard_id(0), "TRIM_HORIZON"))
        self.assertEqual(data, [b"low before"])
        self.assertIsNone(end.get("NextShardIterator"))
        self.assertEqual(
            [(child["ShardId"], child["ParentShards"]) for child in end["ChildShards"]],
            [(shard_id(2), [shard_id(0)]), (shard_id(3), [shard_id(0)])],
        )
        self.assertEqual(
            end["ChildShards"][1]["HashKeyRange"],
            {"StartingHashKey": str(QUARTER), "EndingHashKey": str(UPPER_HALF - 1)},
        )
        data, end = self.read_to_end(self.iterator(shard_id(1), "TRIM_HORIZON"))
        self.assertEqual(data, [b"high before"])
        self.assertIsNone(end.get("NextShardIterator"))
        self.assertEqual(
            [(child["ShardId"], child["ParentShards"]) for child in end["ChildShards"]],
            [(shard_id(4), [shard_id(3), shard_id(1)])],
        )

        scaled = self.kinesis.update_shard_count(
            StreamName=self.stream, TargetShardCount=4, ScalingType="UNIFORM_SCALING"
        )
        self.assertEqual(
            (scaled["CurrentShardCount"], scaled["TargetShardCount"]), (2, 4)
        )
        summary = self.kinesis.describe_stream_summary(StreamName=self.stream)
        self.assertEqual(summary["StreamDescriptionSummary"]["OpenShardCount"], 4)

    def test_lists_shards_in_pages_and_streams(self):
        self.create(5)
        page = self.kinesis.list_shards(StreamName=self.stream, MaxResults=2)
        pages = [[shard["ShardId"] for shard in page["Shards"]]]
        while "NextToken" in page:
            page = self.kinesis.list_shards(NextToken=page["NextToken"], MaxResults=2)
            pages.append([shard["ShardId"] for shard in page["Shards"]])
        self.assertEqual(
            pages,
            [[shard_id(0), shard_id(1)], [shard_id(2), shard_id(3)], [shard_id(4)]],
        )
        open_now = self.kinesis.list_shards(
            StreamName=self.stream, ShardFilter={"Type": "AT_LATEST"}
        )
        self.assertEqual(len(open_now["Shards"]), 5)
        described = self.kinesis.describe_stream(StreamName=self.stream)[
            "StreamDescription"
        ]
        self.assertEqual(described["StreamStatus"], "ACTIVE")
        self.assertEqual(len(described["Shards"]), 5)
        self.assertFalse(described["HasMoreShards"])
        self.assertIn(self.stream, self.kinesis.list_streams()["StreamNames"])

    def test_errors_carry_kinesis_exception_names(self):
        missing = "missing-" + uuid.uuid4().hex[:12]
        errors = self.kinesis.exceptions
        with self.assertRaises(errors.ResourceNotFoundException) as raised:
            self.kinesis.describe_stream_summary(StreamName=missing)
        self.assertIn("Stream %s under account" % missing, str(raised.exception))
        metadata = raised.exception.response["ResponseMetadata"]
        self.assertEqual(metadata["HTTPStatusCode"], 400)
        self.assertTrue(metadata["RequestId"])
        with self.assertRaises(errors.ResourceNotFoundException):
            self.kinesis.put_record(StreamName=missing, Data=b"x", PartitionKey="k")

        self.create(1)
        with self.assertRaises(errors.ResourceInUseException):
            self.kinesis.create_stream(StreamName=self.stream, ShardCount=1)
        with self.assertRaises(errors.InvalidArgumentException):
            self.kinesis.get_records(ShardIterator="bm90IGFuIGl0ZXJhdG9y")
        with self.assertRaises(errors.InvalidArgumentException):
            self.kinesis.list_shards(StreamName=self.stream, NextToken="anything")
        with self.assertRaises(errors.LimitExceededException):
            self.kinesis.update_shard_count(
                StreamName=self.stream,
                TargetShardCount=3,
                ScalingType="UNIFORM_SCALING",
            )


if __name__ == "__main__":
    unittest.main(verbosity=2)
