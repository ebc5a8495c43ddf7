package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

type config struct {
	port, controlPort int
	auth              string // the exact Authorization header required, "" for none
}

// fault makes matching requests answer status.
type fault struct {
	Status int    `json:"status"`
	Count  int    `json:"count,omitempty"` // requests left; 0 with For: unlimited until then
	For    string `json:"for,omitempty"`
	Path   string `json:"path,omitempty"` // a path prefix, "" for every path
	until  time.Time
}

// server owns the registry, its listener (closed during an outage) and the
// control listener.
type server struct {
	log      *slog.Logger
	reg      *srfake.Registry
	regAddr  string
	control  *http.Server
	ctlLn    net.Listener
	mu       sync.Mutex
	regSrv   *http.Server // nil while down
	faults   []*fault
	requests int
	upTimer  *time.Timer
}

func start(cfg config, log *slog.Logger) (*server, error) {
	var opts []srfake.Option
	if cfg.auth != "" {
		opts = append(opts, srfake.WithAuth(cfg.auth))
	}
	s := &server{log: log, reg: srfake.NewRegistry(opts...)}
	s.reg.Intercept(s.intercept)
	s.regAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.port))
	if err := s.up(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.controlPort)))
	if err != nil {
		s.close()
		return nil, fmt.Errorf("listening for the control API on port %d (-control-port): %w", cfg.controlPort, err)
	}
	s.ctlLn = ln
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_fault", s.postFault)
	mux.HandleFunc("DELETE /_fault", s.deleteFault)
	mux.HandleFunc("POST /_outage", s.postOutage)
	mux.HandleFunc("GET /_status", s.getStatus)
	s.control = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.control.Serve(ln) }()
	return s, nil
}

func (s *server) registryURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.regAddr
}
func (s *server) controlURL() string { return "http://" + s.ctlLn.Addr().String() }

// up (re)opens the registry's port; the first call fixes a port 0 to the
// one the kernel chose, so that an outage ends on the same address.
func (s *server) up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.regSrv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.regAddr)
	if err != nil {
		return fmt.Errorf("listening for the registry on %s (-port): %w", s.regAddr, err)
	}
	s.regAddr = ln.Addr().String()
	srv := &http.Server{Handler: s.reg.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.regSrv = srv
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// down closes the registry's port and every connection to it.
func (s *server) down() {
	s.mu.Lock()
	srv := s.regSrv
	s.regSrv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (s *server) close() {
	s.mu.Lock()
	if s.upTimer != nil {
		s.upTimer.Stop()
	}
	s.mu.Unlock()
	s.down()
	if s.control != nil {
		_ = s.control.Close()
	}
}

// intercept is srfake's first handler: it answers a request with the first
// fault that matches it.
func (s *server) intercept(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	s.requests++
	var hit *fault
	now := time.Now()
	kept := s.faults[:0]
	for _, f := range s.faults {
		expired := (!f.until.IsZero() && now.After(f.until)) || (f.until.IsZero() && f.Count <= 0)
		if expired {
			continue
		}
		if hit == nil && strings.HasPrefix(r.URL.Path, f.Path) {
			hit = f
			if f.Count > 0 {
				f.Count--
			}
		}
		if f.Count > 0 || !f.until.IsZero() {
			kept = append(kept, f)
		}
	}
	s.faults = kept
	s.mu.Unlock()
	if hit == nil {
		return false
	}
	writeError(w, hit.Status)
	return true
}

// writeError answers as the Confluent registry does: {"error_code","message"}.
func writeError(w http.ResponseWriter, status int) {
	code, msg := status, http.StatusText(status)
	switch status {
	case http.StatusConflict:
		code, msg = 409, "Schema being registered is incompatible with an earlier schema for subject (registryserver fault)"
	case http.StatusInternalServerError:
		code, msg = 50001, "Error in the backend data store (registryserver fault)"
	case http.StatusServiceUnavailable:
		code, msg = 50003, "Error while forwarding the request to the primary (registryserver fault)"
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}

func (s *server) postFault(w http.ResponseWriter, r *http.Request) {
	var f fault
	if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
		http.Error(w, "reading the fault: "+err.Error(), http.StatusBadRequest)
		return
	}
	if f.Status < 400 || f.Status > 599 {
		http.Error(w, "status must be 4xx or 5xx", http.StatusBadRequest)
		return
	}
	if f.For != "" {
		d, err := time.ParseDuration(f.For)
		if err != nil {
			http.Error(w, "for: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.until = time.Now().Add(d)
	} else if f.Count <= 0 {
		http.Error(w, `give "count" (requests) or "for" (a duration)`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.faults = append(s.faults, &f)
	s.mu.Unlock()
	s.log.Info("fault set", "status", f.Status, "count", f.Count, "for", f.For, "path", f.Path)
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) deleteFault(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) postOutage(w http.ResponseWriter, r *http.Request) {
	var o struct {
		Down *bool  `json:"down"`
		For  string `json:"for"`
	}
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, "reading the outage: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.upTimer != nil {
		s.upTimer.Stop()
		s.upTimer = nil
	}
	s.mu.Unlock()
	switch {
	case o.For != "":
		d, err := time.ParseDuration(o.For)
		if err != nil {
			http.Error(w, "for: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.down()
		s.mu.Lock()
		s.upTimer = time.AfterFunc(d, s.comeBack)
		s.mu.Unlock()
		s.log.Info("outage", "for", d)
	case o.Down != nil && *o.Down:
		s.down()
		s.log.Info("outage until told")
	case o.Down != nil:
		if err := s.up(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.log.Info("outage over")
	default:
		http.Error(w, `give "for" (a duration) or "down" (true/false)`, http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) comeBack() {
	if err := s.up(); err != nil {
		s.log.Error("ending the outage", "err", err)
		return
	}
	s.log.Info("outage over")
}

func (s *server) getStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	st := map[string]any{"down": s.regSrv == nil, "faults": len(s.faults), "requests": s.requests, "registry": "http://" + s.regAddr}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}
