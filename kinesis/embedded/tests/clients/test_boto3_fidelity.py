"""boto3 against the embedded Kinesis: the answers clients read (validation, resource
policies, on-demand streams, quoted iterators, tag rules), as `tests/api/fidelity.rs` checks them with the Rust SDK.

Run by `cargo test -p embedded-kinesis --test api fidelity::`, which starts the
endpoint and passes KINESIS_ENDPOINT_URL.
"""

import unittest

from local_kinesis import StreamTestCase


class Fidelity(StreamTestCase):
    validate = False

    def test_validation_lists_every_violation_before_lookup(self):
        with self.fails("ValidationException", "2 validation errors detected: ") as failure:
            self.kinesis.put_record(StreamName="x y", PartitionKey="", Data=b"d")
        self.assertIn("at 'streamName'", failure.message)
        self.assertIn("at 'partitionKey'", failure.message)
        with self.fails("ValidationException", "at 'limit' failed to satisfy constraint"):
            self.kinesis.get_records(ShardIterator="AAAA", Limit=0)
        with self.fails("ValidationException", "at 'sequenceNumberForOrdering'"):
            self.kinesis.put_record(
                StreamName=self.stream,
                PartitionKey="k",
                Data=b"d",
                SequenceNumberForOrdering="12ab",
            )
        with self.fails("ResourceNotFoundException", "missing-" + self.stream):
            self.kinesis.describe_stream_summary(StreamName="missing-" + self.stream)

    def test_on_demand_streams(self):
        stream = self.stream + "-elastic"
        self.kinesis.create_stream(StreamName=stream)
        self.kinesis.get_waiter("stream_exists").wait(StreamName=stream)
        summary = self.kinesis.describe_stream_summary(StreamName=stream)[
            "StreamDescriptionSummary"
        ]
        self.assertEqual(summary["StreamModeDetails"], {"StreamMode": "ON_DEMAND"})
        self.assertEqual(summary["OpenShardCount"], 4)
        self.kinesis.update_stream_mode(
            StreamARN=summary["StreamARN"],
            StreamModeDetails={"StreamMode": "PROVISIONED"},
        )
        described = self.kinesis.describe_stream(StreamName=stream)["StreamDescription"]
        self.assertEqual(described["StreamModeDetails"], {"StreamMode": "PROVISIONED"})

    def test_resource_policies(self):
        get = lambda: self.kinesis.get_resource_policy(ResourceARN=self.arn)["Policy"]
        self.assertEqual(get(), "{}")
        for policy in ['{"Version":"2012-10-17","Statement":[]}', '{"Statement":[1]}']:
            self.kinesis.put_resource_policy(ResourceARN=self.arn, Policy=policy)
            self.assertEqual(get(), policy)
        self.kinesis.delete_resource_policy(ResourceARN=self.arn)
        self.assertEqual(get(), "{}")
        with self.fails("ResourceNotFoundException", "No resource policy found"):
            self.kinesis.delete_resource_policy(ResourceARN=self.arn)
        with self.fails("ResourceNotFoundException", "missing"):
            self.kinesis.put_resource_policy(
                ResourceARN=self.arn.replace(self.stream, "missing"), Policy="{}"
            )

    def test_a_quoted_iterator_reads(self):
        self.kinesis.put_record(StreamName=self.stream, PartitionKey="k", Data=b"hello")
        iterator = self.kinesis.get_shard_iterator(
            StreamName=self.stream,
            ShardId="shardId-000000000000",
            ShardIteratorType="TRIM_HORIZON",
        )["ShardIterator"]
        records = self.kinesis.get_records(ShardIterator='"%s"' % iterator)["Records"]
        self.assertEqual([record["Data"] for record in records], [b"hello"])
        with self.fails("InvalidArgumentException", "(400 characters)") as failure:
            self.kinesis.get_records(ShardIterator="Z" * 400)
        self.assertNotIn("Z" * 400, failure.message)

    def test_shard_ids_are_read_by_their_number(self):
        for given in ["shardId-000000000000", "shardId-0", "shard-0", "x-0", "0"]:
            iterator = self.kinesis.get_shard_iterator(
                StreamName=self.stream, ShardId=given, ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            self.assertIn("NextShardIterator", self.kinesis.get_records(ShardIterator=iterator))
        with self.fails("ResourceNotFoundException", "shardId-000000000007"):
            self.kinesis.get_shard_iterator(
                StreamName=self.stream, ShardId="shardId-7", ShardIteratorType="TRIM_HORIZON"
            )

    def test_tag_rules(self):
        for key, value in [("a;b", "v"), ("k", "tab\there"), ("k", "100%")]:
            with self.fails("InvalidArgumentException", "may hold only letters, digits, spaces"):
                self.kinesis.add_tags_to_stream(StreamName=self.stream, Tags={key: value})
        with self.fails("InvalidArgumentException", "one call adds at most 10"):
            self.kinesis.add_tags_to_stream(
                StreamName=self.stream, Tags={"k%d" % n: "v" for n in range(11)}
            )
        self.kinesis.add_tags_to_stream(
            StreamName=self.stream, Tags={"team name": "ops/x=+-@_."}
        )


if __name__ == "__main__":
    unittest.main()
