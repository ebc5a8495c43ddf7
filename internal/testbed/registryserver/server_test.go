package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func startTest(t *testing.T, cfg config) *server {
	t.Helper()
	s, err := start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

func do(t *testing.T, method, url, body, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const jsonSchema = `{"schemaType":"JSON","schema":"{\"type\":\"integer\",\"connect.type\":\"int64\"}"}`

func TestRegisterFetchFaultsOutage(t *testing.T) {
	s := startTest(t, config{})
	reg, ctl := s.registryURL(), s.controlURL()
	code, body := do(t, "POST", reg+"/subjects/orders-key/versions", jsonSchema, "")
	if code != 200 || !strings.Contains(body, `"id":1`) {
		t.Fatalf("register: %d %s", code, body)
	}
	code, body = do(t, "GET", reg+"/schemas/ids/1", "", "")
	if code != 200 || !strings.Contains(body, `"schemaType":"JSON"`) {
		t.Fatalf("by id: %d %s", code, body)
	}
	// a 409 for the next two requests under /subjects, then normal again
	if code, body = do(t, "POST", ctl+"/_fault", `{"status":409,"count":2,"path":"/subjects"}`, ""); code != 204 {
		t.Fatalf("fault: %d %s", code, body)
	}
	if code, _ = do(t, "GET", reg+"/schemas/ids/1", "", ""); code != 200 {
		t.Fatalf("a path the fault does not cover answered %d", code)
	}
	for i := 0; i < 2; i++ {
		code, body = do(t, "POST", reg+"/subjects/orders-key/versions", jsonSchema, "")
		if code != 409 || !strings.Contains(body, `"error_code":409`) {
			t.Fatalf("fault %d: %d %s", i, code, body)
		}
	}
	if code, body = do(t, "POST", reg+"/subjects/orders-key/versions", jsonSchema, ""); code != 200 {
		t.Fatalf("after the faults: %d %s", code, body)
	}
	// 503 for a while
	do(t, "POST", ctl+"/_fault", `{"status":503,"for":"300ms"}`, "")
	if code, body = do(t, "GET", reg+"/subjects", "", ""); code != 503 || !strings.Contains(body, "50003") {
		t.Fatalf("503 fault: %d %s", code, body)
	}
	time.Sleep(400 * time.Millisecond)
	if code, _ = do(t, "GET", reg+"/subjects", "", ""); code != 200 {
		t.Fatalf("after the 503 window: %d", code)
	}
	// outage: the port refuses connections, then answers again on the same address
	if code, body = do(t, "POST", ctl+"/_outage", `{"for":"500ms"}`, ""); code != 204 {
		t.Fatalf("outage: %d %s", code, body)
	}
	if code, body = do(t, "GET", reg+"/subjects", "", ""); code != 0 || !strings.Contains(body, "refused") {
		t.Fatalf("during the outage: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ = do(t, "GET", reg+"/schemas/ids/1", "", ""); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry did not come back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	do(t, "POST", ctl+"/_outage", `{"down":true}`, "")
	if code, _ = do(t, "GET", reg+"/subjects", "", ""); code != 0 {
		t.Fatalf("down: answered %d", code)
	}
	do(t, "POST", ctl+"/_outage", `{"down":false}`, "")
	if code, body = do(t, "GET", reg+"/subjects", "", ""); code != 200 || !strings.Contains(body, "orders-key") {
		t.Fatalf("up again: %d %s (the schemas must survive an outage)", code, body)
	}
}

func TestAuth(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))
	s := startTest(t, config{auth: basic})
	if code, _ := do(t, "GET", s.registryURL()+"/subjects", "", ""); code != 401 {
		t.Fatalf("no credentials: %d", code)
	}
	if code, _ := do(t, "GET", s.registryURL()+"/subjects", "", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:x"))); code != 403 {
		t.Fatalf("wrong credentials: %d", code)
	}
	if code, body := do(t, "GET", s.registryURL()+"/subjects", "", basic); code != 200 {
		t.Fatalf("right credentials: %d %s", code, body)
	}
}

func TestRunPrintsReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, config{}, pw, slog.New(slog.NewTextHandler(io.Discard, nil))); pw.Close() }()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "registryserver: registry http://127.0.0.1:") {
		t.Fatalf("first line %q", sc.Text())
	}
	reg := strings.Fields(sc.Text())[2]
	if !sc.Scan() || sc.Text() != "registryserver: ready" {
		t.Fatalf("second line %q", sc.Text())
	}
	if code, _ := do(t, "GET", reg+"/subjects", "", ""); code != 200 {
		t.Fatalf("after ready: %d", code)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
