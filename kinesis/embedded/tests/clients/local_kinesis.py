"""What the boto3 suites here share: a client of the endpoint the Rust test started
(KINESIS_ENDPOINT_URL), a stream of its own for each test, and the reading of a failed call."""

import contextlib
import os
import types
import unittest
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["KINESIS_ENDPOINT_URL"]


def kinesis_client(validate=True):
    """A client that makes each call once: a failure or a throttle must reach the test as the
    endpoint gave it, not after retries. `validate=False` sends what the test gives, so that
    the server's validation is what answers."""
    return boto3.client(
        "kinesis",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": 1}, parameter_validation=validate),
    )


class StreamTestCase(unittest.TestCase):
    """Each test gets `self.kinesis` and a new one-shard stream `self.stream` (`self.arn`)."""

    validate = True

    def setUp(self):
        self.kinesis = kinesis_client(self.validate)
        self.stream = "boto3-" + uuid.uuid4().hex[:12]
        self.kinesis.create_stream(StreamName=self.stream, ShardCount=1)
        self.kinesis.get_waiter("stream_exists").wait(StreamName=self.stream)
        self.arn = self.kinesis.describe_stream_summary(StreamName=self.stream)[
            "StreamDescriptionSummary"
        ]["StreamARN"]

    @contextlib.contextmanager
    def fails(self, code, part):
        """The call in the `with` block must fail with the exception `code` (as a 400) and a
        message holding `part`; the `as` target's `message` is then that message."""
        failure = types.SimpleNamespace(message=None)
        with self.assertRaises(ClientError) as raised:
            yield failure
        error = raised.exception.response["Error"]
        self.assertEqual(error["Code"], code, error)
        self.assertIn(part, error["Message"])
        self.assertEqual(raised.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)
        failure.message = error["Message"]
