// Diagnostic queue: answers with when it was picked up, so an operator (ops jobs:ping) or a
// test can see that jobs reach a worker and how fast.
export async function handlePing(payload: { sent_at: number }) {
  return { sent_at: payload.sent_at, received_at: Date.now(), pid: process.pid };
}
