package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// server is srfake behind the fault switch and the counters.
type server struct {
	reg *srfake.Registry

	mu            sync.Mutex
	status        int       // 0: answer normally
	until         time.Time // zero: until cleared
	registrations map[string]int
}

func newServer(auth string) *server {
	var opts []srfake.Option
	if auth != "" {
		opts = append(opts, srfake.WithAuth(auth))
	}
	s := &server{reg: srfake.NewRegistry(opts...), registrations: map[string]int{}}
	s.reg.Intercept(s.intercept)
	return s
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /__fault", s.setFault)
	mux.HandleFunc("DELETE /__fault", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.status = 0
		s.mu.Unlock()
	})
	mux.HandleFunc("GET /__stats", s.stats)
	mux.Handle("/", s.reg.Handler())
	return mux
}

func (s *server) setFault(w http.ResponseWriter, r *http.Request) {
	status, err := strconv.Atoi(r.URL.Query().Get("status"))
	if err != nil || status < 400 || status > 599 {
		http.Error(w, "status: want 400 to 599", http.StatusBadRequest)
		return
	}
	var until time.Time
	if f := r.URL.Query().Get("for"); f != "" {
		d, err := time.ParseDuration(f)
		if err != nil {
			http.Error(w, "for: "+err.Error(), http.StatusBadRequest)
			return
		}
		until = time.Now().Add(d)
	}
	s.mu.Lock()
	s.status, s.until = status, until
	s.mu.Unlock()
}

// intercept answers the fault while it lasts, and counts registrations
// that reach the registry.
func (s *server) intercept(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != 0 && (s.until.IsZero() || time.Now().Before(s.until)) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(s.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error_code": s.status, "message": "registryfake: fault injected"})
		return true
	}
	if subject, ok := strings.CutPrefix(r.URL.Path, "/subjects/"); ok && r.Method == http.MethodPost && strings.HasSuffix(subject, "/versions") {
		s.registrations[strings.TrimSuffix(subject, "/versions")]++
	}
	return false
}

func (s *server) stats(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	regs := make(map[string]int, len(s.registrations))
	versions := map[string]int{}
	for subject, n := range s.registrations {
		regs[subject] = n
		for v := 1; ; v++ {
			if _, ok := s.reg.GetSchema(subject, v); !ok {
				break
			}
			versions[subject] = v
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"registrations": regs, "versions": versions})
}
