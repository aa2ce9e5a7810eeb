// A merchant's webhook receiver for Kasir, in Go with the standard library only.
//
//	KASIR_WEBHOOK_SECRET=… PORT=8080 go run webhook-receiver.go
//
// - It reads the raw body: the signature is over the exact bytes Kasir sent.
// - It verifies the Standard Webhooks signature (webhook-signature: v1,<base64 HMAC-SHA256 of
//   "<webhook-id>.<webhook-timestamp>.<body>">) with hmac.Equal, in constant time, and refuses a
//   timestamp more than 5 minutes from now: the id and the time are signed with the body, so a
//   captured webhook can neither be sent again later nor under another id. 401 when anything is
//   off. (X-Signature signs the body alone: it cannot tell a replay from a delivery.)
// - It deduplicates on webhook-id, which the signature covers: Kasir delivers at least once.
//   (Keep the ids in your database; a map is enough here.)
// - It logs every refusal on stderr with its reason ("refused webhook <id>: <reason>"): a
//   receiver silent on a 401 leaves a wrong secret or a skewed clock to guesswork.
// - It tells samples from real events: a sample (ops webhooks:trigger, POST
//   /v1/webhook-deliveries/samples) has "sample": true in its body and is never acted on.
//
// Each verified event is printed as one JSON line: {"id", "event", "sample", "body"}.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const tolerance = 5 * time.Minute

var (
	secret = os.Getenv("KASIR_WEBHOOK_SECRET")
	key    []byte
	mu     sync.Mutex
	seen   = map[string]bool{}
)

// signingKey follows Standard Webhooks: a whsec_ secret is base64 of the key; any other secret
// is the key's bytes.
func signingKey(secret string) []byte {
	if strings.HasPrefix(secret, "whsec_") {
		if decoded, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); err == nil && len(decoded) > 0 {
			return decoded
		}
	}
	return []byte(secret)
}

// refusal says why the request is refused, or "" when webhook-signature signs this id,
// timestamp and body and the timestamp is recent.
func refusal(h http.Header, body []byte) string {
	id, timestamp, signatures := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if id == "" || signatures == "" || err != nil {
		return "missing webhook-id, webhook-timestamp or webhook-signature"
	}
	if age := time.Since(time.Unix(seconds, 0)); age > tolerance || age < -tolerance {
		return "stale timestamp " + timestamp + " (more than 5 minutes from now)"
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	expected := mac.Sum(nil)
	for _, entry := range strings.Split(signatures, " ") { // v1,<base64>, several allowed
		version, value, _ := strings.Cut(entry, ",")
		given, err := base64.StdEncoding.DecodeString(value)
		if version == "v1" && err == nil && hmac.Equal(given, expected) {
			return ""
		}
	}
	return "bad signature (is KASIR_WEBHOOK_SECRET the merchant's webhook secret?)"
}

// firstTime records id and says whether it was new.
func firstTime(id string) bool {
	mu.Lock()
	defer mu.Unlock()
	if seen[id] {
		return false
	}
	seen[id] = true
	return true
}

func handle(id, event string, payload map[string]any) {
	// A sample is verified like any delivery but names no real resource: print it marked, act on nothing.
	sample := payload["sample"] == true
	line, _ := json.Marshal(map[string]any{"id": id, "event": event, "sample": sample, "body": payload})
	fmt.Println(string(line))
	if sample {
		return
	}
	// Here a real event's work starts (mark the order paid, release the goods...).
}

func receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if reason := refusal(r.Header, body); reason != "" {
		id := r.Header.Get("webhook-id")
		if id == "" {
			id = "-"
		}
		log.Printf("refused webhook %s: %s", id, reason)
		http.Error(w, "refused", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusOK)
	id := r.Header.Get("webhook-id")
	if !firstTime(id) {
		return // a retry of a delivery already handled
	}
	var payload map[string]any
	if json.Unmarshal(body, &payload) == nil {
		handle(id, r.Header.Get("X-Kasir-Event"), payload)
	}
}

func main() {
	if secret == "" {
		log.Fatal("KASIR_WEBHOOK_SECRET is required")
	}
	key = signingKey(secret)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	http.HandleFunc("/kasir/webhooks", receive)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
