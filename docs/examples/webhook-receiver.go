// A merchant's webhook receiver for Kasir, in Go with the standard library only.
//
//	KASIR_WEBHOOK_SECRET=… PORT=8080 go run webhook-receiver.go
//
// - It reads the raw body: the signature is over the exact bytes Kasir sent.
// - It checks X-Signature (sha256=<hex HMAC-SHA256 of the body, keyed with the secret string as
//   given>) with hmac.Equal, in constant time, and answers 401 when it is missing or wrong.
// - It deduplicates on webhook-id: Kasir delivers at least once. (Keep the ids in your database;
//   a map is enough here.)
//
// Each verified event is printed as one JSON line: {"id", "event", "body"}.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
)

var (
	secret = os.Getenv("KASIR_WEBHOOK_SECRET")
	mu     sync.Mutex
	seen   = map[string]bool{}
)

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
	line, _ := json.Marshal(map[string]any{"id": id, "event": event, "body": payload})
	fmt.Println(string(line))
}

func receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	expected := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(expected), []byte(r.Header.Get("X-Signature"))) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusOK)
	id := r.Header.Get("webhook-id")
	if id == "" || !firstTime(id) {
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
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	http.HandleFunc("/kasir/webhooks", receive)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
