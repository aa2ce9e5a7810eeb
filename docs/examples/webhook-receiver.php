<?php
// A merchant's webhook receiver for Kasir, in plain PHP.
//
//   KASIR_WEBHOOK_SECRET=… php -S 127.0.0.1:8080 webhook-receiver.php
//
// - It reads the raw body (php://input): the signature is over the exact bytes Kasir sent.
// - It checks X-Signature (sha256=<hex HMAC-SHA256 of the body, keyed with the secret string as
//   given>) with hash_equals, in constant time, and answers 401 when it is missing or wrong.
// - It deduplicates on webhook-id: Kasir delivers at least once. (Keep the ids in your database;
//   a file of ids is enough here.)
// Each verified event is written to stdout as one JSON line: {"id", "event", "body"}.
$secret = getenv('KASIR_WEBHOOK_SECRET');
if ($secret === false || $secret === '') {
    http_response_code(500);
    exit;
}
$body = file_get_contents('php://input');
$expected = 'sha256=' . hash_hmac('sha256', $body, $secret);
$given = $_SERVER['HTTP_X_SIGNATURE'] ?? '';
if (!hash_equals($expected, $given)) {
    http_response_code(401);
    exit;
}
$id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
http_response_code(200);

$seen = sys_get_temp_dir() . '/kasir-webhook-ids';
$handled = is_file($seen) ? file($seen, FILE_IGNORE_NEW_LINES) : [];
if ($id === '' || in_array($id, $handled, true)) {
    exit; // a retry of a delivery already handled
}
file_put_contents($seen, $id . "\n", FILE_APPEND | LOCK_EX);
$line = json_encode(['id' => $id, 'event' => $_SERVER['HTTP_X_KASIR_EVENT'] ?? '', 'body' => json_decode($body, true)]);
file_put_contents('php://stdout', $line . "\n");
