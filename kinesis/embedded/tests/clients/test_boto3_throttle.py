"""boto3 against the embedded Kinesis with `--throttle`: partial PutRecords failures and
throttled reads, as `tests/api/throttle.rs` checks them with the Rust SDK.

Run by `cargo test -p embedded-kinesis --test api throttle::`, which starts a
throttling endpoint whose clock stands still and passes KINESIS_ENDPOINT_URL.
"""

import unittest

from botocore.exceptions import ClientError

from local_kinesis import StreamTestCase


class Throttle(StreamTestCase):
    def put(self, count):
        return self.kinesis.put_records(
            StreamName=self.stream,
            Records=[
                {"PartitionKey": "key-%d" % n, "Data": b"{}"} for n in range(count)
            ],
        )

    def test_entries_past_the_shards_limit_fail_on_their_own(self):
        self.assertEqual(self.put(500)["FailedRecordCount"], 0)
        answer = self.put(500)
        self.assertEqual(answer["FailedRecordCount"], 0)
        answer = self.put(10)
        self.assertEqual(answer["FailedRecordCount"], 10)
        for entry in answer["Records"]:
            self.assertEqual(entry["ErrorCode"], "ProvisionedThroughputExceededException")
            self.assertEqual(
                entry["ErrorMessage"],
                "Rate exceeded for shard shardId-000000000000 in stream %s under account "
                "000000000000." % self.stream,
            )
            self.assertNotIn("SequenceNumber", entry)
        with self.assertRaises(ClientError) as raised:
            self.kinesis.put_record(StreamName=self.stream, PartitionKey="k", Data=b"{}")
        self.assertEqual(
            raised.exception.response["Error"]["Code"],
            "ProvisionedThroughputExceededException",
        )

    def test_a_sixth_read_in_one_second_is_throttled(self):
        iterator = self.kinesis.get_shard_iterator(
            StreamName=self.stream,
            ShardId="shardId-000000000000",
            ShardIteratorType="TRIM_HORIZON",
        )["ShardIterator"]
        for _ in range(5):
            iterator = self.kinesis.get_records(ShardIterator=iterator)["NextShardIterator"]
        with self.assertRaises(ClientError) as raised:
            self.kinesis.get_records(ShardIterator=iterator)
        error = raised.exception.response["Error"]
        self.assertEqual(error["Code"], "ProvisionedThroughputExceededException")
        self.assertEqual(
            error["Message"],
            "Rate exceeded for Shard - 000000000000/%s/shardId-000000000000" % self.stream,
        )
        self.assertEqual(
            raised.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400
        )


if __name__ == "__main__":
    unittest.main()
