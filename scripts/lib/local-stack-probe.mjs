// Small helpers for scripts/local-stack, written for Node so that a fresh machine needs nothing
// but Node and npm (no curl, no python).
//
//   node local-stack-probe.mjs free-port            prints a free TCP port on 127.0.0.1
//   node local-stack-probe.mjs wait-kinesis URL S   waits up to S seconds for GET URL/healthcheck → 200
//   node local-stack-probe.mjs wait-dynamodb URL S  waits up to S seconds for a DynamoDB ListTables answer
//   node local-stack-probe.mjs wait-moto URL S      waits up to S seconds for GET URL/moto-api/data.json → 200
//
// A waiter exits 0 once the server answers, 1 on timeout.

import net from "node:net";

const [command, url, seconds] = process.argv.slice(2);

function freePort() {
  // Binding to port 0 makes the OS pick a port that is free right now; the server started next
  // binds it a moment later. The script retries with new ports if a server fails to start.
  const server = net.createServer();
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => console.log(port));
  });
}

async function answers(probe) {
  try {
    const response = await probe();
    return response.ok;
  } catch {
    return false;
  }
}

async function waitUntil(probe) {
  const deadline = Date.now() + Number(seconds ?? 30) * 1000;
  while (Date.now() < deadline) {
    if (await answers(probe)) process.exit(0);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  process.exit(1);
}

const kinesisHealth = () =>
  fetch(`${url}/healthcheck`, { signal: AbortSignal.timeout(2000) });

// dynalite checks that a request is signed, not the signature: a syntactically valid
// Authorization header is enough for it to answer 200.
const dynamoListTables = () =>
  fetch(url, {
    method: "POST",
    signal: AbortSignal.timeout(2000),
    headers: {
      "Content-Type": "application/x-amz-json-1.0",
      "X-Amz-Target": "DynamoDB_20120810.ListTables",
      "X-Amz-Date": "20240101T000000Z",
      Authorization:
        "AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0",
    },
    body: "{}",
  });

// moto's own API answers without a signature once the server is up.
const motoData = () =>
  fetch(`${url}/moto-api/data.json`, { signal: AbortSignal.timeout(2000) });

switch (command) {
  case "free-port":
    freePort();
    break;
  case "wait-kinesis":
    await waitUntil(kinesisHealth);
    break;
  case "wait-dynamodb":
    await waitUntil(dynamoListTables);
    break;
  case "wait-moto":
    await waitUntil(motoData);
    break;
  default:
    console.error(`unknown command: ${command}`);
    process.exit(2);
}
