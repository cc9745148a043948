"""boto3 against the embedded Kinesis' enhanced fan-out: the consumer operations, and
SubscribeToShard's event stream read by botocore over HTTP/1.1 (boto3 cannot speak HTTP/2,
which Kinesis requires for SubscribeToShard; the embedded Kinesis answers it over HTTP/1.1 too).
`tests/api/efo.rs` checks the same with the Rust SDK.

Run by `cargo test -p embedded-kinesis --test api efo::`, which starts the endpoint
and passes KINESIS_ENDPOINT_URL.
"""

import unittest

from local_kinesis import StreamTestCase


class EnhancedFanOut(StreamTestCase):
    def test_consumers_register_describe_list_and_deregister(self):
        consumer = self.kinesis.register_stream_consumer(
            StreamARN=self.arn, ConsumerName="fan"
        )["Consumer"]
        self.assertEqual(consumer["ConsumerName"], "fan")
        self.assertTrue(consumer["ConsumerARN"].startswith(self.arn + "/consumer/fan:"))
        self.assertIn(consumer["ConsumerStatus"], ("CREATING", "ACTIVE"))
        described = self.kinesis.describe_stream_consumer(
            StreamARN=self.arn, ConsumerName="fan"
        )["ConsumerDescription"]
        self.assertEqual(described["ConsumerARN"], consumer["ConsumerARN"])
        self.assertEqual(described["StreamARN"], self.arn)
        self.assertEqual(
            described["ConsumerCreationTimestamp"], consumer["ConsumerCreationTimestamp"]
        )
        listed = self.kinesis.list_stream_consumers(StreamARN=self.arn)["Consumers"]
        self.assertEqual([c["ConsumerName"] for c in listed], ["fan"])
        with self.fails("ResourceInUseException", "already exists"):
            self.kinesis.register_stream_consumer(StreamARN=self.arn, ConsumerName="fan")
        with self.fails("ValidationException", "consumerName"):
            self.kinesis.register_stream_consumer(StreamARN=self.arn, ConsumerName="no spaces")
        self.kinesis.deregister_stream_consumer(ConsumerARN=consumer["ConsumerARN"])
        with self.fails("ResourceNotFoundException", "not found"):
            self.kinesis.describe_stream_consumer(ConsumerARN=consumer["ConsumerARN"])
        self.assertEqual(
            self.kinesis.list_stream_consumers(StreamARN=self.arn)["Consumers"], []
        )

    def test_subscribe_to_shard_streams_events(self):
        consumer_arn = self.kinesis.register_stream_consumer(
            StreamARN=self.arn, ConsumerName="reader"
        )["Consumer"]["ConsumerARN"]
        put = self.kinesis.put_record(
            StreamName=self.stream, PartitionKey="k", Data=b"pushed"
        )
        answer = self.kinesis.subscribe_to_shard(
            ConsumerARN=consumer_arn,
            ShardId="shardId-000000000000",
            StartingPosition={"Type": "TRIM_HORIZON"},
        )
        events = iter(answer["EventStream"])
        event = next(events)["SubscribeToShardEvent"]
        self.assertEqual([r["Data"] for r in event["Records"]], [b"pushed"])
        self.assertEqual(event["ContinuationSequenceNumber"], put["SequenceNumber"])
        self.assertEqual(event["MillisBehindLatest"], 0)
        answer["EventStream"].close()
        with self.fails("ResourceInUseException", "less than 5 seconds ago"):
            self.kinesis.subscribe_to_shard(
                ConsumerARN=consumer_arn,
                ShardId="shardId-000000000000",
                StartingPosition={"Type": "LATEST"},
            )


if __name__ == "__main__":
    unittest.main()
