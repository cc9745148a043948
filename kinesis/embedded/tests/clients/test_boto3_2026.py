"""boto3 against the embedded Kinesis for what Kinesis added lately: records up to 10 MiB
(MaxRecordSizeInKiB, UpdateMaxRecordSize), streams without partition keys (AUTO), and the
operations a local stream honours by storing and echoing (DescribeLimits, enhanced monitoring,
encryption, resource tags, warm throughput, account settings).

The pinned botocore (1.43.11) knows UpdateMaxRecordSize but not RecordDistributionStrategy,
and its model still requires a PartitionKey: the AUTO test adds the strategy to the request's
JSON body before it is signed, and sends keyless records with parameter validation off, as a
newer SDK would write them."""

import json
import unittest
import uuid

from local_kinesis import StreamTestCase, kinesis_client

MIB = 1024 * 1024


def read_all(kinesis, stream):
    """Every record of every shard of `stream`, from its oldest."""
    records = []
    shards = kinesis.list_shards(StreamName=stream)["Shards"]
    for shard in shards:
        iterator = kinesis.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = kinesis.get_records(ShardIterator=iterator)
            records.extend((shard["ShardId"], record) for record in page["Records"])
            if not page["Records"] and page.get("MillisBehindLatest", 0) == 0:
                break
            iterator = page.get("NextShardIterator")
    return records


class LargeRecords(StreamTestCase):
    def test_a_stream_raised_to_10_mib_takes_a_9_mib_record_and_reads_it_back(self):
        with self.fails("InvalidArgumentException", "MaxRecordSizeInKiB is 1024"):
            self.kinesis.put_record(StreamName=self.stream, PartitionKey="k", Data=b"x" * (2 * MIB))
        self.kinesis.update_max_record_size(StreamARN=self.arn, MaxRecordSizeInKiB=10240)
        self.kinesis.get_waiter("stream_exists").wait(StreamName=self.stream)
        summary = self.kinesis.describe_stream_summary(StreamName=self.stream)
        self.assertEqual(summary["StreamDescriptionSummary"]["MaxRecordSizeInKiB"], 10240)
        data = bytes(range(256)) * (9 * MIB // 256)
        self.kinesis.put_record(StreamName=self.stream, PartitionKey="k", Data=data)
        [(_, record)] = read_all(self.kinesis, self.stream)
        self.assertEqual(record["Data"], data)

    def test_a_stream_is_created_with_its_max_record_size_in_range(self):
        stream = "boto3-" + uuid.uuid4().hex[:12]
        self.kinesis.create_stream(StreamName=stream, ShardCount=1, MaxRecordSizeInKiB=4096)
        self.kinesis.get_waiter("stream_exists").wait(StreamName=stream)
        summary = self.kinesis.describe_stream_summary(StreamName=stream)
        self.assertEqual(summary["StreamDescriptionSummary"]["MaxRecordSizeInKiB"], 4096)
        unchecked = kinesis_client(validate=False)
        with self.fails("ValidationException", "Member must have value less than or equal to 10240"):
            unchecked.update_max_record_size(StreamARN=self.arn, MaxRecordSizeInKiB=20480)


class KeylessRecords(unittest.TestCase):
    def test_an_auto_stream_spreads_keyless_records_over_its_shards(self):
        kinesis = kinesis_client(validate=False)
        stream = "boto3-auto-" + uuid.uuid4().hex[:8]

        def with_auto(request, **_):
            body = json.loads(request.data)
            body["RecordDistributionStrategy"] = "AUTO"
            request.data = json.dumps(body).encode()

        kinesis.meta.events.register("before-sign.kinesis.CreateStream", with_auto)
        kinesis.create_stream(StreamName=stream, StreamModeDetails={"StreamMode": "ON_DEMAND"})
        kinesis.get_waiter("stream_exists").wait(StreamName=stream)
        summary = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
        shard_count = summary["OpenShardCount"]
        self.assertGreater(shard_count, 1)
        for n in range(40):
            kinesis.put_record(StreamName=stream, Data=str(n).encode())
        records = read_all(kinesis, stream)
        self.assertEqual(sorted(int(record["Data"]) for _, record in records), list(range(40)))
        self.assertTrue(all(not record.get("PartitionKey") for _, record in records))
        self.assertEqual(len({shard for shard, _ in records}), shard_count)


class StoredSettings(StreamTestCase):
    def test_enhanced_monitoring_and_encryption_are_kept_and_shown(self):
        answer = self.kinesis.enable_enhanced_monitoring(
            StreamName=self.stream, ShardLevelMetrics=["IncomingBytes", "OutgoingRecords"]
        )
        self.assertEqual(answer["CurrentShardLevelMetrics"], [])
        self.assertEqual(
            sorted(answer["DesiredShardLevelMetrics"]), ["IncomingBytes", "OutgoingRecords"]
        )
        self.kinesis.disable_enhanced_monitoring(
            StreamName=self.stream, ShardLevelMetrics=["IncomingBytes"]
        )
        self.kinesis.get_waiter("stream_exists").wait(StreamName=self.stream)
        self.kinesis.start_stream_encryption(
            StreamName=self.stream, EncryptionType="KMS", KeyId="alias/aws/kinesis"
        )
        self.kinesis.get_waiter("stream_exists").wait(StreamName=self.stream)
        summary = self.kinesis.describe_stream_summary(StreamName=self.stream)[
            "StreamDescriptionSummary"
        ]
        self.assertEqual(summary["EncryptionType"], "KMS")
        self.assertEqual(summary["KeyId"], "alias/aws/kinesis")
        metrics = summary["EnhancedMonitoring"][0]["ShardLevelMetrics"]
        self.assertEqual(metrics, ["OutgoingRecords"])

    def test_resource_tags_are_kept_and_listed(self):
        self.kinesis.tag_resource(ResourceARN=self.arn, Tags={"team": "shipping"})
        listed = self.kinesis.list_tags_for_resource(ResourceARN=self.arn)["Tags"]
        self.assertEqual(listed, [{"Key": "team", "Value": "shipping"}])
        self.kinesis.untag_resource(ResourceARN=self.arn, TagKeys=["team"])
        self.assertEqual(self.kinesis.list_tags_for_resource(ResourceARN=self.arn)["Tags"], [])

    def test_limits_and_account_settings_answer(self):
        limits = self.kinesis.describe_limits()
        self.assertGreaterEqual(limits["OpenShardCount"], 1)
        self.assertGreater(limits["ShardLimit"], 0)
        settings = self.kinesis.describe_account_settings()
        self.assertIn("ResponseMetadata", settings)
        with self.fails("InvalidArgumentException", "ON_DEMAND"):
            self.kinesis.update_stream_warm_throughput(
                StreamName=self.stream, WarmThroughputMiBps=10
            )


if __name__ == "__main__":
    unittest.main()
