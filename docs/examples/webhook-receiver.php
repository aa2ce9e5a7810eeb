<?php
// A merchant's webhook receiver for Kasir, in plain PHP.
//
//   KASIR_WEBHOOK_SECRET=… php -S 127.0.0.1:8080 webhook-receiver.php
//
// - It reads the raw body (php://input): the signature is over the exact bytes Kasir sent.
// - It verifies the Standard Webhooks signature (webhook-signature: v1,<base64 HMAC-SHA256 of
//   "<webhook-id>.<webhook-timestamp>.<body>">) with hash_equals, in constant time, and refuses a
//   timestamp more than 5 minutes from now: the id and the time are signed with the body, so a
//   captured webhook can neither be sent again later nor under another id. 401 when anything is
//   off. (X-Signature signs the body alone: it cannot tell a replay from a delivery.)
// - It deduplicates on webhook-id, which the signature covers: Kasir delivers at least once.
//   (Keep the ids in your database; a file of ids is enough here.)
// - It logs every refusal on stderr with its reason ("refused webhook <id>: <reason>"): a
//   receiver silent on a 401 leaves a wrong secret or a skewed clock to guesswork.
// - It tells samples from real events: a sample (ops webhooks:trigger, POST
//   /v1/webhook-deliveries/samples) has "sample": true in its body and is never acted on.
// Each verified event is written to stdout as one JSON line: {"id", "event", "sample", "body"}.
$secret = getenv('KASIR_WEBHOOK_SECRET');
if ($secret === false || $secret === '') {
    http_response_code(500);
    exit;
}
// Standard Webhooks keys: a whsec_ secret is base64 of the key; any other secret is the key's bytes.
$key = str_starts_with($secret, 'whsec_') ? base64_decode(substr($secret, 6)) : '';
if ($key === '' || $key === false) {
    $key = $secret;
}

$body = file_get_contents('php://input');
$id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
$timestamp = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
$signatures = $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '';

// Why the request is refused, or null when it is signed and recent.
function refusal(string $key, string $id, string $timestamp, string $signatures, string $body): ?string
{
    if ($id === '' || $signatures === '' || !ctype_digit($timestamp)) {
        return 'missing webhook-id, webhook-timestamp or webhook-signature';
    }
    if (abs(time() - (int) $timestamp) > 300) {               // the time window: 5 minutes
        return "stale timestamp $timestamp (more than 5 minutes from now)";
    }
    $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$body", $key, true));
    foreach (explode(' ', $signatures) as $entry) {          // v1,<base64>, several allowed
        $parts = explode(',', $entry, 2);
        if (count($parts) === 2 && $parts[0] === 'v1' && hash_equals($expected, $parts[1])) {
            return null;
        }
    }
    return "bad signature (is KASIR_WEBHOOK_SECRET the merchant's webhook secret?)";
}

$refused = refusal($key, $id, $timestamp, $signatures, $body);
if ($refused !== null) {
    file_put_contents('php://stderr', 'refused webhook ' . ($id === '' ? '-' : $id) . ": $refused\n");
    http_response_code(401);
    exit;
}
http_response_code(200);

$seen = sys_get_temp_dir() . '/kasir-webhook-ids';
$handled = is_file($seen) ? file($seen, FILE_IGNORE_NEW_LINES) : [];
if (in_array($id, $handled, true)) {
    exit; // a retry of a delivery already handled
}
file_put_contents($seen, $id . "\n", FILE_APPEND | LOCK_EX);
$payload = json_decode($body, true);
// A sample is verified like any delivery but names no real resource: print it marked, act on nothing.
$sample = is_array($payload) && ($payload['sample'] ?? null) === true;
$line = json_encode(['id' => $id, 'event' => $_SERVER['HTTP_X_KASIR_EVENT'] ?? '', 'sample' => $sample, 'body' => $payload]);
file_put_contents('php://stdout', $line . "\n");
if ($sample) {
    exit;
}
// Here a real event's work starts (mark the order paid, release the goods...).
