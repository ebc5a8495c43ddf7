package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	srv := httptest.NewServer(newServer("").handler())
	defer srv.Close()
	do := func(method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	schema := `{"schema":"{\"type\":\"string\"}"}`
	for range 3 {
		if resp := do("POST", "/subjects/t-value/versions", schema); resp.StatusCode != 200 {
			t.Fatalf("register: %s", resp.Status)
		}
	}
	if resp := do("POST", "/__fault?status=503&for=200ms", ""); resp.StatusCode != 200 {
		t.Fatalf("fault: %s", resp.Status)
	}
	if resp := do("POST", "/subjects/t-value/versions", schema); resp.StatusCode != 503 {
		t.Fatalf("during the fault: %s", resp.Status)
	}
	time.Sleep(250 * time.Millisecond)
	if resp := do("GET", "/subjects", ""); resp.StatusCode != 200 {
		t.Fatalf("after the fault: %s", resp.Status)
	}
	resp, err := http.Get(srv.URL + "/__stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Registrations, Versions map[string]int }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Registrations["t-value"] != 3 || st.Versions["t-value"] != 1 {
		t.Errorf("stats %+v; want 3 registrations of one version", st)
	}
}
